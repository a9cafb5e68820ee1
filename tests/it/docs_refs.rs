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
