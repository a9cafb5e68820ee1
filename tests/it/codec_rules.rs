//! The codec (`codec`) on files built in memory: unknown fields kept,
//! refusals that name the file and field, size and nesting limits, the
//! run layout, and redaction.

use loopx::codec::*;
use loopx::model::*;
use loopx::model::{Priority, Role, Timestamp, TodoClass};
use std::collections::BTreeMap;

const GOAL: &str = "id: main\nobjective: 'yes'\nstatus: active\nquota:\n  compute: 0.5\n  window_hours: 24\n  slot_minutes: 1\n  future_knob: 3\ncreated_at: '2026-12-02T10:00:00Z'\nupdated_at: '2026-12-02T10:00:00Z'\nrev: 4\nowner:\n  name: Ada\n  teams:\n    - core\nzz_flag: true\n";

#[test]
fn unknown_fields_round_trip_byte_identical() {
    let goal: Goal = decode("goals/main/goal.yaml", GOAL.as_bytes()).unwrap();
    assert_eq!(goal.objective, "yes");
    assert_eq!(goal.quota.extra["future_knob"], 3);
    assert!(goal.extra.contains_key("owner"));
    assert_eq!(String::from_utf8(encode(&goal)).unwrap(), GOAL);
}

#[test]
fn wrong_types_name_the_field() {
    let bad = GOAL.replace("rev: 4", "rev: four");
    let e = decode::<Goal>("goals/main/goal.yaml", bad.as_bytes()).unwrap_err();
    assert_eq!(e.path, "goals/main/goal.yaml");
    assert!(e.message.contains("rev"), "{}", e.message);
    let bad = GOAL.replace("window_hours: 24", "window_hours: lots");
    let e = decode::<Goal>("goals/main/goal.yaml", bad.as_bytes()).unwrap_err();
    assert!(e.message.contains("window_hours"), "{}", e.message);
}

/// Enough todos to parse on several threads: the state is the same, and
/// of two bad files the first in path order is the one reported.
#[test]
fn large_states_parse_alike_and_report_the_first_bad_file() {
    let now = Timestamp::from_unix(1_800_000_000);
    let mut state = State::with_goal(Goal::new("main", "o", now), now);
    let gs = state.goals.get_mut("main").unwrap();
    for i in 0..1_200u32 {
        let id = ids::derive_id("todo_", &[&i.to_string()]);
        let todo = Todo::new(
            id.clone(),
            "main",
            &format!("task {i}"),
            Role::Agent,
            TodoClass::AdvancementTask,
            Priority::P2,
            None,
            now,
        );
        gs.todos.insert(id, todo);
    }
    state.clean();
    let mut files = encode_state(&state);
    let read = |files: &BTreeMap<String, Vec<u8>>| {
        decode_state(files.iter().map(|(p, b)| (p.as_str(), b.as_slice())))
    };
    assert_eq!(read(&files).unwrap(), state);
    let todo_paths: Vec<String> = files
        .keys()
        .filter(|p| p.contains("/todos/"))
        .cloned()
        .collect();
    let (early, late) = (&todo_paths[40], &todo_paths[1_100]);
    for path in [late, early] {
        files.insert(path.clone(), b"id: [not, a, todo]\n".to_vec());
    }
    assert_eq!(read(&files).unwrap_err().path, *early);
}

#[test]
fn huge_files_are_refused() {
    let huge = format!("{GOAL}pad: '{}'\n", "x".repeat(MAX_FILE_BYTES));
    let e = decode::<Goal>("goals/main/goal.yaml", huge.as_bytes()).unwrap_err();
    assert!(e.message.contains("more than"), "{}", e.message);
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let deep = format!("{GOAL}deep: {}{}\n", "[".repeat(10_000), "]".repeat(10_000));
    assert!(decode::<Goal>("goals/main/goal.yaml", deep.as_bytes()).is_err());
}

#[test]
fn hostile_nesting_is_refused_before_parsing_and_quickly() {
    // A hang detector, not a timing test: the check is linear
    // (microseconds), and a parse of these files once took tens of seconds.
    let limit = std::time::Duration::from_secs(10);
    let refused = crate::env::within(limit, || {
        let deep = format!("{GOAL}deep: {}\n", "[".repeat(100_000));
        decode::<Goal>("goals/main/goal.yaml", deep.as_bytes()).unwrap_err()
    });
    let e = refused.expect("100,000 open brackets refused within 10 s");
    assert!(e.message.contains("unclosed"), "{}", e.message);
    // The most nesting allowed still parses (to an error) in bounded time.
    for open in ["[", "{"] {
        let parsed = crate::env::within(limit, move || {
            let at_limit = format!("{GOAL}deep: {}\n", open.repeat(MAX_FLOW_NESTING));
            decode::<Goal>("goals/main/goal.yaml", at_limit.as_bytes()).is_err()
        });
        assert_eq!(
            parsed,
            Some(true),
            "{open} at the limit: an error within 10 s"
        );
    }
}

