//! The layers of STYLE.md and docs/ARCHITECTURE.md hold: no import circle
//! between the crate's modules, and no import that points up.
//!
//! The test reads the library's sources as text, starting at `src/lib.rs`
//! and following every `mod name;` (and `#[path]`) to the file that holds
//! it, so each module is named as the compiler names it (`src/ops/todo.rs`
//! and `src/ops/todo/mod.rs` are both `ops::todo`; `src/model/leaks_tests.rs`
//! is `model::leaks::tests`). Comments and literals are skipped. In each file
//! it collects every path into the crate: `crate::…`, `super::…` and
//! `self::…` paths, in `use` items (grouped `use crate::{a, b::{c, d}}`
//! forms expanded, `as` renames kept) and inline in code; a path that starts
//! with a name a `use` brought in (`use crate::ops; ops::todo::x()`) or with
//! a child module the file declares. A path belongs to the longest prefix of
//! it that is a module with its own file (`crate::ops::todo::add` is
//! `ops::todo`, `crate::ops::Context` is `ops`); the crate root re-exports
//! `error`'s types, so `crate::Result` is `error`.
//!
//! The graph has an edge from each file's module to each module it names,
//! with one exception: a module's edges to its own descendants are dropped.
//! A parent declares, re-exports and dispatches to its children: that is
//! composition, and with it every child that uses a type of its parent's
//! (`ops::Context`, `model::Todo`) would close a circle. A child's edge to
//! its parent stays, so a parent that reaches back out to a module that uses
//! its child still shows as a circle. `src/main.rs` is another crate (the
//! binary) and names only `loopx::cli`.
//!
//! Both checks run on that graph: every strongly connected set of modules is
//! a circle, reported with each of its edges and where it is written; every
//! edge that crosses layers against the rules in [`upward`] is reported
//! with its place.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::source::{ident, is, tokens, Tok};

/// A module's path from the crate root (`[]` is `src/lib.rs`).
type Module = Vec<String>;

/// A path as written: its segments (a leading `crate`, `super` or `self`
/// kept), the module it is written in, its line, and for a path of a `use`
/// item the name it brings in.
struct Written {
    segments: Vec<String>,
    here: Module,
    line: usize,
    brings: Option<String>,
}

/// What one file says: the child modules it declares (with their
/// `#[path]`), and every path in it.
#[derive(Default)]
struct Scan {
    children: Vec<(String, Option<String>)>,
    paths: Vec<Written>,
}

/// Reads the path (or `use` tree) at `i` after `prefix`, pushing each
/// whole path with the name it would bring in; returns where it ends.
fn tree(
    t: &[(Tok, usize)],
    mut i: usize,
    mut prefix: Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) -> usize {
    loop {
        if is(t, i, '{') {
            i += 1;
            while i < t.len() && !is(t, i, '}') {
                i = if is(t, i, ',') {
                    i + 1
                } else {
                    tree(t, i, prefix.clone(), out)
                };
            }
            return i + 1;
        }
        if is(t, i, '*') {
            out.push((prefix, None));
            return i + 1;
        }
        let Some(word) = ident(t, i) else {
            // `::<T>` and the like end the path.
            out.push((prefix, None));
            return i;
        };
        // `self` inside a group is the group's own prefix.
        if word != "self" || prefix.is_empty() {
            prefix.push(word.to_owned());
        }
        i += 1;
        if matches!(t.get(i), Some((Tok::Sep, _))) {
            i += 1;
            continue;
        }
        let mut brings = prefix.last().cloned();
        if ident(t, i) == Some("as") {
            brings = ident(t, i + 1).filter(|w| *w != "_").map(str::to_owned);
            i += 2;
        }
        out.push((prefix, brings));
        return i;
    }
}

