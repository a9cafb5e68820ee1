//! Every option and positional of every subcommand says what it is for.

use clap::CommandFactory;

use super::Cli;

/// The args of `cmd` and of all its subcommands (by path) that have no help.
fn missing_help(cmd: &clap::Command, path: &str, out: &mut Vec<String>) {
    for arg in cmd.get_arguments() {
        let id = arg.get_id().as_str();
        if matches!(id, "help" | "version") || arg.is_hide_set() {
            continue;
        }
        if arg.get_help().is_none() && arg.get_long_help().is_none() {
            out.push(format!("{path} {id}"));
        }
    }
    for sub in cmd.get_subcommands() {
        missing_help(sub, &format!("{path} {}", sub.get_name()), out);
    }
}

#[test]
fn every_option_and_positional_has_help() {
    let mut cmd = Cli::command();
    cmd.build();
    let mut missing = Vec::new();
    missing_help(&cmd, "git loopx", &mut missing);
    assert!(
        missing.is_empty(),
        "args without help text:\n  {}",
        missing.join("\n  ")
    );
}

#[test]
fn every_subcommand_has_about() {
    fn walk(cmd: &clap::Command, path: &str, out: &mut Vec<String>) {
        for sub in cmd.get_subcommands() {
            let path = format!("{path} {}", sub.get_name());
            if sub.get_name() != "help" && sub.get_about().is_none() {
                out.push(path.clone());
            }
            walk(sub, &path, out);
        }
    }
    let mut cmd = Cli::command();
    cmd.build();
    let mut missing = Vec::new();
    walk(&cmd, "git loopx", &mut missing);
    assert!(
        missing.is_empty(),
        "subcommands without about:\n  {}",
        missing.join("\n  ")
    );
}
