//! Issue 16, point 3: a writeback's `--artifact` is any revision naming a
//! commit of this repository, stored as the full id; evidence outside git is
//! an `--artifact-url`, kept beside the commits.

use std::path::Path;

use crate::env::{Run, TestEnv};

fn writeback(env: &TestEnv, repo: &Path, todo: &str, extra: &[&str]) -> Run {
    let mut args = vec![
        "--json",
        "--agent",
        "agent-a",
        "writeback",
        "--todo",
        todo,
        "--outcome",
        "outcome_progress",
        "--summary",
        "did it",
    ];
    args.extend_from_slice(extra);
    env.loopx(repo, &args)
}

#[test]
fn an_artifact_is_any_revision_and_is_stored_as_the_full_commit_id() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let t = env.add_todo(&repo, "work");
    let head = env.git(&repo, &["rev-parse", "HEAD"]);
    env.git(&repo, &["branch", "feature"]);
    for rev in ["HEAD", "feature", &head[..7], &head[..12], &head] {
        let j = writeback(&env, &repo, &t, &["--artifact", rev])
            .success()
            .json();
        assert_eq!(j["run"]["artifacts"][0], head.as_str(), "{rev}");
    }
}

#[test]
fn an_artifact_that_is_not_a_commit_here_is_refused() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let t = env.add_todo(&repo, "work");
    let tree = env.git(&repo, &["rev-parse", "HEAD^{tree}"]);
    for rev in [
        "0123456789abcdef0123456789abcdef01234567",
        "no-such-branch",
        tree.as_str(),
        "--all",
    ] {
        // `--artifact=--all`: a value that looks like an option reaches git
        // as a revision and is refused, never read as an option.
        let j = writeback(&env, &repo, &t, &[&format!("--artifact={rev}")])
            .failure(2)
            .json();
        assert_eq!(j["error"]["code"], "invalid_input", "{rev}");
        let message = j["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("--artifact `{rev}` is not a commit")),
            "{message}"
        );
        assert!(
            j["error"]["hint"]
                .as_str()
                .unwrap()
                .contains("--artifact-url"),
            "{j}"
        );
    }
    let history = env
        .loopx(&repo, &["--json", "history", "--kind", "writeback"])
        .success()
        .json();
    assert!(history["runs"].as_array().unwrap().is_empty());
}

#[test]
fn an_artifact_url_is_recorded_beside_the_commits_and_shown() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let t = env.add_todo(&repo, "work");
    let url = "https://ci.example.com/builds/42";
    let j = writeback(
        &env,
        &repo,
        &t,
        &["--artifact", "HEAD", "--artifact-url", url],
    )
    .success()
    .json();
    assert_eq!(j["run"]["artifact_urls"][0], url);
    let run_id = j["run"]["id"].as_str().unwrap();
    let yaml = env.state_file(&repo, &env.state_path_of(&repo, run_id));
    assert!(
        yaml.contains(&format!("artifact_urls:\n  - {url}")),
        "{yaml}"
    );
    let review = env.loopx(&repo, &["review"]).success();
    assert!(review.stdout.contains(url), "{}", review.stdout);
    let diff = env.loopx(&repo, &["diff"]).success();
    assert!(diff.stdout.contains(url), "{}", diff.stdout);
    for bad in ["not a url", "ci.example.com/builds/42", "https://"] {
        let j = writeback(&env, &repo, &t, &["--artifact-url", bad])
            .failure(2)
            .json();
        assert_eq!(j["error"]["code"], "invalid_input", "{bad}");
    }
}
