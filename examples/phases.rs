//! Where a write's time goes at a given state size (a profiling aid):
//! `cargo run --release --example phases -- 10000`.
use std::time::Instant;

use loopx::model::{ids, Goal, Priority, Role, State, Timestamp, Todo, TodoClass};

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000);
    let now = Timestamp::parse("2026-12-02T10:00:00Z").unwrap();
    let mut state = State::with_goal(Goal::new("main", "bench", now), now);
    let gs = state.goals.get_mut("main").unwrap();
    for i in 0..n {
        let id = ids::derive_id("todo_", &[&i.to_string()]);
        gs.todos.insert(
            id.clone(),
            Todo::new(
                id,
                "main",
                &format!("task {i}"),
                Role::Agent,
                TodoClass::AdvancementTask,
                Priority::P2,
                None,
                now,
            ),
        );
    }
    let t = Instant::now();
    let json = serde_json::to_vec(&state).unwrap();
    println!(
        "serialize cache: {:?} ({} KB)",
        t.elapsed(),
        json.len() / 1024
    );
    let t = Instant::now();
    let back: State = serde_json::from_slice(&json).unwrap();
    println!("parse cache:     {:?}", t.elapsed());
    let t = Instant::now();
    let copy = back.clone();
    println!("clone:           {:?}", t.elapsed());
    let t = Instant::now();
    let changes = loopx::codec::changed_files(Some(&back), &copy);
    println!(
        "diff:            {:?} ({} changes)",
        t.elapsed(),
        changes.len()
    );
    let t = Instant::now();
    let files = loopx::codec::encode_state(&back);
    println!("encode all yaml: {:?}", t.elapsed());
    let t = Instant::now();
    let _ =
        loopx::codec::decode_state(files.iter().map(|(p, b)| (p.as_str(), b.as_slice()))).unwrap();
    println!("decode all yaml: {:?}", t.elapsed());
}
