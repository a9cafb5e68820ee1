//! The store's ancestry walks (merge bases, is-ancestor, independent heads)
//! answer as git does, on random histories full of merges and octopus
//! merges, with dates that tie and dates that go backwards one step.

use loopx::store::{GixStore, Oid};

use crate::env::TestEnv;

/// A small deterministic generator (no dependency for one test).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n
    }
}

#[test]
fn ancestry_answers_as_git_does() {
    let env = TestEnv::new();
    let dir = env.repo("dag");
    let empty = env.git(&dir, &["hash-object", "-t", "tree", "-w", "/dev/null"]);
    for seed in 1..=4u64 {
        let mut rng = Lcg(seed);
        let mut commits: Vec<String> = Vec::new();
        let mut time = 1_700_000_000i64;
        for i in 0..80 {
            // Mostly forward in time; some ties, a few steps back.
            time += [0, 1, 5, 60, -3][rng.next(5)];
            let parents = match (commits.len(), rng.next(10)) {
                (0, _) => 0,
                (_, 0..=5) => 1,
                (_, 6..=8) => 2,
                _ => 4,
            };
            let mut args = vec![
                "commit-tree".to_owned(),
                empty.clone(),
                "-m".into(),
                format!("c{i}"),
            ];
            for _ in 0..parents {
                // Parents among the recent commits, as a fleet's are.
                let from = commits.len().saturating_sub(12);
                let p = commits[from + rng.next(commits.len() - from)].clone();
                if !args.contains(&p) {
                    args.extend(["-p".into(), p]);
                }
            }
            let date = format!("{time} +0000");
            let out = env
                .git_cmd(&dir)
                .args(&args)
                .env("GIT_COMMITTER_DATE", &date)
                .env("GIT_AUTHOR_DATE", &date)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            commits.push(String::from_utf8_lossy(&out.stdout).trim().to_owned());
        }
        let store = GixStore::discover(&dir).unwrap();
        let oid = |s: &str| Oid(s.to_owned());
        for _ in 0..60 {
            let a = &commits[rng.next(commits.len())];
            let others: Vec<&String> = (0..1 + rng.next(3))
                .map(|_| &commits[rng.next(commits.len())])
                .collect();
            // merge-base: ours is one of git's best common ancestors.
            let mut args = vec!["merge-base", "--all", a.as_str()];
            args.extend(others.iter().map(|o| o.as_str()));
            let out = env.git_cmd(&dir).args(&args).output().unwrap();
            let git_all: Vec<String> = String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .map(str::to_owned)
                .collect();
            let others_oid: Vec<Oid> = others.iter().map(|o| oid(o)).collect();
            let refs: Vec<&Oid> = others_oid.iter().collect();
            let ours = store
                .merge_base(&oid(a), &refs)
                .unwrap()
                .expect("within the walk's budget");
            match &ours {
                Some(b) => assert!(
                    git_all.contains(&b.0),
                    "seed {seed}: {a} {others:?}: ours {b}, git {git_all:?}"
                ),
                None => assert!(
                    git_all.is_empty(),
                    "seed {seed}: {a} {others:?}: git {git_all:?}"
                ),
            }
            // is-ancestor, both ways.
            let b = others[0];
            for (x, y) in [(a, b), (b, a)] {
                let git = env
                    .git_cmd(&dir)
                    .args(["merge-base", "--is-ancestor", x, y])
                    .status()
                    .unwrap()
                    .success();
                assert_eq!(
                    store.is_ancestor(&oid(x), &oid(y)).unwrap().unwrap(),
                    git,
                    "seed {seed}: {x} in {y}"
                );
            }
            // independent.
            let mut set: Vec<&String> = others.clone();
            set.push(a);
            let mut args = vec!["merge-base", "--independent"];
            args.extend(set.iter().map(|s| s.as_str()));
            let mut git: Vec<String> = env
                .git(&dir, &args)
                .split_whitespace()
                .map(str::to_owned)
                .collect();
            git.sort();
            let set_oid: Vec<Oid> = set.iter().map(|s| oid(s)).collect();
            let mut ours: Vec<String> = store
                .independent(&set_oid)
                .unwrap()
                .expect("within the walk's budget")
                .into_iter()
                .map(|o| o.0)
                .collect();
            ours.sort();
            assert_eq!(ours, git, "seed {seed}: independent {set:?}");
        }
    }
}

