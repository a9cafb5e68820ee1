//! A large state in one commit, as a `git fast-import` stream: the
//! benchmarks' and the tests' way to 10,000 todos without 10,000 commands.
//!
//! One stream writes one pack. Building the same as loose objects and then
//! running `git gc` deleted thousands of files right before the
//! measurements, and on ext4 a burst of deletions slows every file creation
//! for minutes after (the allocator skips recently freed inodes).

#![allow(dead_code)]

use std::io::Write as _;

use loopx::model::{ids, Outcome, Priority, Role, Run, RunKind, Timestamp, Todo, TodoClass};

/// Feeds `stream` to `git fast-import` run by `git` (a command already in
/// the repository, with its environment set); panics when git refuses it.
pub fn import(git: &mut std::process::Command, stream: &[u8]) {
    let mut child = git
        .args(["fast-import", "--quiet"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("git fast-import starts");
    child.stdin.take().unwrap().write_all(stream).unwrap();
    assert!(child.wait().unwrap().success(), "git fast-import");
}

/// The id of the `i`-th todo [`stream`] writes under `seed`.
pub fn todo_id(seed: &str, i: usize) -> String {
    ids::derive_id("todo_", &[seed, &i.to_string()])
}

/// A commit on `refs/heads/loopx-state` (on top of its tip) adding `todos`
/// open agent todos of goal `main` created `at`, and `runs` writebacks made
/// `at` by agent `seed`, one per todo in turn.
pub fn stream(seed: &str, todos: usize, runs: usize, at: Timestamp) -> Vec<u8> {
    let mut out = Vec::new();
    let message = format!("{seed}: {todos} todos, {runs} runs");
    write!(
        out,
        "commit refs/heads/loopx-state\ncommitter {seed} <{seed}@example.com> {} +0000\ndata {}\n{message}\nfrom refs/heads/loopx-state^0\n",
        at.unix(),
        message.len()
    )
    .unwrap();
    let mut file = |path: String, bytes: Vec<u8>| {
        write!(out, "M 100644 inline {path}\ndata {}\n", bytes.len()).unwrap();
        out.extend_from_slice(&bytes);
        out.push(b'\n');
    };
    for i in 0..todos {
        let todo = Todo::new(
            todo_id(seed, i),
            "main",
            &format!("{seed} task {i}"),
            Role::Agent,
            TodoClass::AdvancementTask,
            Priority::P2,
            None,
            at,
        );
        file(loopx::codec::todo_path(&todo), loopx::codec::encode(&todo));
    }
    for i in 0..runs {
        let mut run = Run::new(
            ids::derive_id("run_", &[seed, &i.to_string()]),
            RunKind::Writeback,
            "main",
            Some(seed),
            at,
        );
        run.seq = Some(i as u64 + 1);
        run.todo = Some(todo_id(seed, i % todos.max(1)));
        run.outcome = Some(Outcome::OutcomeProgress);
        run.summary = Some(format!("{seed} writeback {i}"));
        file(loopx::codec::run_path(&run), loopx::codec::encode(&run));
    }
    out
}
