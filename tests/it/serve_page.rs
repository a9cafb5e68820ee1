//! The dashboard's page beyond what it shows: whose work its chart counts,
//! agents' colours across redraws and page loads, and the page on a phone
//! 400 pixels wide, in a real headless Chromium (skipped as in `serve.rs`
//! when there is none).

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};

use crate::env::TestEnv;
use crate::serve::{browser, eval, fixture, phone, Serving};
use crate::webdriver::Browser;

fn id_of(run: crate::env::Run, key: &str) -> String {
    run.success().json()[key]["id"].as_str().unwrap().to_owned()
}

/// Loads the page and waits until it has drawn the tip of `dir`.
fn load(browser: &Browser, env: &TestEnv, serving: &Serving, dir: &std::path::Path) {
    browser.goto(&format!("{}/", serving.url));
    let drawn = format!("document.body.dataset.drawn === {}", json!(env.tip(dir)));
    browser
        .wait_for(&drawn, Duration::from_secs(20))
        .expect("the page draws the tip");
}

#[test]
fn a_persons_gate_answer_is_not_counted_as_an_agents_work() {
    let env = TestEnv::new();
    let dir = env.state_repo("repo");
    let todo = env.add_todo(&dir, "Write the lexer");
    let gate = id_of(
        env.loopx(
            &dir,
            &["--json", "gate", "add", "Ship it?", "--unblocks", &todo],
        ),
        "gate",
    );
    env.loopx(
        &dir,
        &["gate", "resolve", &gate, "--approve", "--note", "yes"],
    )
    .success();
    let agent = ["--agent", "agent-a"];
    env.loopx(&dir, &[&agent[..], &["todo", "claim", &todo]].concat())
        .success();
    env.loopx(
        &dir,
        &[
            &agent[..],
            &[
                "writeback",
                "--todo",
                &todo,
                "--outcome",
                "outcome_progress",
                "--summary",
                "Numbers",
            ],
        ]
        .concat(),
    )
    .success();
    let serving = Serving::start(&env, &dir, &[]);
    let (status, board) = serving.get("/dashboard.json");
    assert_eq!(status, 200, "{board}");
    let series: Vec<(String, u64, u64)> = board["activity"]["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let sum = |key: &str| {
                s[key]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(Value::as_u64)
                    .sum()
            };
            (
                s["agent"].as_str().unwrap().to_owned(),
                sum("writebacks"),
                sum("done"),
            )
        })
        .collect();
    assert_eq!(
        series,
        [("agent-a".to_owned(), 1, 0)],
        "the gate's answer is the person's, not work of an agent"
    );
}

/// Each agent's colour in the chart's legend, as the page computes it.
fn legend_colours(browser: &Browser) -> Value {
    eval(
        browser,
        "Object.fromEntries([...document.querySelectorAll('.legend span[data-agent]')]
           .map(s => [s.dataset.agent, getComputedStyle(s.querySelector('i')).backgroundColor]))",
    )
}

#[test]
fn an_agents_colour_stays_the_same_as_agents_come_and_across_page_loads() {
    let Some(browser) = browser() else {
        return;
    };
    let env = TestEnv::new();
    let f = fixture(&env);
    let serving = Serving::start(&env, &f.dir, &[]);
    load(&browser, &env, &serving, &f.dir);
    let before = legend_colours(&browser);
    assert_ne!(before["agent-a"], before["agent-b"], "{before}");

    // An agent whose name sorts before the others starts writing back.
    let todo = env.add_todo(&f.dir, "Write the tests");
    let by = ["--agent", "aardvark"];
    // Where agents are registered, a new one registers to join.
    env.loopx(&f.dir, &["agent", "register", "aardvark"])
        .success();
    env.loopx(&f.dir, &[&by[..], &["todo", "claim", &todo]].concat())
        .success();
    env.loopx(
        &f.dir,
        &[
            &by[..],
            &[
                "writeback",
                "--todo",
                &todo,
                "--outcome",
                "outcome_progress",
                "--summary",
                "A first test",
            ],
        ]
        .concat(),
    )
    .success();
    browser
        .wait_for(
            "!!document.querySelector('.legend span[data-agent=aardvark]')",
            Duration::from_secs(20),
        )
        .expect("the new agent is drawn");
    let after = legend_colours(&browser);
    for agent in ["agent-a", "agent-b"] {
        assert_eq!(
            after[agent], before[agent],
            "{agent}: {before} then {after}"
        );
        assert_ne!(after["aardvark"], after[agent], "{after}");
    }
    // The same colour in the bars and in the agents' table.
    let elsewhere = eval(
        &browser,
        "[...document.querySelectorAll('svg[data-test=activity] rect[data-agent], #agents tr[data-agent] i.swatch')]
           .map(e => [e.dataset.agent || e.closest('tr').dataset.agent,
                      e.tagName === 'rect' ? getComputedStyle(e).fill : getComputedStyle(e).backgroundColor])",
    );
    for pair in elsewhere.as_array().unwrap() {
        let agent = pair[0].as_str().unwrap();
        assert_eq!(pair[1], after[agent], "{agent}: {elsewhere}");
    }
    // And the same on a fresh page.
    load(&browser, &env, &serving, &f.dir);
    assert_eq!(legend_colours(&browser), after);
}

#[test]
fn the_page_fits_a_phone_400_pixels_wide() {
    let Some(browser) = phone(400, 900) else {
        return;
    };
    let env = TestEnv::new();
    let f = fixture(&env);
    let serving = Serving::start(&env, &f.dir, &[]);
    load(&browser, &env, &serving, &f.dir);
    assert_eq!(
        eval(
            &browser,
            "document.querySelector('meta[name=viewport]').content"
        ),
        "width=device-width, initial-scale=1"
    );
    // A page wider than the screen widens the phone's layout viewport
    // (`innerWidth`) to fit it.
    let width = eval(
        &browser,
        "[document.documentElement.scrollWidth, window.innerWidth]",
    );
    let sticking_out = eval(
        &browser,
        "[...document.querySelectorAll('body *')]
           .filter(e => e.getBoundingClientRect().right > 400.5)
           .map(e => `${e.tagName.toLowerCase()}.${e.getAttribute('class') || ''} to ${Math.round(e.getBoundingClientRect().right)} px`)
           .slice(0, 10)",
    );
    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dashboard-400.png");
    browser.screenshot(&shot);
    assert_eq!(
        width,
        json!([400, 400]),
        "[page width, viewport width] on a 400 px screen; wider than it: {sticking_out}"
    );
    assert_eq!(sticking_out, json!([]), "nothing is wider than the screen");
    // Each board column is readable: the columns stack instead of
    // squeezing seven into 400 px.
    let narrowest = eval(
        &browser,
        "Math.min(...[...document.querySelectorAll('.board .col')].map(c => c.getBoundingClientRect().width))",
    );
    assert!(
        narrowest.as_f64().is_some_and(|w| w >= 300.0),
        "a board column is {narrowest} px wide"
    );
}