/// A ref as listed: name, object, committer time, trailers.
type Listed = (String, String, i64, Vec<(String, String)>);

/// The store lists refs and reads their commits' trailers as `git
/// for-each-ref <prefix>` with `%(trailers:only,unfold)` does: the same
/// refs (a name matches whole path components, loose or packed), the same
/// committer times and trailers, folded values unfolded, and nothing for a
/// ref to an object that is not a commit.
#[test]
fn refs_and_trailers_read_as_git_does() {
    let env = TestEnv::new();
    let dir = env.repo("refs");
    let empty = env.git(&dir, &["hash-object", "-t", "tree", "-w", "/dev/null"]);
    let commit = |message: &str, date: &str| {
        let out = env
            .git_cmd(&dir)
            .args(["commit-tree", &empty, "-m", message])
            .env("GIT_COMMITTER_DATE", date)
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    let leases = "refs/loopx/remotes/origin/leases/main";
    let lease = commit(
        "loopx: lease t1\n\nLoopx-Goal: main\nLoopx-Todo: t1\nLoopx-Epoch: 3",
        "1700000000 +0000",
    );
    let folded = commit(
        "loopx: lease t10\n\nsome words first\n\nLoopx-Todo: t10\nLoopx-Note: one\n  two",
        "1700000100 +0200",
    );
    let plain = commit("no trailers here", "1700000200 +0000");
    let blob = env.git(&dir, &["hash-object", "-w", "--stdin"]);
    for (name, id) in [
        (format!("{leases}/t1"), &lease),
        (format!("{leases}/t10"), &folded),
        (format!("{leases}/t1x/inner"), &plain),
        (format!("{leases}/t2"), &blob),
        ("refs/loopx/remotes/origin/leasesx/t9".to_owned(), &lease),
    ] {
        env.git(&dir, &["update-ref", &name, id]);
    }
    // Some refs packed, some loose, as a clone that ran `git pack-refs` has.
    env.git(&dir, &["pack-refs", "--all"]);
    env.git(&dir, &["update-ref", &format!("{leases}/t3"), &lease]);
    let store = GixStore::discover(&dir).unwrap();
    for prefix in [
        "refs/loopx/remotes/origin/leases/",
        "refs/loopx/remotes/origin/leases",
        &format!("{leases}/t1"),
        &format!("{leases}/t4"),
    ] {
        let out = env.git(
            &dir,
            &[
                "for-each-ref",
                "--format=%(refname)%09%(objectname)%09%(committerdate:unix)%0a%(trailers:only,unfold)%00",
                prefix,
            ],
        );
        let git: Vec<Listed> = out
            .split('\0')
            .map(|r| r.trim_start_matches('\n'))
            .filter(|r| !r.is_empty())
            .map(|record| {
                let (head, body) = record.split_once('\n').unwrap_or((record, ""));
                let f: Vec<&str> = head.split('\t').collect();
                let trailers = body
                    .lines()
                    .filter_map(|l| l.split_once(": "))
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect();
                (
                    f[0].to_owned(),
                    f[1].to_owned(),
                    f[2].parse().unwrap_or(0),
                    trailers,
                )
            })
            .collect();
        let ours: Vec<_> = store
            .refs_with_trailers(prefix)
            .unwrap()
            .into_iter()
            .map(|r| (r.name, r.commit.0, r.time, r.trailers))
            .collect();
        assert_eq!(ours, git, "refs under {prefix}");
        let names: Vec<_> = store.refs_under(prefix).unwrap();
        assert_eq!(
            names,
            git.iter()
                .map(|(n, c, ..)| (n.clone(), Oid(c.clone())))
                .collect::<Vec<_>>()
        );
    }
    assert_eq!(
        store.refs_with_trailers(&format!("{leases}/t10")).unwrap()[0].trailers,
        vec![
            ("Loopx-Todo".to_owned(), "t10".to_owned()),
            ("Loopx-Note".to_owned(), "one two".to_owned())
        ]
    );
}
