//! The docs name only what exists (issue 46, item 12): every file of the
//! repository a doc names in backquotes (`tests/it/race.rs`,
//! `scripts/….sh`), every test it names after its file (`tests/it/x.rs`
//! `a_test`, `b_test`), and every `cargo test` filter it gives selects at
//! least one test.

use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn docs() -> Vec<(String, String)> {
    let mut out = vec![(
        "README.md".to_owned(),
        std::fs::read_to_string(root().join("README.md")).unwrap(),
    )];
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            let name = format!("docs/{}", path.file_name().unwrap().to_string_lossy());
            out.push((name, std::fs::read_to_string(&path).unwrap()));
        }
    }
    out
}

/// The backquoted spans of `line`.
fn quoted(line: &str) -> Vec<&str> {
    line.split('`').skip(1).step_by(2).collect()
}

fn is_ident(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

#[test]
fn every_file_and_test_a_doc_names_exists() {
    let mut wrong = Vec::new();
    for (doc, text) in docs() {
        // A code block quotes an example (a handoff packet names its own files).
        let mut fenced = false;
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
                continue;
            }
            if fenced {
                continue;
            }
            let spans = quoted(line);
            for (i, span) in spans.iter().enumerate() {
                let is_path = ["tests/", "scripts/", "examples/", "src/", "hooks/"]
                    .iter()
                    .any(|p| span.starts_with(p))
                    && span.rsplit('/').next().is_some_and(|f| f.contains('.'))
                    && !span.contains(['*', '<', ' ']);
                if !is_path {
                    continue;
                }
                if !root().join(span).exists() {
                    wrong.push(format!("{doc}:{}: no file {span}", n + 1));
                    continue;
                }
                if !(span.starts_with("tests/it/") && span.ends_with(".rs")) {
                    continue;
                }
                // The tests named right after the file, until anything else.
                let source = std::fs::read_to_string(root().join(span)).unwrap();
                let rest = line.split(&format!("`{span}`")).nth(1).unwrap_or("");
                for name in spans[i + 1..].iter().take_while(|s| is_ident(s)) {
                    let between = rest.split(&format!("`{name}`")).next().unwrap_or("");
                    if between.contains(['|', '(', ':', ';']) {
                        break;
                    }
                    if name.len() > 8 && !source.contains(&format!("fn {name}(")) {
                        wrong.push(format!("{doc}:{}: no test {name} in {span}", n + 1));
                    }
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A `cargo test` command a doc gives with `--lib` or `--test it` and a
/// filter must run tests: its filter names a module of that target.
#[test]
fn every_cargo_test_filter_a_doc_gives_selects_tests() {
    let mut wrong = Vec::new();
    for (doc, text) in docs() {
        for (n, line) in text.lines().enumerate() {
            let Some(at) = line.find("cargo test ") else {
                continue;
            };
            let words: Vec<&str> = line[at..].split_whitespace().collect();
            let filter = |after: usize| {
                words
                    .get(after..)
                    .and_then(|w| w.iter().find(|w| !w.starts_with('-')))
                    .map(|w| w.trim_end_matches(['`', ')', ',']))
            };
            let target = words
                .iter()
                .position(|w| *w == "--lib")
                .map(|i| ("src", i + 1))
                .or_else(|| {
                    words
                        .windows(2)
                        .position(|w| w == ["--test", "it"])
                        .map(|i| ("tests/it", i + 2))
                });
            let Some((dir, after)) = target else { continue };
            let Some(filter) = filter(after) else {
                continue;
            };
            let Some(module) = filter.strip_suffix("::") else {
                continue;
            };
            let file = root().join(dir).join(format!("{module}.rs"));
            let dir_mod = root().join(dir).join(module).join("mod.rs");
            let nested = dir == "src"
                && std::process::Command::new("grep")
                    .args(["-rqs", &format!("mod {module}")])
                    .arg(root().join("src"))
                    .status()
                    .is_ok_and(|s| s.success());
            if !file.exists() && !dir_mod.exists() && !nested {
                wrong.push(format!(
                    "{doc}:{}: `{filter}` selects no test of {dir}",
                    n + 1
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The subcommands of `path` (`[]`: the top level), from its `--help`;
/// empty when it has none.
fn subcommands(path: &[&str]) -> Vec<String> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_git-loopx"))
        .args(path)
        .arg("--help")
        .env("NO_COLOR", "1")
        .output()
        .expect("git-loopx runs");
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    let Some(at) = help.find("\nCommands:\n") else {
        return Vec::new();
    };
    help[at + 11..]
        .lines()
        .take_while(|l| !l.trim().is_empty())
        // A name at two spaces; its text wraps at a deeper indent.
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// Every `git loopx …` command a doc quotes names subcommands that exist
/// (`git loopx todo claim`, not a command since renamed): the words after
/// `git loopx` and its global options, as far as the command has
/// subcommands.
#[test]
fn every_command_a_doc_names_exists() {
    const GLOBAL_WITH_VALUE: [&str; 4] = ["-C", "--agent", "--goal", "--color"];
    let mut known: std::collections::BTreeMap<Vec<String>, Vec<String>> = Default::default();
    let mut wrong = Vec::new();
    let mut checked = 0;
    for (doc, text) in docs() {
        for (n, line) in text.lines().enumerate() {
            for quoted in line.split("git loopx ").skip(1) {
                let words: Vec<&str> = quoted
                    .split(|c: char| c.is_whitespace() || c == '`')
                    .take_while(|w| !w.is_empty())
                    .collect();
                let mut words = words.into_iter().peekable();
                while let Some(w) = words.peek() {
                    if GLOBAL_WITH_VALUE.contains(w) {
                        words.next();
                        words.next();
                    } else if w.starts_with('-') {
                        words.next();
                    } else {
                        break;
                    }
                }
                let mut path: Vec<String> = Vec::new();
                for word in words {
                    let subs = known
                        .entry(path.clone())
                        .or_insert_with(|| {
                            subcommands(&path.iter().map(String::as_str).collect::<Vec<_>>())
                        })
                        .clone();
                    let word = word.trim_end_matches(['.', ',', ':', ';', ')', '"', '\'']);
                    if subs.is_empty() || word.is_empty() {
                        break;
                    }
                    // A placeholder, or prose after a bare `git loopx`.
                    if !word.bytes().all(|b| b.is_ascii_lowercase() || b == b'-') {
                        break;
                    }
                    if !subs.iter().any(|s| s == word) {
                        if path.is_empty() && !line.contains("`git loopx") {
                            break;
                        }
                        wrong.push(format!(
                            "{doc}:{}: `git loopx {} {word}`: no such command (known: {})",
                            n + 1,
                            path.join(" "),
                            subs.join(", ")
                        ));
                        break;
                    }
                    path.push(word.to_owned());
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} command words were checked");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
