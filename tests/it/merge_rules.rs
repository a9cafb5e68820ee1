//! The three-way merge (`model::merge`) on states built in memory: claims
//! between published heads, overflow, append-only lists and sets.

use loopx::model::merge::*;
use loopx::model::State;
use loopx::model::{Goal, Priority, Role, Timestamp, Todo, TodoClass};

/// Two published heads both changed a todo's claim (an expired lease
/// taken over): the higher epoch wins whichever head is passed first,
/// and the loser is reported.
#[test]
fn published_heads_keep_the_higher_epoch_in_either_order() {
    let now = Timestamp::from_unix(1_800_000_000);
    let mut base = State::with_goal(Goal::new("g", "o", now), now);
    let id = "todo_0123456789ab".to_owned();
    let mut todo = Todo::new(
        id.clone(),
        "g",
        "t",
        Role::Agent,
        TodoClass::Blocker,
        Priority::P1,
        None,
        now,
    );
    todo.last_epoch = 1;
    base.goals
        .get_mut("g")
        .unwrap()
        .todos
        .insert(id.clone(), todo);
    let claimed = |state: &State, agent: &str, epoch: u64, rev: u64| {
        let mut s = state.clone();
        let t = s.goals.get_mut("g").unwrap().todos.get_mut(&id).unwrap();
        t.claim = Some(loopx::model::Claim {
            agent: agent.into(),
            epoch,
            acquired_at: now,
            expires_at: Timestamp::from_unix(1_800_000_600),
            extra: Default::default(),
        });
        t.rev = rev;
        s
    };
    // The older holder's head has the higher rev: the epoch still decides.
    let old = claimed(&base, "x", 2, 9);
    let new = claimed(&base, "y", 3, 2);
    for (a, b) in [(&old, &new), (&new, &old)] {
        let m = merge_published(Some(&base), a.clone(), b).expect("merges");
        let claim = m.state.goals["g"].todos[&id].claim.clone().unwrap();
        assert_eq!((claim.agent.as_str(), claim.epoch), ("y", 3));
        assert_eq!(m.lost_claims.len(), 1);
        assert_eq!(m.lost_claims[0].local["agent"], "x");
    }
    // Between the local branch and the remote, the remote wins as before.
    let m = merge(Some(&base), &new, &old).expect("merges");
    let claim = m.state.goals["g"].todos[&id].claim.clone().unwrap();
    assert_eq!(claim.agent, "x");
}

/// Found by the fuzz test: a todo changed on both sides whose `rev` is
/// `u64::MAX` (a hand-made or hostile commit) overflowed the merged
/// `rev` (a panic in a debug build, 0 in a release one).
#[test]
fn a_maximal_rev_merges_without_overflow() {
    let now = Timestamp::from_unix(1_800_000_000);
    let mut base = State::with_goal(Goal::new("g", "o", now), now);
    let id = "todo_0123456789ab".to_owned();
    let todo = Todo::new(
        id.clone(),
        "g",
        "t",
        Role::Agent,
        TodoClass::Blocker,
        Priority::P1,
        None,
        now,
    );
    base.goals
        .get_mut("g")
        .unwrap()
        .todos
        .insert(id.clone(), todo);
    let (mut local, mut remote) = (base.clone(), base.clone());
    let l = local
        .goals
        .get_mut("g")
        .unwrap()
        .todos
        .get_mut(&id)
        .unwrap();
    l.text = "local".into();
    l.rev = u64::MAX;
    let r = remote
        .goals
        .get_mut("g")
        .unwrap()
        .todos
        .get_mut(&id)
        .unwrap();
    r.priority = Priority::P0;
    r.rev = 2;
    let merged = merge(Some(&base), &local, &remote).expect("merges");
    let todo = &merged.state.goals["g"].todos[&id];
    assert_eq!((todo.text.as_str(), todo.priority), ("local", Priority::P0));
    assert_eq!(todo.rev, u64::MAX);
}

/// Two clones each added a todo with the same next `seq`: both are kept
/// (with their `seq`); a `seq` changed on both sides of one todo follows
/// the side with the higher `rev`, like any field.
#[test]
fn seq_merges_like_any_field() {
    let now = Timestamp::from_unix(1_800_000_000);
    let mut base = State::with_goal(Goal::new("g", "o", now), now);
    let todo = |id: &str| {
        Todo::new(
            id.to_owned(),
            "g",
            "t",
            Role::Agent,
            TodoClass::Blocker,
            Priority::P1,
            None,
            now,
        )
    };
    let gs = base.goals.get_mut("g").unwrap();
    let shared = gs.add_todo(todo("todo_000000000001")).id;
    let (mut local, mut remote) = (base.clone(), base.clone());
    let l = local.goals.get_mut("g").unwrap();
    let added_l = l.add_todo(todo("todo_00000000000a"));
    let t = l.todos.get_mut(&shared).unwrap();
    (t.seq, t.rev) = (Some(7), 3);
    let r = remote.goals.get_mut("g").unwrap();
    let added_r = r.add_todo(todo("todo_00000000000b"));
    let t = r.todos.get_mut(&shared).unwrap();
    (t.seq, t.rev) = (Some(9), 2);
    assert_eq!((added_l.seq, added_r.seq), (Some(2), Some(2)));
    let merged = merge(Some(&base), &local, &remote).expect("merges");
    let gs = &merged.state.goals["g"];
    assert_eq!(gs.todos[&shared].seq, Some(7));
    assert_eq!(gs.todos[&added_l.id].seq, Some(2));
    assert_eq!(gs.todos[&added_r.id].seq, Some(2));
    // Equal seq: created_at, then id, decide.
    assert!(gs.todos[&added_l.id].order_key() < gs.todos[&added_r.id].order_key());
}

