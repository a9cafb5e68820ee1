//! Help where git users look (issue 16, points 8 and 9): shell completions,
//! manual pages `git loopx --help` finds, and colour on a terminal only.

use std::path::Path;

use crate::env::{Run, TestEnv};

const ESC: char = '\x1b';

/// Runs `body` in bash with the bash completion script loaded, and returns
/// what it printed.
fn bash_with_completions(env: &TestEnv, body: &str) -> String {
    let script = env.path("git-loopx.bash");
    let out = env.loopx(&env.path(""), &["completions", "bash"]).success();
    std::fs::write(&script, &out.stdout).unwrap();
    let run: Run = env
        .command(Path::new("bash"), &env.path(""))
        .arg("-c")
        .arg(format!("source '{}'\n{body}", script.display()))
        .output()
        .expect("bash runs")
        .into();
    run.success().stdout
}

#[test]
fn completions_for_each_shell_name_the_commands() {
    let env = TestEnv::new();
    for shell in ["bash", "zsh", "fish"] {
        let out = env.loopx(&env.path(""), &["completions", shell]).success();
        for word in ["todo", "should-run", "install-man", "color"] {
            assert!(
                out.stdout.contains(word),
                "{shell} completions lack `{word}`:\n{}",
                out.stdout
            );
        }
    }
    let json = env
        .loopx(&env.path(""), &["completions", "fish", "--json"])
        .success()
        .json();
    assert_eq!(json["shell"], "fish");
    assert!(json["script"]
        .as_str()
        .unwrap()
        .contains("complete -c git-loopx"));

    let bad = env
        .loopx(&env.path(""), &["completions", "tcsh"])
        .failure(2);
    assert!(bad.stderr.contains("tcsh"), "{}", bad.stderr);
}

#[test]
fn bash_script_parses_and_completes_git_loopx_and_git_space_loopx() {
    let env = TestEnv::new();
    let script = env.path("syntax.bash");
    let out = env.loopx(&env.path(""), &["completions", "bash"]).success();
    std::fs::write(&script, &out.stdout).unwrap();
    let check: Run = env
        .command(Path::new("bash"), &env.path(""))
        .arg("-n")
        .arg(&script)
        .output()
        .expect("bash runs")
        .into();
    check.success();

    // `git-loopx todo <TAB>`, as bash calls the registered function.
    let direct = bash_with_completions(
        &env,
        r#"f=$(complete -p git-loopx | sed 's/.*-F \([^ ]*\) .*/\1/')
COMP_WORDS=(git-loopx todo ""); COMP_CWORD=2
"$f" git-loopx "" todo; echo "${COMPREPLY[*]}""#,
    );
    for sub in ["add", "next", "handoff"] {
        assert!(direct.contains(sub), "git-loopx todo <TAB>: {direct}");
    }

    // `git -C . loopx should-run --t<TAB>`, as git's bash completion calls
    // `_git_loopx`: the line in `words`/`cword`, `loopx` at `__git_cmd_idx`.
    let via_git = bash_with_completions(
        &env,
        r#"words=(git -C . loopx should-run --t); cword=5; __git_cmd_idx=3
cur=--t; prev=should-run
_git_loopx; echo "${COMPREPLY[*]}""#,
    );
    assert_eq!(via_git.trim(), "--turn");
    let top = bash_with_completions(
        &env,
        r#"words=(git loopx sta); cword=2; __git_cmd_idx=1
_git_loopx; echo "${COMPREPLY[*]}""#,
    );
    assert_eq!(top.trim(), "status");
}

