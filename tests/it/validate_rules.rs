//! Tests of `model::validate`.

use loopx::model::validate::*;
use loopx::model::*;

fn at(s: i64) -> Timestamp {
    Timestamp::from_unix(1_800_000_000 + s)
}

fn todo(id: &str, class: TodoClass) -> (String, Todo) {
    let t = Todo::new(
        id.into(),
        "main",
        "t",
        class.role(),
        class,
        Priority::P2,
        None,
        at(0),
    );
    (format!("goals/main/todos/{}/{id}.yaml", ids::shard(id)), t)
}

fn state() -> Decoded {
    Decoded {
        meta: Some((
            "loopx.yaml".into(),
            Meta {
                format: FORMAT,
                default_goal: "main".into(),
                created_at: at(0),
                gate_signers: Vec::new(),
                extra: Extra::new(),
            },
        )),
        goals: vec![("goals/main/goal.yaml".into(), Goal::new("main", "o", at(0)))],
        ..Decoded::default()
    }
}

fn fields(problems: &[Problem]) -> Vec<(&str, &str)> {
    problems
        .iter()
        .map(|p| (p.path.as_str(), p.field.as_deref().unwrap_or("")))
        .collect()
}

#[test]
fn a_clean_state_has_no_problem() {
    let mut d = state();
    let (pa, mut a) = todo("todo_aa0000000000", TodoClass::AdvancementTask);
    let (pb, b) = todo("todo_bb0000000000", TodoClass::AdvancementTask);
    a.successors.push(b.id.clone());
    a.claim = Some(Claim {
        agent: "a1".into(),
        epoch: 1,
        acquired_at: at(0),
        expires_at: at(lease::MAX_TTL),
        extra: Extra::new(),
    });
    d.todos = vec![(pa, a), (pb, b)];
    assert_eq!(check(&d), vec![]);
}

#[test]
fn every_problem_is_reported_not_only_the_first() {
    let mut d = state();
    let (pa, mut a) = todo("todo_aa0000000000", TodoClass::UserGate);
    a.unblocks = Some("todo_dead00000000".into());
    a.status = TodoStatus::Done;
    a.blocks_agent = Some("ghost".into());
    let (pb, mut b) = todo("todo_bb0000000000", TodoClass::AdvancementTask);
    b.resume_when = Some("todo_done:todo_dead00000000".into());
    b.successors = vec!["todo_aa0000000000".into(), "todo_beef00000000".into()];
    b.decision = Some(Decision::Approve);
    b.claim = Some(Claim {
        agent: "a1".into(),
        epoch: 2,
        acquired_at: at(0),
        expires_at: at(lease::MAX_TTL + 1),
        extra: Extra::new(),
    });
    let dup = (
        "goals/main/todos/cc/todo_bb0000000000.yaml".to_owned(),
        b.clone(),
    );
    let mut spend = Run::new(
        "run_aa0000000000".into(),
        RunKind::Spend,
        "main",
        None,
        at(0),
    );
    spend.writeback = Some("run_bb0000000000".into());
    spend.slots = Some(1);
    let mut void = Run::new(
        "run_bb0000000000".into(),
        RunKind::Void,
        "main",
        None,
        at(0),
    );
    void.spend = Some("run_aa0000000000".into());
    void.todo = Some("todo_cafe00000000".into());
    d.todos = vec![(pa.clone(), a), (pb.clone(), b), dup];
    d.runs = vec![("r1".into(), spend), ("r2".into(), void)];
    let problems = check(&d);
    assert_eq!(
        fields(&problems),
        vec![
            ("goals/main/todos/cc/todo_bb0000000000.yaml", "id"),
            (pa.as_str(), "status"),
            (pa.as_str(), "blocks_agent"),
            (pa.as_str(), "unblocks"),
            (pb.as_str(), "claim.expires_at"),
            (pb.as_str(), "decision"),
            (pb.as_str(), "resume_when"),
            (pb.as_str(), "successors[1]"),
            (
                "goals/main/todos/cc/todo_bb0000000000.yaml",
                "claim.expires_at"
            ),
            ("goals/main/todos/cc/todo_bb0000000000.yaml", "decision"),
            ("goals/main/todos/cc/todo_bb0000000000.yaml", "resume_when"),
            (
                "goals/main/todos/cc/todo_bb0000000000.yaml",
                "successors[1]"
            ),
            ("r1", "writeback"),
            ("r2", "todo"),
        ],
        "{problems:#?}"
    );
    assert_eq!(problems[2].severity, Severity::Warning);
    assert!(problems[12]
        .message
        .contains("is a void record, not a writeback"));
}
