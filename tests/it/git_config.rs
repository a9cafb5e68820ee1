//! `git -c key=value loopx …`: git hands the pairs to its subcommand in
//! `GIT_CONFIG_PARAMETERS`, and git-loopx reads them as git would, above
//! every file (issue 46, item 8).

use crate::env::TestEnv;

#[test]
fn git_dash_c_names_the_agent_and_the_committer() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    let todo = env.add_todo(&repo, "Write the parser");
    let claim = env
        .git_cmd(&repo)
        .args([
            "-c",
            "loopx.agent=a9",
            "loopx",
            "--json",
            "todo",
            "claim",
            &todo,
        ])
        .output()
        .unwrap();
    let claim = crate::env::Run::from(claim).success().json();
    assert_eq!(claim["claim"]["agent"], "a9", "{claim}");

    // No identity in the environment: the committer comes from config,
    // and `git -c` is above the repository's own.
    env.git(&repo, &["config", "user.name", "Repo Config"]);
    env.git(&repo, &["config", "user.email", "repo@example.com"]);
    let added = env
        .git_cmd(&repo)
        .env_remove("GIT_COMMITTER_NAME")
        .env_remove("GIT_COMMITTER_EMAIL")
        .env_remove("GIT_AUTHOR_NAME")
        .env_remove("GIT_AUTHOR_EMAIL")
        .args([
            "-c",
            "user.name=Pat Person",
            "-c",
            "user.email=pat@example.com",
            "loopx",
            "todo",
            "add",
            "Review the grammar",
        ])
        .output()
        .unwrap();
    crate::env::Run::from(added).success();
    assert_eq!(
        env.git(&repo, &["log", "-1", "--format=%cn <%ce>", "loopx-state"]),
        "Pat Person <pat@example.com>"
    );
}
