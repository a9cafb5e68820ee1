//! `serve --all-repos` (issue 33): every repository in the person's list on
//! one page, in a real headless Chromium: what needs the person first, the
//! gate before anything else, a broken repository flagged in its place.

use std::time::Duration;

use serde_json::json;

use crate::env::TestEnv;
use crate::repos::three_repos;
use crate::serve::{browser, eval, text_of, Serving};

#[test]
fn every_repository_on_one_page_the_gate_first_the_corrupt_one_flagged() {
    let env = TestEnv::new();
    let [gated, throttled, corrupt, _gone] = three_repos(&env);
    let canonical = |p: &std::path::Path| std::fs::canonicalize(p).unwrap();
    let home = env.path("home");
    // Started outside any repository, serve shows every repository.
    let serving = Serving::start(&env, &home, &[]);
    let (code, served) = serving.get("/repos.json");
    assert_eq!(code, 200, "{served}");
    let mut cli = env
        .loopx(&home, &["--json", "status", "--all-repos"])
        .success()
        .json();
    // The same report as the command line's (the clock is pinned).
    cli["ok"] = json!(true);
    assert_eq!(served, cli);
    assert_eq!(
        serving.get("/dashboard.json").0,
        404,
        "one repository's routes are not served"
    );
    let explicit = Serving::start(&env, &gated, &["--all-repos"]);
    assert_eq!(explicit.get("/repos.json").1["repos"], served["repos"]);

    let Some(browser) = browser() else { return };
    browser.goto(&format!("{}/", serving.url));
    browser
        .wait_for("document.body.dataset.drawn", Duration::from_secs(20))
        .expect("the page draws");
    let needs = eval(
        &browser,
        "[...document.querySelectorAll('#needs .item')].map(n => [n.dataset.kind, n.dataset.repo])",
    );
    let path = |p: &std::path::Path| canonical(p).to_string_lossy().into_owned();
    assert_eq!(
        needs,
        json!([
            ["gate", path(&gated)],
            ["broken", path(&corrupt)],
            ["throttled", path(&throttled)]
        ]),
        "the gate first"
    );
    let first = text_of(&browser, "#needs .item");
    assert!(first.contains("Publish under MIT?"), "{first}");
    assert!(first.contains("gate resolve"), "{first}");
    let conditions = eval(
        &browser,
        "Object.fromEntries([...document.querySelectorAll('#repos .repo')].map(r => [r.dataset.path, r.dataset.condition]))",
    );
    assert_eq!(conditions[path(&gated)], "ok", "{conditions}");
    assert_eq!(conditions[path(&throttled)], "ok", "{conditions}");
    assert_eq!(conditions[path(&corrupt)], "broken", "{conditions}");
    assert_eq!(
        conditions
            .as_object()
            .unwrap()
            .values()
            .filter(|c| *c == "missing")
            .count(),
        1,
        "{conditions}"
    );
    let broken = text_of(&browser, "#repos .repo[data-condition=broken]");
    assert!(broken.contains("broken"), "{broken}");
    assert!(
        text_of(&browser, "#repos").contains("(throttled)"),
        "the throttled goal says so"
    );
}

/// Issue 47, item 5: a named pipe in one listed repository (its
/// `.git/HEAD`, its cache) leaves `/repos.json` answering, the others
/// shown, the bad ones as error rows; a read given up on is not started
/// again while it waits, so polling the page piles up no threads.
#[test]
fn a_named_pipe_in_one_listed_repository_does_not_hang_the_page() {
    let env = TestEnv::new();
    let [gated, head, cache] = crate::repos_hostile::piped(&env);
    let home = env.path("home");
    let serving = Serving::start(&env, &home, &[]);
    let condition = |served: &serde_json::Value, path: &std::path::Path| {
        let row = served["repos"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["path"] == path.to_str().unwrap())
            .unwrap_or_else(|| panic!("{} has a row: {served}", path.display()))
            .clone();
        let said = row["error"]["message"].as_str().unwrap_or("").to_owned();
        (row["condition"].as_str().unwrap().to_owned(), said)
    };
    for _ in 0..2 {
        let (code, served) = serving.get("/repos.json");
        assert_eq!(code, 200, "{served}");
        assert_eq!(condition(&served, &gated).0, "ok", "{served}");
        let (broken, said) = condition(&served, &head);
        assert_eq!(broken, "broken");
        assert!(said.contains("named pipe"), "{said}");
        let (broken, said) = condition(&served, &cache);
        assert_eq!(broken, "broken");
        assert!(said.contains("not read"), "{said}");
    }
    // Its read still waits: the repository is not read again meanwhile.
    let (_, served) = serving.get("/repos.json");
    let said = condition(&served, &cache).1;
    assert!(said.contains("not read again"), "{said}");
}
