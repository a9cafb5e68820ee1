//! A build without a front end's Cargo feature (`--no-default-features`)
//! still lists its command, which answers that it is not built and names
//! the feature that brings it back, before it looks for a repository.
//! Compiled only into such a build.

use crate::env::TestEnv;

#[test]
fn a_command_left_out_of_the_build_names_its_feature() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let left_out = [
        (cfg!(feature = "serve"), &["serve"][..], "serve", "serve"),
        (cfg!(feature = "mcp"), &["mcp"][..], "mcp", "mcp"),
        (
            cfg!(feature = "import-loopx"),
            &["import", "loopx"][..],
            "import",
            "import-loopx",
        ),
    ];
    for (_, args, command, feature) in left_out.into_iter().filter(|(built, ..)| !built) {
        for dir in [repo.clone(), env.path("")] {
            let out = env.loopx(&dir, args).failure(2);
            assert!(
                out.stderr.contains(&format!("built without `{command}`"))
                    && out.stderr.contains(&format!("feature `{feature}`")),
                "{}",
                out.stderr
            );
            let json = env
                .loopx(&dir, &[&["--json"][..], args].concat())
                .failure(2)
                .json();
            assert_eq!(json["error"]["code"], "invalid_input", "{json}");
        }
    }
    // The command is still listed, with its help.
    let help = env.loopx(&env.path(""), &["help", "serve"]).success();
    assert!(help.stdout.contains("dashboard"), "{}", help.stdout);
}
