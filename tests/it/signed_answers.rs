//! Tier (b), tamper-evident answers (issue 45): `gate signers setup` sets
//! signing up in one command, and an answer a gate signer did not sign —
//! a plumbing commit here, or one pushed from another clone and fetched by
//! `sync` — does not count and is shown to the person as ignored, naming
//! who it claims, when and its commit, on every surface.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};

use crate::env::TestEnv;

/// Who the tests' git identity is: the name a forged answer claims.
const PERSON: &str = "Test Committer <committer@example.com>";

/// An ssh key at `~/.ssh/<name>` in the test's HOME, with `passphrase`
/// (empty: none); returns the public key file.
pub(crate) fn ssh_key(env: &TestEnv, name: &str, passphrase: &str) -> PathBuf {
    let dir = env.path("home/.ssh");
    std::fs::create_dir_all(&dir).unwrap();
    let key = dir.join(name);
    let made = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", passphrase, "-C", name, "-f"])
        .arg(&key)
        .output()
        .expect("ssh-keygen runs: these tests need openssh-client on the machine");
    assert!(made.status.success(), "{made:?}");
    key.with_extension("pub")
}

fn json_of(env: &TestEnv, repo: &Path, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    env.loopx(repo, &all).success().json()
}

#[test]
fn setup_refuses_a_key_without_a_passphrase_then_signs_the_persons_answers() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    // No key anywhere: refused, with the command that makes one.
    let none = env
        .loopx(&repo, &["--json", "gate", "signers", "setup"])
        .failure(2)
        .json();
    assert_eq!(none["error"]["code"], "invalid_input", "{none}");
    assert!(
        none["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("ssh-keygen -t ed25519-sk"),
        "{none}"
    );
    let public = ssh_key(&env, "id_ed25519", "");
    let before = env.tip(&repo);
    let refused = env
        .loopx(&repo, &["--json", "gate", "signers", "setup"])
        .failure(2)
        .json();
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("opens with no passphrase"),
        "{refused}"
    );
    assert_eq!(env.tip(&repo), before, "a refused setup wrote state");
    assert!(
        !env.git_ok(&repo, &["config", "--local", "user.signingkey"]),
        "a refused setup changed git config"
    );
    // An agent cannot set it up (nor change who answers).
    let agent = env
        .loopx(
            &repo,
            &["--json", "--agent", "a1", "gate", "signers", "setup"],
        )
        .failure(1)
        .json();
    assert_eq!(agent["error"]["code"], "person_only", "{agent}");

    let done = json_of(
        &env,
        &repo,
        &["gate", "signers", "setup", "--allow-unprotected"],
    );
    assert_eq!(done["added"], true, "{done}");
    assert_eq!(done["protection"], "none", "{done}");
    assert_eq!(
        done["key_file"],
        public.to_str().unwrap(),
        "the default key in ~/.ssh: {done}"
    );
    assert_eq!(
        done["configured"],
        json!([
            "gpg.format=ssh",
            format!("user.signingkey={}", public.display())
        ]),
        "{done}"
    );
    assert_eq!(env.git(&repo, &["config", "gpg.format"]), "ssh");
    let commit = done["commit"].as_str().unwrap();
    assert!(env
        .git(&repo, &["cat-file", "commit", commit])
        .contains("gpgsig"));
    assert!(!done["warnings"].as_array().unwrap().is_empty(), "{done}");
    // Once is enough: again, it changes nothing.
    let again = json_of(
        &env,
        &repo,
        &["gate", "signers", "setup", "--allow-unprotected"],
    );
    assert_eq!(again["added"], false, "{again}");
    assert_eq!(again["configured"], json!([]), "{again}");
    assert_eq!(env.tip(&repo), commit);

    // From now on the person's answer is signed and counts.
    let gate = json_of(&env, &repo, &["gate", "add", "Deploy?"])["gate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    env.loopx(&repo, &["gate", "resolve", &gate, "--approve"])
        .success();
    let status = json_of(&env, &repo, &["status"]);
    assert_eq!(status["answered"][0]["counts"], true, "{status}");
    assert!(status.get("ignored_answers").is_none(), "{status}");
}

/// An `ssh-agent` on a socket of its own, killed when dropped.
struct SshAgent {
    child: std::process::Child,
    socket: PathBuf,
}