fn page(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The first roff request that is not the preamble's string definitions
/// (`.ie`/`.el`) is `.TH <title> 1`, and every line is a request or text.
fn assert_man_page(roff: &str, title: &str) {
    let first = roff
        .lines()
        .find(|l| !l.starts_with(".ie ") && !l.starts_with(".el "))
        .unwrap_or_default();
    assert!(
        first.starts_with(&format!(".TH {title} 1 ")),
        "not a man page titled {title}:\n{roff}"
    );
    assert!(roff.contains("\n.SH NAME\n") && roff.contains("\n.SH SYNOPSIS\n"));
}

#[test]
fn install_man_writes_pages_for_every_command_and_never_clobbers() {
    let env = TestEnv::new();
    let dir = env.path("prefix/share/man/man1");
    let run = env
        .loopx(
            &env.path(""),
            &["install-man", "--dir", dir.to_str().unwrap()],
        )
        .success();
    let main = page(&dir, "git-loopx.1");
    assert_man_page(&main, "git-loopx");
    let subcommands = &main[main.find("\n.SH SUBCOMMANDS\n").expect("lists subcommands")..];
    for sub in [
        "git\\-loopx\\-todo(1)",
        "git\\-loopx\\-should\\-run(1)",
        "git\\-loopx\\-status(1)",
    ] {
        assert!(subcommands.contains(sub), "{sub} not listed:\n{main}");
    }
    assert_man_page(&page(&dir, "git-loopx-todo.1"), "git-loopx-todo");
    let add = page(&dir, "git-loopx-todo-add.1");
    assert_man_page(&add, "git-loopx-todo-add");
    assert!(add.contains("\\-\\-validate"), "{add}");
    // Not on MANPATH, and PATH has no prefix/bin: says how to add it.
    assert!(
        run.stdout.contains(&format!(
            "export MANPATH=\"{}:$MANPATH\"",
            env.path("prefix/share/man").display()
        )),
        "{}",
        run.stdout
    );

    // Again: nothing changes. With prefix/bin on PATH, man finds the pages.
    let path = format!(
        "{}:{}",
        env.path("prefix/bin").display(),
        crate::env::path_with_loopx().to_str().unwrap()
    );
    let again = env
        .loopx_cmd(&env.path(""))
        .env("PATH", &path)
        .args(["--json", "install-man", "--dir", dir.to_str().unwrap()])
        .output()
        .unwrap();
    let again = Run::from(again).success().json();
    assert_eq!(again["written"], 0);
    assert!(again["manpath_needed"].is_null(), "{again}");
    assert!(again["pages"].as_array().unwrap().len() > 20);

    // A file of the user's is not replaced, and nothing else is written.
    let fresh = env.path("other/man1");
    std::fs::create_dir_all(&fresh).unwrap();
    std::fs::write(fresh.join("git-loopx-log.1"), "my notes\n").unwrap();
    let refused = env
        .loopx(
            &env.path(""),
            &["install-man", "--dir", fresh.to_str().unwrap()],
        )
        .failure(2);
    assert!(
        refused.stderr.contains("git-loopx-log.1"),
        "{}",
        refused.stderr
    );
    assert!(refused.stderr.contains("--force"), "{}", refused.stderr);
    assert_eq!(page(&fresh, "git-loopx-log.1"), "my notes\n");
    assert!(!fresh.join("git-loopx.1").exists());
    env.loopx(
        &env.path(""),
        &["install-man", "--dir", fresh.to_str().unwrap(), "--force"],
    )
    .success();
    assert_man_page(&page(&fresh, "git-loopx-log.1"), "git-loopx-log");
}

/// A repository with an open gate whose question tries to clear the screen.
fn hostile_gate(env: &TestEnv) -> std::path::PathBuf {
    let repo = env.state_repo("r");
    env.loopx(&repo, &["gate", "add", "Ship it? \x1b[2J"])
        .success();
    repo
}

#[test]
fn colour_only_when_asked_or_on_a_terminal_and_state_text_stays_escaped() {
    let env = TestEnv::new();
    let repo = hostile_gate(&env);

    // Not a terminal (tests): no colour, escaped state text.
    let plain = env.loopx(&repo, &["status"]).success();
    assert!(!plain.stdout.contains(ESC), "{:?}", plain.stdout);
    assert!(plain.stdout.contains("Needs you:\n"));
    assert!(plain.stdout.contains("Ship it? \\u{1b}[2J"));

    // --color always wins, also over NO_COLOR: our heading is coloured,
    // the gate's escape is still shown as text.
    let run = Run::from(
        env.loopx_cmd(&repo)
            .env("NO_COLOR", "1")
            .args(["status", "--color", "always"])
            .output()
            .unwrap(),
    )
    .success();
    assert!(
        run.stdout.contains("\x1b[1m\x1b[33mNeeds you:\x1b[0m\n"),
        "{:?}",
        run.stdout
    );
    assert!(
        run.stdout.contains("Ship it? \\u{1b}[2J"),
        "{:?}",
        run.stdout
    );
    assert!(!run.stdout.contains("\x1b[2J"));

    // An error: the prefix red, the id from the command line escaped.
    let err = env
        .loopx(&repo, &["--color=always", "todo", "show", "x\x1b]0;t\x07"])
        .failure(2);
    assert!(
        err.stderr
            .starts_with("\x1b[1m\x1b[31merror[invalid_input]:\x1b[0m "),
        "{:?}",
        err.stderr
    );
    assert!(err.stderr.contains("\\u{1b}]0;t\\u{7}"), "{:?}", err.stderr);
    assert_eq!(err.stderr.matches(ESC).count(), 3, "{:?}", err.stderr);

    // --color never, and JSON, never colour.
    let never = env.loopx(&repo, &["status", "--color", "never"]).success();
    assert!(!never.stdout.contains(ESC));
    let json = env
        .loopx(&repo, &["status", "--json", "--color", "always"])
        .success();
    assert!(!json.stdout.contains(ESC));
    json.json();
}

/// Runs `git-loopx args` with a terminal as stdout and stderr, through
/// util-linux `script`; None where `script` is missing.
fn on_a_terminal(env: &TestEnv, repo: &Path, no_color: Option<&str>, args: &str) -> Option<String> {
    let mut cmd = env.command(Path::new("script"), repo);
    cmd.args(["-qec", &format!("git-loopx {args}"), "/dev/null"])
        .env("TERM", "xterm");
    if let Some(value) = no_color {
        cmd.env("NO_COLOR", value);
    }
    match cmd.output() {
        Ok(out) => Some(String::from_utf8_lossy(&out.stdout).into_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => panic!("script: {e}"),
    }
}

#[test]
fn auto_colours_a_terminal_unless_no_color_is_set() {
    let env = TestEnv::new();
    let repo = hostile_gate(&env);
    let Some(tty) = on_a_terminal(&env, &repo, None, "status") else {
        crate::require::skip(
            "LOOPX_REQUIRE_SCRIPT",
            "no `script` program (util-linux): terminal colour not checked here",
        );
        return;
    };
    assert!(tty.contains("\x1b[1m\x1b[33mNeeds you:"), "{tty:?}");
    assert!(!tty.contains("\x1b[2J"), "{tty:?}");
    let empty = on_a_terminal(&env, &repo, Some(""), "status").unwrap();
    assert!(empty.contains("\x1b[1m\x1b[33mNeeds you:"), "{empty:?}");
    let off = on_a_terminal(&env, &repo, Some("1"), "status --color auto").unwrap();
    assert!(off.contains("Needs you:") && !off.contains(ESC), "{off:?}");
    let never = on_a_terminal(&env, &repo, None, "--color never status").unwrap();
    assert!(
        never.contains("Needs you:") && !never.contains(ESC),
        "{never:?}"
    );
}
