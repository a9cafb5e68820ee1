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