/// Two people answered one gate differently at the same `rev`: the
/// merged gate carries one decision with the name of who took it.
#[test]
fn a_gates_resolution_is_merged_whole() {
    use loopx::model::{Decision, TodoStatus};
    let now = Timestamp::from_unix(1_800_000_000);
    let mut base = State::with_goal(Goal::new("g", "o", now), now);
    let id = "todo_0123456789ab".to_owned();
    let gate = Todo::new(
        id.clone(),
        "g",
        "q",
        Role::User,
        TodoClass::UserGate,
        Priority::P1,
        None,
        now,
    );
    base.goals
        .get_mut("g")
        .unwrap()
        .todos
        .insert(id.clone(), gate);
    let resolve = |state: &mut State, d: Decision, who: &str, at: i64| {
        let t = state
            .goals
            .get_mut("g")
            .unwrap()
            .todos
            .get_mut(&id)
            .unwrap();
        t.status = TodoStatus::Done;
        t.decision = Some(d);
        t.resolved_by = Some(who.to_owned());
        t.resolved_at = Some(Timestamp::from_unix(1_800_000_000 + at));
        t.rev = 2;
    };
    // "approve" < "reject", but "Ann" < "Zed": a field-by-field tie
    // break would pair reject with Ann.
    for (first, second) in [(0, 1), (1, 0)] {
        let sides = [
            (Decision::Reject, "Zed <z@example.com>", 5),
            (Decision::Approve, "Ann <a@example.com>", 9),
        ];
        let (mut local, mut remote) = (base.clone(), base.clone());
        let (d, who, at) = sides[first];
        resolve(&mut local, d, who, at);
        let (d, who, at) = sides[second];
        resolve(&mut remote, d, who, at);
        let merged = merge(Some(&base), &local, &remote).expect("merges");
        let t = &merged.state.goals["g"].todos[&id];
        assert_eq!(t.decision, Some(Decision::Reject));
        assert_eq!(t.resolved_by.as_deref(), Some("Zed <z@example.com>"));
        assert_eq!(t.resolved_at, Some(Timestamp::from_unix(1_800_000_005)));
        let lost: Vec<&str> = merged
            .conflicts
            .iter()
            .filter(|c| c.rule == "resolution")
            .map(|c| c.field.as_str())
            .collect();
        assert_eq!(lost, ["decision", "resolved_by", "resolved_at"]);
    }
}

/// A handoff's packet is one field: a side that handed off keeps it
/// beside the other side's edits, and two handoffs never mix (both
/// changed the claim, so the remote's todo wins whole).
#[test]
fn a_handoff_packet_is_kept_whole() {
    use loopx::model::handoff::Packet;
    let now = Timestamp::from_unix(1_800_000_000);
    let mut base = State::with_goal(Goal::new("g", "o", now), now);
    let id = "todo_0123456789ab".to_owned();
    let todo = Todo::new(
        id.clone(),
        "g",
        "t",
        Role::Agent,
        TodoClass::AdvancementTask,
        Priority::P1,
        None,
        now,
    );
    base.goals
        .get_mut("g")
        .unwrap()
        .todos
        .insert(id.clone(), todo);
    let packet = |summary: &str, step: &str| Packet {
        work_summary: Some(summary.into()),
        next_steps: vec![step.into()],
        ..Packet::default()
    };
    let edit = |state: &mut State, f: &dyn Fn(&mut Todo)| {
        let t = state
            .goals
            .get_mut("g")
            .unwrap()
            .todos
            .get_mut(&id)
            .unwrap();
        f(t);
        t.rev += 1;
    };
    let (mut local, mut remote) = (base.clone(), base.clone());
    edit(&mut local, &|t| {
        t.handoff = Some(Box::new(packet("parsed", "unfold").stamp("a", "b", now, 2)));
    });
    edit(&mut remote, &|t| t.text = "parse the headers".into());
    for (l, r) in [(&local, &remote), (&remote, &local)] {
        let merged = merge(Some(&base), l, r).expect("merges");
        let t = &merged.state.goals["g"].todos[&id];
        assert_eq!(t.text, "parse the headers");
        let h = t.handoff.as_ref().expect("the packet is kept");
        assert_eq!(h.work_summary.as_deref(), Some("parsed"));
        assert_eq!(h.next_steps, ["unfold"]);
        assert!(merged.conflicts.is_empty(), "{:?}", merged.conflicts);
    }
    // Both sides handed off (each moved the claim): one packet, whole.
    let claim = |agent: &str| loopx::model::Claim {
        agent: agent.into(),
        epoch: 2,
        acquired_at: now,
        expires_at: Timestamp::from_unix(1_800_003_600),
        extra: loopx::model::Extra::new(),
    };
    edit(&mut local, &|t| t.claim = Some(claim("b")));
    edit(&mut remote, &|t| {
        t.claim = Some(claim("c"));
        t.handoff = Some(Box::new(packet("other", "split").stamp("a", "c", now, 2)));
    });
    let merged = merge(Some(&base), &local, &remote).expect("merges");
    let h = merged.state.goals["g"].todos[&id].handoff.clone().unwrap();
    assert_eq!(
        (h.to.as_str(), h.next_steps.as_slice()),
        ("c", &["split".to_owned()][..])
    );
}