/// A state with one run, and its files.
fn with_run() -> (State, Run, BTreeMap<String, Vec<u8>>) {
    let now = Timestamp::from_unix(1_800_000_000);
    let mut state = State::with_goal(Goal::new("main", "o", now), now);
    let run = Run::new(
        "run_ab0123456789".into(),
        loopx::model::RunKind::Turn,
        "main",
        Some("a1"),
        now,
    );
    let gs = state.goals.get_mut("main").unwrap();
    gs.runs.insert(run.id.clone(), run.clone());
    state.clean();
    let files = encode_state(&state);
    (state, run, files)
}

fn read(files: &BTreeMap<String, Vec<u8>>) -> Result<State, Error> {
    decode_state(files.iter().map(|(p, b)| (p.as_str(), b.as_slice())))
}

/// Moves the file at `from` to `to`.
fn moved(files: &BTreeMap<String, Vec<u8>>, from: &str, to: &str) -> BTreeMap<String, Vec<u8>> {
    let mut files = files.clone();
    let bytes = files.remove(from).unwrap();
    files.insert(to.to_owned(), bytes);
    files
}

#[test]
fn runs_are_sharded_by_day_and_id() {
    let (state, run, files) = with_run();
    assert_eq!(
        run_path(&run),
        format!("goals/main/runs/{}/ab/run_ab0123456789.yaml", run.at.day())
    );
    assert_eq!(read(&files).unwrap(), state);
    // In the wrong shard: refused, naming the file.
    let path = run_path(&run).replace("/ab/", "/cd/");
    let e = read(&moved(&files, &run_path(&run), &path)).unwrap_err();
    assert_eq!(e.path, path);
    assert!(e.message.contains("shard `cd`"), "{e}");
}

/// A run directly under its day (`runs/<day>/<id>.yaml`, no shard) is
/// not in the layout: refused, naming the file, and never written.
#[test]
fn a_run_without_its_shard_is_an_unexpected_file() {
    let (_, run, files) = with_run();
    let flat = format!("goals/main/runs/{}/{}.yaml", run.at.day(), run.id);
    let e = read(&moved(&files, &run_path(&run), &flat)).unwrap_err();
    assert_eq!(e.path, flat);
    assert!(
        e.message.contains("unexpected file in the state layout"),
        "{e}"
    );
    let e = check_file(&flat, &encode(&run)).unwrap_err();
    assert_eq!(e.path, flat);
}

/// Found by `fuzz_codec`: `.nan` read as a quota, and the writer wrote it
/// back as `null`, which no reader takes. Not a number is refused where
/// it is read, with the file and the field.
#[test]
fn a_quota_that_is_not_a_finite_number_is_refused() {
    let goal = "id: main\nobjective: o\nstatus: active\nquota:\n  compute: {}\n\
                created_at: '2026-12-01T00:00:00Z'\nupdated_at: '2026-12-01T00:00:00Z'\nrev: 1\n";
    let path = "goals/main/goal.yaml";
    for value in [".nan", ".inf", "-.inf"] {
        let bytes = goal.replace("{}", value);
        let e = check_file(path, bytes.as_bytes()).unwrap_err();
        assert!(e.message.contains("quota"), "{value}: {e}");
        assert!(e.message.contains("`compute`"), "{value}: {e}");
        assert!(e.message.contains("not a finite number"), "{value}: {e}");
    }
    check_file(path, goal.replace("{}", "2.5").as_bytes()).unwrap();
}

#[test]
fn a_run_under_two_days_is_a_duplicate_naming_both_files() {
    let (_, run, mut files) = with_run();
    let mut later = run.clone();
    later.at = Timestamp::from_unix(run.at.unix() + 86_400);
    files.insert(run_path(&later), encode(&later));
    let e = read(&files).unwrap_err();
    assert_eq!(e.path, run_path(&later));
    assert!(e.message.contains("duplicate run id"), "{e}");
    assert!(e.message.contains(&run_path(&run)), "{e}");
}

/// `redact` keeps a state file readable: a plain YAML value it replaces
/// still parses, holding the marker.
#[test]
fn a_plain_yaml_value_stays_valid_yaml_after_redaction() {
    use loopx::model::leaks::{redact, scan, REDACTED};
    const GH: &str = "R8x2Kq9LmN4pVt7Zw3Yc6Hj1Bs5Df0Ga8Ue2";
    let file = format!("text: ghp_{GH}\n");
    let leak = &scan(&file)[0];
    let clean = redact(&file, std::slice::from_ref(&leak.secret));
    let value: serde_json::Value = decode("x.yaml", clean.as_bytes()).unwrap();
    assert_eq!(value["text"], REDACTED);
}

#[test]
fn layout_paths() {
    assert!(is_layout_path("goals/main/todos/ab/todo_ab0000000000.yaml"));
    assert!(is_layout_path("agents/a.yaml"));
    assert!(!is_layout_path("README.md"));
}