impl Drop for SshAgent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn ssh_agent(env: &TestEnv) -> SshAgent {
    let socket = env.path("agent.sock");
    let child = std::process::Command::new("ssh-agent")
        .arg("-D")
        .arg("-a")
        .arg(&socket)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("ssh-agent runs");
    for _ in 0..100 {
        if socket.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    SshAgent { child, socket }
}

#[test]
fn setup_takes_a_passphrase_key_from_ssh_agent_and_says_what_still_reaches_it() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    let public = ssh_key(&env, "loopx_gates", "a long passphrase");
    let agent = ssh_agent(&env);
    // ssh-add reads the passphrase from an askpass program, as a desktop would.
    let askpass = env.path("askpass");
    env.write_script(&askpass, "#!/bin/sh\necho 'a long passphrase'\n");
    let added = std::process::Command::new("ssh-add")
        .arg(public.with_extension(""))
        .env("SSH_AUTH_SOCK", &agent.socket)
        .env("SSH_ASKPASS", &askpass)
        .env("SSH_ASKPASS_REQUIRE", "force")
        .env("DISPLAY", ":0")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(added.status.success(), "{added:?}");
    let done = env
        .loopx_cmd(&repo)
        .env("SSH_AUTH_SOCK", &agent.socket)
        .args([
            "--json",
            "gate",
            "signers",
            "setup",
            "--key",
            public.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let done = crate::env::Run::from(done).success().json();
    assert_eq!(done["protection"], "passphrase", "{done}");
    assert_eq!(done["in_ssh_agent"], true, "{done}");
    assert_eq!(done["added"], true, "{done}");
    assert!(
        done["warnings"][0].as_str().unwrap().contains("ssh-add -c"),
        "{done}"
    );
    let commit = done["commit"].as_str().unwrap();
    assert!(env
        .git(&repo, &["cat-file", "commit", commit])
        .contains("gpgsig"));
}

/// Person and agent clones of one remote, with a gate holding the agent's
/// todo and the person's key a gate signer.
fn shared_with_policy(env: &TestEnv) -> (PathBuf, PathBuf, String, String) {
    let (_remote, dirs) = env.shared_state(&["person", "agent"]);
    let (person, agent) = (dirs[0].clone(), dirs[1].clone());
    let todo = env.add_todo(&person, "Deploy to production");
    let gate = json_of(
        env,
        &person,
        &[
            "gate",
            "add",
            "May we deploy to production?",
            "--unblocks",
            &todo,
        ],
    )["gate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    ssh_key(env, "id_ed25519", "");
    env.loopx(
        &person,
        &["gate", "signers", "setup", "--allow-unprotected"],
    )
    .success();
    env.loopx(&person, &["sync"]).success();
    env.loopx(&agent, &["sync"]).success();
    (person, agent, todo, gate)
}

/// The gate file with the person's answer written into it, as a forger
/// would write it.
fn forged(env: &TestEnv, repo: &Path, gate: &str) -> (String, String) {
    let path = env.state_path_of(repo, gate);
    let text = env
        .state_file(repo, &path)
        .replace("status: open", "status: done");
    let text = format!(
        "{}\ndecision: approve\nresolved_by: {PERSON}\nresolved_at: '2026-12-01T00:00:00Z'\n",
        text.trim_end()
    );
    (path, text)
}

#[test]
fn a_forged_push_of_an_answer_is_ignored_and_every_surface_says_so() {
    let env = TestEnv::new();
    let (person, agent, todo, gate) = shared_with_policy(&env);
    // The agent's machine forges the person's answer with plumbing and
    // pushes it with plain git.
    let (path, text) = forged(&env, &agent, &gate);
    let forged_commit = env.commit_state_file(&agent, &path, &text);
    env.git(&agent, &["push", "-q", "origin", "loopx-state"]);
    env.loopx(&person, &["sync"]).success();
    assert_eq!(env.tip(&person), forged_commit, "sync took the push");

    // The gate still holds: should-run, and a claim of the todo.
    let run = json_of(&env, &person, &["--agent", "a1", "should-run"]);
    assert_eq!(run["should_run"], false, "{run}");
    let claim = env
        .loopx(
            &person,
            &["--json", "--agent", "a1", "todo", "claim", &todo],
        )
        .failure(1)
        .json();
    assert_eq!(claim["error"]["code"], "gate_open", "{claim}");

    let short = &forged_commit[..10];
    let says = |text: &str, what: &str| {
        assert!(
            text.contains("an answer not made by you"),
            "{what} does not say the answer was ignored:\n{text}"
        );
    };
    // status
    let status = json_of(&env, &person, &["status"]);
    let ignored = &status["ignored_answers"][0];
    assert_eq!(ignored["gate"], gate.as_str(), "{status}");
    assert_eq!(ignored["commit"], forged_commit.as_str(), "{status}");
    assert_eq!(ignored["resolved_by"], PERSON, "{status}");
    assert_eq!(ignored["resolved_at"], "2026-12-01T00:00:00Z", "{status}");
    assert_eq!(ignored["decision"], "approve", "{status}");
    assert_eq!(ignored["reason"], "not signed by a gate signer");
    assert_eq!(status["gates"][0]["id"], gate.as_str(), "{status}");
    let text = env.loopx(&person, &["status"]).success().stdout;
    says(&text, "status");
    assert!(
        text.contains(&format!("approve by {PERSON} at 2026-12-01T00:00:00Z")),
        "{text}"
    );
    assert!(text.contains(short), "status names the commit: {text}");
    // review
    let review = json_of(&env, &person, &["review"]);
    assert_eq!(
        review["ignored_answers"][0]["commit"],
        forged_commit.as_str(),
        "{review}"
    );
    assert_eq!(review["decisions"][0]["id"], gate.as_str(), "{review}");
    let text = env.loopx(&person, &["review"]).success().stdout;
    says(&text, "review");
    // gate list
    let list = json_of(&env, &person, &["gate", "list"]);
    assert_eq!(list["gates"][0]["id"], gate.as_str(), "{list}");
    assert_eq!(list["gates"][0]["resolution_not_signed"], true, "{list}");
    let text = env.loopx(&person, &["gate", "list"]).success().stdout;
    says(&text, "gate list");
    // log: the forged commit is marked
    let log = json_of(&env, &person, &["log", "-n", "3"]);
    assert_eq!(log["entries"][0]["commit"], forged_commit.as_str());
    assert_eq!(
        log["entries"][0]["ignored_answers"][0]["gate"],
        gate.as_str(),
        "{log}"
    );
    let text = env.loopx(&person, &["log", "-n", "3"]).success().stdout;
    says(&text, "log");
    // diff of the forged commit
    let diff = json_of(&env, &person, &["diff", &forged_commit]);
    assert_eq!(diff["ignored_answers"][0]["gate"], gate.as_str(), "{diff}");
    let text = env
        .loopx(&person, &["diff", &forged_commit])
        .success()
        .stdout;
    says(&text, "diff");
    // doctor, and doctor --rev of the commit
    let doctor = json_of(&env, &person, &["doctor"]);
    let check = doctor["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "gate answers")
        .unwrap_or_else(|| panic!("no gate answers check: {doctor}"));
    assert_eq!(check["level"], "warn", "{check}");
    says(check["detail"].as_str().unwrap(), "doctor");
    let rev = json_of(&env, &person, &["doctor", "--rev", &forged_commit]);
    let problem = rev["problems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["path"] == path.as_str())
        .unwrap_or_else(|| panic!("doctor --rev names no problem in {path}: {rev}"));
    assert_eq!(problem["field"], "decision", "{problem}");
    says(problem["message"].as_str().unwrap(), "doctor --rev");
    #[cfg(feature = "serve")]
    dashboard_says(&env, &person, &gate, &forged_commit, short);

    // The person's own answer counts, and nothing is ignored any more.
    env.loopx(&person, &["gate", "resolve", &gate, "--approve"])
        .success();
    let status = json_of(&env, &person, &["status"]);
    assert!(status.get("ignored_answers").is_none(), "{status}");
    assert_eq!(status["answered"][0]["counts"], true, "{status}");
    env.loopx(&person, &["--agent", "a1", "todo", "claim", &todo])
        .success();
}

/// The dashboard, as JSON and on the page in real Chromium, names the
/// ignored answer under its gate.
#[cfg(feature = "serve")]
fn dashboard_says(env: &TestEnv, person: &Path, gate: &str, forged_commit: &str, short: &str) {
    let serving = crate::serve::Serving::start(env, person, &[]);
    let (_, board) = serving.get("/dashboard.json");
    assert_eq!(
        board["needs_you"][0]["ignored_answer"]["commit"], forged_commit,
        "{board}"
    );
    if let Some(browser) = crate::serve::browser() {
        let key = serving.key.clone().unwrap_or_default();
        browser.goto(&format!("{}/?key={key}", serving.url));
        let drawn = format!("document.body.dataset.drawn === {}", json!(forged_commit));
        browser
            .wait_for(&drawn, Duration::from_secs(20))
            .expect("the page draws");
        let shown = crate::serve::text_of(
            &browser,
            &format!("#needs .item[data-id={gate}] [data-test=ignored]"),
        );
        assert!(shown.contains("an answer not made by you"), "{shown}");
        assert!(shown.contains(PERSON) && shown.contains(short), "{shown}");
    }
    drop(serving);
}
