//! Where `check` places a problem (`codec::inspect`): the field's line and
//! column in the file's own bytes.

use loopx::codec::inspect::*;

const TODO: &str = "id: todo_ab0000000000\ngoal: main\ntext: |\n  claim:\n  two\nrole: agent\nclass: advancement_task\nstatus: open\npriority: P2\ncreated_at: '2026-12-02T10:00:00Z'\nupdated_at: '2026-12-02T10:00:00Z'\nrev: 1\nclaim:\n  agent: a1\n  epoch: 1\n  acquired_at: '2026-12-02T10:00:00Z'\n  expires_at: '2026-12-02T10:45:00Z'\nsuccessors:\n  - todo_aa0000000000\n  - todo_bb0000000000\nunblocks: todo_cc0000000000\n";

#[test]
fn fields_are_found_by_their_line() {
    let b = TODO.as_bytes();
    assert_eq!(locate(b, "id"), Some((1, 1)));
    assert_eq!(locate(b, "claim"), Some((13, 1)));
    assert_eq!(locate(b, "claim.epoch"), Some((15, 3)));
    assert_eq!(locate(b, "successors[1]"), Some((20, 3)));
    assert_eq!(locate(b, "unblocks"), Some((21, 1)));
    assert_eq!(locate(b, "claim.nothing"), None);
    assert_eq!(locate(b, "nothing"), None);
}

#[test]
fn a_wrong_type_names_its_field_line_and_column() {
    let bad = TODO.replace("  epoch: 1", "  epoch: one");
    let (d, problems) = inspect([("goals/main/todos/ab/todo_ab0000000000.yaml", bad.as_bytes())]);
    assert!(d.todos.is_empty());
    let p = &problems[0];
    assert_eq!(p.field.as_deref(), Some("claim.epoch"), "{p:?}");
    assert_eq!(p.line, Some(15), "{p:?}");
    assert!(p.message.contains("invalid type"), "{p:?}");
    assert!(!p.message.contains("at line"), "{p:?}");
    let bad = TODO.replace("rev: 1", "rev: [1]");
    let (_, problems) = inspect([("goals/main/todos/ab/todo_ab0000000000.yaml", bad.as_bytes())]);
    assert_eq!(
        problems[0].field.as_deref(),
        Some("rev"),
        "{:?}",
        problems[0]
    );
    assert_eq!(problems[0].line, Some(12), "{:?}", problems[0]);
}

#[test]
fn places_are_checked_against_content() {
    let (d, problems) = inspect([
        (
            "goals/main/todos/cd/todo_ab0000000000.yaml",
            TODO.as_bytes(),
        ),
        (
            "goals/other/todos/ab/todo_ab0000000000.yaml",
            TODO.as_bytes(),
        ),
        ("notes.txt", b"hi".as_slice()),
    ]);
    assert_eq!(d.todos.len(), 2);
    let got: Vec<(&str, Option<&str>)> = problems
        .iter()
        .map(|p| (p.path.as_str(), p.field.as_deref()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("goals/main/todos/cd/todo_ab0000000000.yaml", Some("id")),
            ("goals/other/todos/ab/todo_ab0000000000.yaml", Some("goal")),
            ("notes.txt", None),
            ("loopx.yaml", None),
        ]
    );
}