/// Scans one file whose module is `module`.
fn scan(src: &str, module: &Module) -> Scan {
    let t = tokens(src);
    let mut scan = Scan::default();
    // The inline modules (`mod tests { … }`) the scan is in, with the brace
    // depth each opened at.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let (mut depth, mut i) = (0, 0);
    while i < t.len() {
        let here = || {
            module
                .iter()
                .cloned()
                .chain(inline.iter().map(|(m, _)| m.clone()))
                .collect::<Module>()
        };
        match &t[i].0 {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                depth -= 1;
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
            }
            Tok::Ident(w) if w == "mod" => {
                if let Some(name) = ident(&t, i + 1) {
                    if is(&t, i + 2, '{') {
                        inline.push((name.to_owned(), depth));
                    } else if is(&t, i + 2, ';') {
                        assert!(
                            inline.is_empty(),
                            "`mod {name};` inside an inline module of {module:?}"
                        );
                        scan.children.push((name.to_owned(), path_attribute(&t, i)));
                    }
                }
            }
            Tok::Ident(_)
                if matches!(t.get(i + 1), Some((Tok::Sep, _)))
                    && !matches!(t.get(i.wrapping_sub(1)), Some((Tok::Sep, _))) =>
            {
                let in_use = ident(&t, i.wrapping_sub(1)) == Some("use");
                let line = t[i].1;
                let mut found = Vec::new();
                let end = tree(&t, i, Vec::new(), &mut found);
                for (segments, brings) in found {
                    let brings = brings.filter(|_| in_use);
                    scan.paths.push(Written {
                        segments,
                        here: here(),
                        line,
                        brings,
                    });
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    scan
}

/// The `#[path = "…"]` among the attributes before the `mod` at `i`.
fn path_attribute(t: &[(Tok, usize)], mut i: usize) -> Option<String> {
    // Skip a visibility: `pub`, `pub(crate)`, `pub(super)`.
    let before = |i: usize| i.wrapping_sub(1);
    if is(t, before(i), ')') {
        i -= 3;
    }
    if ident(t, before(i)) == Some("pub") {
        i -= 1;
    }
    let mut found = None;
    while is(t, before(i), ']') {
        let mut open = i - 1;
        while !is(t, open, '[') {
            open -= 1;
        }
        if let (Some("path"), true, Some((Tok::Str(p), _))) =
            (ident(t, open + 1), is(t, open + 2, '='), t.get(open + 3))
        {
            found = Some(p.clone());
        }
        i = open.wrapping_sub(1);
    }
    found
}

/// Every module of the library, from `src/lib.rs` down, with its file and
/// what it says.
fn modules(src: &Path) -> BTreeMap<Module, (PathBuf, Scan)> {
    let mut found = BTreeMap::new();
    let mut queue = vec![(Module::new(), src.join("lib.rs"))];
    while let Some((module, file)) = queue.pop() {
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let scan = scan(&text, &module);
        let dir = file.parent().unwrap();
        let owns_dir = matches!(
            file.file_name().and_then(|n| n.to_str()),
            Some("lib.rs" | "mod.rs")
        );
        for (name, path) in &scan.children {
            let child = match path {
                Some(p) => dir.join(p),
                None => {
                    let base = if owns_dir {
                        dir.to_owned()
                    } else {
                        file.with_extension("")
                    };
                    let flat = base.join(format!("{name}.rs"));
                    if flat.exists() {
                        flat
                    } else {
                        base.join(name).join("mod.rs")
                    }
                }
            };
            let mut m = module.clone();
            m.push(name.clone());
            queue.push((m, child));
        }
        found.insert(module, (file, scan));
    }
    found
}

fn show(m: &[String]) -> String {
    if m.is_empty() {
        "crate".to_owned()
    } else {
        m.join("::")
    }
}

/// The edges between modules, each with the first place it is written.
fn edges(
    root: &Path,
    modules: &BTreeMap<Module, (PathBuf, Scan)>,
) -> BTreeMap<(Module, Module), String> {
    // The module of a path: the longest prefix of it with a file.
    let owner = |path: &[String]| -> Module {
        (0..=path.len())
            .rev()
            .map(|n| path[..n].to_vec())
            .find(|p| modules.contains_key(p))
            .unwrap()
    };
    let root_uses = names_brought_in(&Module::new(), &modules[&Module::new()].1);
    let mut edges = BTreeMap::new();
    for (module, (file, scan)) in modules {
        let brought = names_brought_in(module, scan);
        for w in &scan.paths {
            let Some(mut path) = absolute(w, module, scan, &brought) else {
                continue;
            };
            if let Some(target) = path.first().and_then(|first| root_uses.get(first)) {
                path.splice(..1, target.iter().cloned());
            }
            let to = owner(&path);
            if to == *module || to.starts_with(module) {
                continue;
            }
            let place = format!("{}:{}", file.strip_prefix(root).unwrap().display(), w.line);
            edges.entry((module.clone(), to)).or_insert(place);
        }
    }
    edges
}

/// The absolute path `w` names, if it is a path into the crate.
fn absolute(
    w: &Written,
    module: &Module,
    scan: &Scan,
    brought: &BTreeMap<String, Vec<String>>,
) -> Option<Vec<String>> {
    let (first, rest) = w.segments.split_first()?;
    let mut base = match first.as_str() {
        "crate" => Module::new(),
        "self" => w.here.clone(),
        "super" => {
            let mut base = w.here.clone();
            base.pop()?;
            let supers = rest.iter().take_while(|s| *s == "super").count();
            for _ in 0..supers {
                base.pop()?;
            }
            return Some(
                base.into_iter()
                    .chain(rest[supers..].iter().cloned())
                    .collect(),
            );
        }
        name if scan.children.iter().any(|(c, _)| c == name) && w.here == *module => {
            let mut base = module.clone();
            base.push(name.to_owned());
            base
        }
        name => brought.get(name)?.clone(),
    };
    base.extend(rest.iter().cloned());
    Some(base)
}

/// The names the `use` items of a file bring in, each with the absolute
/// path it stands for.
fn names_brought_in(module: &Module, scan: &Scan) -> BTreeMap<String, Vec<String>> {
    let mut brought = BTreeMap::new();
    for w in &scan.paths {
        if let (Some(name), Some(path)) = (&w.brings, absolute(w, module, scan, &BTreeMap::new())) {
            brought.insert(name.clone(), path);
        }
    }
    brought
}

/// The layers each layer may use: docs/ARCHITECTURE.md's "Allowed
/// dependency directions", which hold STYLE.md's rules (`model` uses nothing
/// outside itself, `codec` only `model`, `store` only `model` and `codec`,
/// `ops` no front end, `render` neither `cli`, `serve` nor `mcp`), and the
/// layers between the use cases and the store: `session` under everything
/// that decides, `replicate` on it, `supervise`, `install` and `import`
/// with neither a session nor a store. `error`
/// joins `model`'s refusals and `store`'s errors into the crate's error that
/// every layer above `store` returns. A layer is a module under the crate
/// root; `git_cmd` and the test-only `fuzz` and `proptests` have no list.
const MAY_USE: &[(&str, &[&str])] = &[
    (
        "cli",
        &["ops", "session", "render", "model", "serve", "mcp", "error"],
    ),
    ("serve", &["ops", "session", "render", "model", "error"]),
    ("mcp", &["ops", "session", "render", "model", "error"]),
    ("render", &["ops", "model", "codec", "error"]),
    (
        "ops",
        &[
            "session",
            "replicate",
            "install",
            "import",
            "supervise",
            "store",
            "model",
            "codec",
            "git_cmd",
            "error",
        ],
    ),
    (
        "replicate",
        &["session", "store", "model", "codec", "git_cmd", "error"],
    ),
    ("session", &["store", "model", "codec", "git_cmd", "error"]),
    ("supervise", &["model", "git_cmd", "error"]),
    ("install", &["model", "codec", "git_cmd", "error"]),
    ("import", &["model", "codec", "error"]),
    ("error", &["model", "store"]),
    ("store", &["codec", "model"]),
    ("codec", &["model"]),
    ("model", &[]),
];

/// Why an import from layer `from` to layer `to` points the wrong way, if
/// it does.
fn upward(from: &str, to: &str) -> Option<String> {
    if from == to {
        return None;
    }
    if to == "cli" {
        return Some("nothing below `cli` uses `cli`".to_owned());
    }
    let (_, may) = MAY_USE.iter().find(|(layer, _)| *layer == from)?;
    (!may.contains(&to)).then(|| match may {
        [] => format!("`{from}` uses nothing outside itself"),
        may => format!("`{from}` uses only `{}`", may.join("`, `")),
    })
}

/// The sets of modules that reach each other, each with its edges.
fn circles(edges: &BTreeMap<(Module, Module), String>) -> Vec<String> {
    let mut out: BTreeMap<Module, Vec<Module>> = BTreeMap::new();
    for (a, b) in edges.keys() {
        out.entry(a.clone()).or_default().push(b.clone());
    }
    let reach = |from: &Module| {
        let (mut seen, mut todo) = (BTreeSet::new(), vec![from.clone()]);
        while let Some(m) = todo.pop() {
            for n in out.get(&m).into_iter().flatten() {
                if seen.insert(n.clone()) {
                    todo.push(n.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&Module, BTreeSet<Module>> = out.keys().map(|m| (m, reach(m))).collect();
    let mut sets = BTreeSet::new();
    for (m, r) in &reaches {
        let set: BTreeSet<&Module> = r
            .iter()
            .filter(|n| reaches.get(n).is_some_and(|back| back.contains(*m)))
            .collect();
        if !set.is_empty() {
            sets.insert(set);
        }
    }
    sets.into_iter()
        .map(|set| {
            let names: Vec<String> = set.iter().map(|m| show(m)).collect();
            let mut text = format!("import circle between {}:", names.join(", "));
            for ((a, b), place) in edges {
                if set.contains(a) && set.contains(b) {
                    text.push_str(&format!("\n    {} → {}  ({place})", show(a), show(b)));
                }
            }
            text
        })
        .collect()
}

/// The edges between the library's modules.
fn library() -> BTreeMap<(Module, Module), String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).to_owned();
    let modules = modules(&root.join("src"));
    // Every source file is a module the walk found (the binary's root and
    // the build script aside), so no file escapes the checks.
    let mut files = vec![root.join("src")];
    let mut unread = Vec::new();
    while let Some(f) = files.pop() {
        if f.is_dir() {
            files.extend(std::fs::read_dir(&f).unwrap().map(|e| e.unwrap().path()));
        } else if f.extension().is_some_and(|e| e == "rs")
            && f != root.join("src/main.rs")
            && f != root.join("src/build.rs")
            && !modules.values().any(|(p, _)| *p == f)
        {
            unread.push(f.display().to_string());
        }
    }
    assert!(unread.is_empty(), "files no `mod` declares: {unread:?}");
    edges(&root, &modules)
}

#[test]
fn modules_import_in_no_circle_and_never_upward() {
    let edges = library();
    let mut problems = circles(&edges);
    for ((a, b), place) in &edges {
        let layer = |m: &Module| m.first().map_or("crate", String::as_str).to_owned();
        if let (false, Some(why)) = (a.is_empty(), upward(&layer(a), &layer(b))) {
            problems.push(format!(
                "import against the layers {} → {}  ({place}): {why}",
                show(a),
                show(b)
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
    // A scan that lost its way would find few edges, and no problem.
    assert!(
        edges.len() > 300,
        "the scan found only {} edges",
        edges.len()
    );
}

/// The front ends (`cli`, `mcp`, `serve`) reach the repository through
/// `ops` only (issue 48): no file of theirs names the `store` module — a
/// path through it, or a name a `use` of it brought in, as the module
/// graph has them — nor a `.store` field (a context's store,
/// `ctx.store.tip()`); `.store(…)`, a method (an atomic's), is not one.
#[test]
fn front_ends_reach_the_store_only_through_ops() {
    const FRONT_ENDS: [&str; 3] = ["cli", "mcp", "serve"];
    let front = |m: &Module| m.first().is_some_and(|l| FRONT_ENDS.contains(&l.as_str()));
    let mut problems = Vec::new();
    for ((a, b), place) in &library() {
        if front(a) && b.first().is_some_and(|l| l == "store") {
            problems.push(format!("{place}: {} names {}", show(a), show(b)));
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<PathBuf> = FRONT_ENDS
        .iter()
        .map(|l| root.join("src").join(l))
        .collect();
    let mut read = 0;
    while let Some(f) = files.pop() {
        if f.is_dir() {
            files.extend(std::fs::read_dir(&f).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        if f.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        read += 1;
        let text = std::fs::read_to_string(&f).unwrap();
        let t = tokens(&text);
        for i in 0..t.len() {
            if is(&t, i, '.') && ident(&t, i + 1) == Some("store") && !is(&t, i + 2, '(') {
                let place = format!("{}:{}", f.strip_prefix(root).unwrap().display(), t[i].1);
                problems.push(format!("{place}: a `.store` field"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "the front ends reach into the store:\n{}",
        problems.join("\n")
    );
    assert!(read > 40, "read only {read} files of the front ends");
}

#[test]
fn the_scan_reads_each_form_of_path() {
    let src = r##"
        use crate::{a::{self, b::C}, d as e};
        pub(crate) use super::f::G;
        // crate::in_a_comment::X
        /* crate::in /* a nested */ comment */
        fn x<'a>(s: &'a str) {
            let _ = ("crate::in_a_string", r#"crate::in::"raw""#, '"', '\'', '\\', crate::p::Q);
            crate::h::i::<T>(); e::j(); a::k(); std::mem::drop(1);
        }
        mod tests {
            use super::super::l;
        }
        #[cfg(test)]
        #[path = "n_tests.rs"]
        mod n;
    "##;
    let module = vec!["m".to_owned(), "o".to_owned()];
    let scan = scan(src, &module);
    let brought = names_brought_in(&module, &scan);
    let found: BTreeSet<String> = scan
        .paths
        .iter()
        .filter_map(|w| absolute(w, &module, &scan, &brought))
        .map(|p| p.join("::"))
        .collect();
    let want = [
        "a", "a::b::C", "d", "m::f::G", "p::Q", "h::i", "d::j", "a::k", "m::l",
    ];
    assert_eq!(found, want.iter().map(|s| s.to_string()).collect());
    assert_eq!(
        scan.children,
        vec![("n".to_owned(), Some("n_tests.rs".to_owned()))]
    );
}
