//! Issue 48's sizes: no function in the library or the binary spans more
//! than 120 lines, and no module more than 800.
//!
//! The test reads every `.rs` file under `src/` as tokens
//! ([`crate::source::tokens`], so comments and literals are skipped) and
//! finds each `fn` item with a body: free functions, methods in impls and
//! traits, functions nested in other functions (closures have no `fn` and
//! are part of the function that holds them; a trait method without a
//! default body has nothing to count). A function's length runs from the
//! line of its `fn` keyword to the line of its closing brace, both
//! counted; a module's is its file's line count. A file whose first line
//! says `Written by scripts/…: do not edit by hand.`
//! (`src/model/leaks/vetted_table.rs`) is data a script made, not a module
//! anyone writes, and is skipped.
//!
//! Today's offenders are listed in [`KNOWN`] and [`KNOWN_MODULES`], and the
//! test fails on a change either way: an offender the lists do not name,
//! or a name in them that is no longer an offender — so the lists only
//! shrink, down to empty.

use std::collections::BTreeMap;
use std::path::Path;

use crate::source::{ident, tokens, Tok};

/// The longest a function may be, in lines.
const MAX_FUNCTION: usize = 120;
/// The longest a module may be, in lines.
const MAX_MODULE: usize = 800;

/// The functions over [`MAX_FUNCTION`] lines today, by file and name (a
/// name listed twice stands for two functions of that name in the file).
const KNOWN: &[(&str, &str)] = &[];

/// The modules over [`MAX_MODULE`] lines today.
const KNOWN_MODULES: &[&str] = &[];

/// A function item with a body.
#[derive(Debug, PartialEq)]
struct Function {
    name: String,
    /// The line of its `fn` keyword.
    line: usize,
    /// The line of its closing brace.
    end: usize,
}

impl Function {
    fn lines(&self) -> usize {
        self.end - self.line + 1
    }
}

/// Every function item with a body in a Rust source, in the order they
/// start.
fn functions(src: &str) -> Vec<Function> {
    let t = tokens(src);
    let punct = |k: usize| match t.get(k) {
        Some((Tok::Punct(c), _)) => Some(*c),
        _ => None,
    };
    let mut found = Vec::new();
    for i in 0..t.len() {
        // `fn(u8) -> u8`, a pointer type, and `fn $name` in a macro have
        // no name after the keyword.
        let (Some("fn"), Some(name)) = (ident(&t, i), ident(&t, i + 1)) else {
            continue;
        };
        // The body opens at the first `{` outside parentheses and
        // brackets (`[u8; 4]` in a signature holds a `;`); a `;` there
        // ends a declaration without a body.
        let mut nested = 0usize;
        let open = (i + 2..t.len()).find_map(|k| match punct(k) {
            Some('(' | '[') => {
                nested += 1;
                None
            }
            Some(')' | ']') => {
                nested = nested.saturating_sub(1);
                None
            }
            Some(';') if nested == 0 => Some(None),
            Some('{') if nested == 0 => Some(Some(k)),
            _ => None,
        });
        let Some(Some(open)) = open else {
            continue;
        };
        let mut depth = 0usize;
        let close = (open..t.len()).find(|&k| {
            match punct(k) {
                Some('{') => depth += 1,
                Some('}') => depth -= 1,
                _ => {}
            }
            depth == 0
        });
        let close = close.unwrap_or_else(|| panic!("fn {name}: its body never closes"));
        found.push(Function {
            name: name.to_owned(),
            line: t[i].1,
            end: t[close].1,
        });
    }
    found
}

/// Whether a file is data a script wrote rather than code to keep short.
fn generated(text: &str) -> bool {
    text.lines().next().is_some_and(|first| {
        first.contains("Written by scripts/") && first.ends_with(": do not edit by hand.")
    })
}

/// Every `.rs` file under `src/`, by its path from the crate's root, with
/// its text.
fn sources(root: &Path) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    let mut todo = vec![root.join("src")];
    while let Some(path) = todo.pop() {
        if path.is_dir() {
            todo.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            // `/` between the parts on every system, as KNOWN writes them.
            let name: Vec<_> = path
                .strip_prefix(root)
                .unwrap()
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect();
            let name = name.join("/");
            found.insert(name, text);
        }
    }
    found
}

