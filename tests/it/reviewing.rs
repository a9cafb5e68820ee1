//! What a reviewer reads: `review --since` over any revision, `log --todo`.

use crate::env::TestEnv;

/// `review --since` took only a ref or an id on loopx-state's first-parent
/// line: `loopx-state~2` and reflog entries were refused.
#[test]
fn review_since_takes_any_revision_git_takes() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let a = env.add_todo(&repo, "first");
    let b = env.add_todo(&repo, "second");
    let c = env.add_todo(&repo, "third");
    for rev in ["loopx-state~2", "loopx-state@{2}"] {
        let r = env
            .loopx(&repo, &["--json", "review", "--since", rev])
            .success()
            .json();
        assert_eq!(r["commits"], 2, "{rev}: {r}");
        let text = env
            .loopx(&repo, &["review", "--since", rev])
            .success()
            .stdout;
        assert!(text.contains(&b) && text.contains(&c), "{rev}: {text}");
        assert!(!text.contains(&a), "{rev}: {text}");
    }
    // A code commit is not a state commit, and says so.
    let run = env
        .loopx(&repo, &["--json", "review", "--since", "main"])
        .failure(2);
    let message = run.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("is not a state commit"), "{message}");
    let run = env
        .loopx(&repo, &["--json", "review", "--since", "no-such-rev"])
        .failure(2);
    let message = run.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("not a commit git knows"), "{message}");
}