/// How many times each item occurs.
fn counts<'a>(
    items: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> BTreeMap<(&'a str, &'a str), usize> {
    let mut counts = BTreeMap::new();
    for item in items {
        *counts.entry(item).or_default() += 1;
    }
    counts
}

#[test]
fn no_function_over_120_lines_and_no_module_over_800() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sources = sources(root);
    let mut long = Vec::new();
    let mut long_modules = Vec::new();
    let mut seen = 0;
    for (file, text) in &sources {
        if generated(text) {
            continue;
        }
        let lines = text.lines().count();
        if lines > MAX_MODULE {
            long_modules.push((file.as_str(), lines));
        }
        for f in functions(text) {
            seen += 1;
            if f.lines() > MAX_FUNCTION {
                long.push((file.as_str(), f));
            }
        }
    }
    let mut problems = Vec::new();
    let found = counts(long.iter().map(|(file, f)| (*file, f.name.as_str())));
    let known = counts(KNOWN.iter().copied());
    for (file, f) in &long {
        let listed = known.get(&(*file, f.name.as_str())).copied().unwrap_or(0);
        if listed < found[&(*file, f.name.as_str())] {
            problems.push(format!(
                "{file}:{}: fn {} is {} lines (over {MAX_FUNCTION}), and KNOWN does not list it{}",
                f.line,
                f.name,
                f.lines(),
                match listed {
                    0 => String::new(),
                    n => format!(" (it lists {n} of that name in the file)"),
                },
            ));
        }
    }
    for (&(file, name), &listed) in &known {
        let over = found.get(&(file, name)).copied().unwrap_or(0);
        if over < listed {
            problems.push(match (listed, over) {
                (1, 0) => format!(
                    "{file}: fn {name} is in KNOWN but no longer over {MAX_FUNCTION} lines: \
                     take it out of KNOWN"
                ),
                _ => format!(
                    "{file}: fn {name} is in KNOWN {listed} times but {over} function(s) of \
                     that name are over {MAX_FUNCTION} lines: take it out of KNOWN"
                ),
            });
        }
    }
    for (file, lines) in &long_modules {
        if !KNOWN_MODULES.contains(file) {
            problems.push(format!(
                "{file}: the module is {lines} lines (over {MAX_MODULE}), and KNOWN_MODULES does \
                 not list it"
            ));
        }
    }
    for file in KNOWN_MODULES {
        if !long_modules.iter().any(|(f, _)| f == file) {
            problems.push(format!(
                "{file}: the module is in KNOWN_MODULES but no longer over {MAX_MODULE} lines: \
                 take it out of KNOWN_MODULES"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
    // A scan that lost its way would find few functions, and no problem.
    assert!(seen > 1500, "the scan found only {seen} functions");
}

#[test]
fn the_scan_finds_each_kind_of_function() {
    let src = r##"
        fn free(a: [u8; 4]) -> u8 {
            let s = "fn in_a_string() {";
            let c = '{';
            // fn in_a_comment() {
            let f: fn(u8) -> u8 = |x| { x };
            fn nested() {}
            a[0]
        }
        trait T {
            fn declared(&self);
            fn default(&self) where Self: Sized {
                let _ = r#"}"#;
            }
        }
        impl S {
            pub(crate) fn method(&self) {
            }
        }
        macro_rules! m { ($n:ident) => { fn $n() {} } }
    "##;
    let found: Vec<(String, usize, usize)> = functions(src)
        .into_iter()
        .map(|f| (f.name, f.line, f.end))
        .collect();
    let want = [
        ("free", 2, 9),
        ("nested", 7, 7),
        ("default", 12, 14),
        ("method", 17, 18),
    ];
    assert_eq!(found, want.map(|(n, l, e)| (n.to_owned(), l, e)).to_vec());
    assert!(generated(
        "// Written by scripts/leak-rules.py: do not edit by hand.\nfn x() {}\n"
    ));
    assert!(!generated("//! Written by hand.\n"));
}
