//! Property tests over the pure layers: the codec round-trips any entity
//! byte for byte, and any sequence of lease operations keeps every entity
//! valid (and its epoch monotonic).

use proptest::prelude::*;
use serde_json::Value;

use loopx::codec;
use loopx::model::lease;
use loopx::model::*;

fn t(s: i64) -> Timestamp {
    Timestamp::from_unix(1_800_000_000 + s)
}

/// Strings that stress quoting: YAML keywords, numbers, indicators,
/// whitespace, line breaks, controls and non-ASCII.
fn tricky_string() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("yes".to_owned()),
        Just("No".to_owned()),
        Just("~".to_owned()),
        Just("0755".to_owned()),
        Just("1e3".to_owned()),
        Just("- item".to_owned()),
        Just("key: value".to_owned()),
        Just("a #comment".to_owned()),
        Just("".to_owned()),
        Just("line\n".to_owned()),
        Just("two\n\nlines\n\n".to_owned()),
        Just("\u{85}nel\u{2028}ls".to_owned()),
        "[a-z ]{0,12}",
        "\\PC{0,16}",
        any::<String>(),
    ]
}

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e12f64..1e12).prop_map(Value::from),
        tricky_string().prop_map(Value::String),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn extra() -> impl Strategy<Value = Extra> {
    prop::collection::btree_map("zz_[a-z_]{1,8}", json_value(), 0..3)
}

fn todo() -> impl Strategy<Value = Todo> {
    (
        "[0-9a-f]{12}",
        tricky_string().prop_filter("text is not blank", |s| !s.trim().is_empty()),
        0u8..5,
        prop::option::of((1u64..9, 0i64..100_000, "[a-z]{1,6}")),
        prop::collection::vec(tricky_string(), 0..3),
        prop::option::of(tricky_string()),
        extra(),
        extra(),
    )
        .prop_map(
            |(hex, text, p, claim, notes, evidence, extra, claim_extra)| {
                let priority = [
                    Priority::P0,
                    Priority::P1,
                    Priority::P2,
                    Priority::P3,
                    Priority::P4,
                ][p as usize];
                let mut todo = Todo::new(
                    format!("todo_{hex}"),
                    "g",
                    &text,
                    Role::Agent,
                    TodoClass::AdvancementTask,
                    priority,
                    Some("a"),
                    t(0),
                );
                todo.seq = (p != 0).then(|| u64::from(p) * 1_000_003);
                todo.claim = claim.map(|(epoch, at, agent)| Claim {
                    agent,
                    epoch,
                    acquired_at: t(at),
                    expires_at: t(at + 60),
                    extra: claim_extra,
                });
                todo.notes = notes
                    .into_iter()
                    .map(|n| Note {
                        at: t(1),
                        agent: None,
                        text: n,
                        extra: Extra::new(),
                    })
                    .collect();
                todo.evidence = evidence;
                todo.extra = extra;
                todo
            },
        )
}

/// A [`todo()`] with the fields selection reads varied as well.
fn selectable_todo() -> impl Strategy<Value = Todo> {
    use prop::collection::vec;
    use prop::option::of;
    (
        todo(),
        (0u8..2, 0u8..5, 0u8..4, 0u8..4, any::<bool>()),
        (vec("[a-z]{1,5}", 0..3), vec("[a-z]{1,5}", 0..3)),
        (
            of("todo_done:todo_[0-9a-f]{12}"),
            of("todo_[0-9a-f]{12}"),
            of("[a-z]{1,5}"),
        ),
        (
            of(of(0i64..100_000)),
            vec("todo_[0-9a-f]{12}", 0..2),
            of(tricky_string()),
            of((of(tricky_string()), vec(tricky_string(), 0..3), 0u64..9)),
        ),
    )
        .prop_map(
            |(mut todo, (role, class, status, decision, global), lists, links, rest)| {
                todo.role = [Role::Agent, Role::User][role as usize];
                todo.class = [
                    TodoClass::AdvancementTask,
                    TodoClass::ContinuousMonitor,
                    TodoClass::Blocker,
                    TodoClass::UserGate,
                    TodoClass::UserAction,
                ][class as usize];
                todo.status = [
                    TodoStatus::Open,
                    TodoStatus::Blocked,
                    TodoStatus::Deferred,
                    TodoStatus::Done,
                ][status as usize];
                todo.decision = [
                    None,
                    Some(Decision::Approve),
                    Some(Decision::Reject),
                    Some(Decision::Cancel),
                ][decision as usize];
                if todo.decision.is_some() {
                    todo.resolved_by = Some("A Person <person@example.com>".into());
                    todo.resolved_at = Some(t(i64::from(status) * 7));
                }
                todo.global = global;
                (todo.requires_capabilities, todo.exclude_agents) = lists;
                (todo.resume_when, todo.unblocks, todo.blocks_agent) = links;
                let (monitor, successors, validate, handoff) = rest;
                todo.handoff = handoff
                    .map(|(summary, items, epoch)| loopx::model::handoff::Handoff {
                        from: "a".into(),
                        to: "b".into(),
                        at: t(3),
                        epoch,
                        work_summary: summary,
                        approaches_tried: items
                            .iter()
                            .map(|i| loopx::model::handoff::Tried::parse(i))
                            .collect(),
                        next_steps: items.clone(),
                        open_questions: items.clone(),
                        files: items,
                        extra: Extra::new(),
                    })
                    .map(Box::new);
                todo.monitor = monitor.map(|due| {
                    let mut m = Monitor::new("1h", t(0));
                    m.next_due_at = due.map(t);
                    // Vary the rest from the due time: an expiry, watch-only,
                    // counters and a poll, so the facts read them all.
                    if let Some(d) = due {
                        m.expires_at = (d % 3 == 0).then(|| t(d + 60));
                        m.watch_only = d % 2 == 1;
                        m.last_checked_at = Some(t(d / 2));
                        m.consecutive_no_change = (d % 7) as u64;
                        m.material_change_generation = (d % 5) as u64;
                        m.polls.push(Poll {
                            at: t(d / 2),
                            agent: (d % 2 == 0).then(|| "a".into()),
                            material: d % 5 != 0,
                            note: (d % 4 == 0).then(|| "quiet".into()),
                            follow_up: (d % 3 == 1).then(|| "todo_000000000001".into()),
                            extra: Extra::new(),
                        });
                    }
                    m
                });
                todo.successors = successors;
                todo.validate = validate;
                todo
            },
        )
}

fn any_run() -> impl Strategy<Value = Run> {
    use prop::option::of;
    (
        (0u8..5, of("[a-z]{1,5}"), 0i64..100_000, of(tricky_string())),
        (of(0u32..100), of("run_[0-9a-f]{12}"), of(tricky_string())),
        (
            of(("[a-z ]{1,9}", -3i32..300)),
            prop::collection::vec("[a-z./]{1,9}", 0..3),
        ),
        (extra(), "[0-9a-f]{12}"),
    )
        .prop_map(
            |(
                (kind, agent, at, turn),
                (slots, spend, summary),
                (validation, artifacts),
                (extra, hex),
            )| {
                let kind = [
                    RunKind::Writeback,
                    RunKind::Spend,
                    RunKind::Void,
                    RunKind::Turn,
                    RunKind::Note,
                ][kind as usize];
                let mut run = Run::new(format!("run_{hex}"), kind, "g", agent.as_deref(), t(at));
                run.seq = slots.map(|n| u64::from(n) * 131);
                run.turn = turn;
                run.slots = slots;
                run.spend = spend;
                run.summary = summary;
                run.validation = validation.map(|(command, exit_code)| Validation {
                    command,
                    exit_code,
                    extra: Extra::new(),
                });
                run.artifacts = artifacts;
                run.decision = Some(serde_json::json!({"decision": "run"}));
                run.todo_seq = run.seq.map(|s| s / 2);
                run.extra = extra;
                run
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// The facts a loaded state reads straight from an entity's bytes are
    /// the facts of the entity those bytes decode to.
    #[test]
    fn facts_read_from_bytes_match_the_entity(todos in prop::collection::vec(selectable_todo(), 0..8), runs in prop::collection::vec(any_run(), 0..4)) {
        use loopx::model::tracked::Facts;
        use loopx::codec::binary;
        let mut state = State::with_goal(loopx::model::Goal::new("g", "o", t(0)), t(0));
        let gs = state.goals.get_mut("g").unwrap();
        for todo in todos {
            gs.todos.insert(todo.id.clone(), todo);
        }
        for run in runs {
            gs.runs.insert(run.id.clone(), run);
        }
        state.clean();
        let lazy = binary::decode(binary::encode(&state)).ok_or_else(|| TestCaseError::fail("no decode"))?;
        let (eager, lazy) = (&state.goals["g"], &lazy.goals["g"]);
        let from_bytes: Vec<TodoFacts<'_>> = lazy.todos.all_facts().collect();
        let decoded: Vec<TodoFacts<'_>> = eager.todos.values().map(Facts::facts).collect();
        prop_assert_eq!(from_bytes, decoded);
        let from_bytes: Vec<RunFacts<'_>> = lazy.runs.all_facts().collect();
        let decoded: Vec<RunFacts<'_>> = eager.runs.values().map(Facts::facts).collect();
        prop_assert_eq!(from_bytes, decoded);
        prop_assert_eq!(&lazy.todos, &eager.todos);
        prop_assert_eq!(&lazy.runs, &eager.runs);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn todo_codec_round_trip_is_byte_identical(todo in todo()) {
        let bytes = codec::encode(&todo);
        let back: Todo = codec::decode("t.yaml", &bytes)
            .map_err(|e| TestCaseError::fail(format!("{e}\n{}", String::from_utf8_lossy(&bytes))))?;
        prop_assert_eq!(&back, &todo, "{}", String::from_utf8_lossy(&bytes));
        prop_assert_eq!(codec::encode(&back), bytes);
    }

    #[test]
    fn run_codec_round_trip_is_byte_identical(summary in tricky_string(), turn in prop::option::of(tricky_string()), extra in extra(), slots in prop::option::of(0u32..100)) {
        let mut run = Run::new("run_0123456789ab".into(), RunKind::Writeback, "g", Some("a"), t(5));
        run.summary = Some(summary);
        run.turn = turn;
        run.slots = slots;
        run.outcome = Some(Outcome::OutcomeProgress);
        run.extra = extra;
        let bytes = codec::encode(&run);
        let back: Run = codec::decode("r.yaml", &bytes).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&back, &run);
        prop_assert_eq!(codec::encode(&back), bytes);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// The host-local cache gives back the state it was given, whether an
    /// entry is read lazily, copied as bytes, or re-encoded after a write.
    #[test]
    fn binary_cache_round_trip(todos in prop::collection::vec(todo(), 0..12), summary in tricky_string(), extra in extra(), pick in 0usize..12) {
        use loopx::codec::binary;
        let mut state = State::with_goal(loopx::model::Goal::new("g", "o", t(0)), t(0));
        let gs = state.goals.get_mut("g").unwrap();
        for todo in todos {
            gs.todos.insert(todo.id.clone(), todo);
        }
        let mut run = Run::new("run_0123456789ab".into(), RunKind::Spend, "g", None, t(5));
        run.summary = Some(summary);
        run.extra = extra;
        run.decision = Some(serde_json::json!({"should_run": true}));
        gs.runs.insert(run.id.clone(), run);
        state.clean();
        let bytes = binary::encode(&state);
        let back = binary::decode(bytes.clone()).ok_or_else(|| TestCaseError::fail("no decode"))?;
        prop_assert_eq!(binary::encode(&back), bytes.clone(), "copied bytes re-encode identically");
        prop_assert_eq!(&back, &state);
        let mut lazy = binary::decode(bytes.clone()).unwrap();
        let mut eager = state.clone();
        let picked = eager.goals["g"].todos.keys().nth(pick).map(str::to_owned);
        if let Some(id) = picked {
            for s in [&mut lazy, &mut eager] {
                s.goals.get_mut("g").unwrap().todos.get_mut(&id).unwrap().rev += 1;
                s.clean();
            }
        }
        prop_assert_eq!(binary::encode(&lazy), binary::encode(&eager));
        let again = binary::decode(binary::encode(&lazy));
        prop_assert_eq!(again.as_ref(), Some(&eager));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// A cached delta (todos and runs in binary form, the rest as YAML)
    /// replays onto the parent's state to exactly the state the commit made,
    /// the same as applying the commit's YAML files.
    #[test]
    fn a_delta_replays_like_its_files(todos in prop::collection::vec(todo(), 1..8), changed in todo(), summary in tricky_string(), pick in 0usize..8, drop in any::<bool>()) {
        use loopx::codec::binary;
        use loopx::store::{cache, transaction, Oid};
        let mut parent = State::with_goal(loopx::model::Goal::new("g", "o", t(0)), t(0));
        let gs = parent.goals.get_mut("g").unwrap();
        for todo in todos {
            gs.todos.insert(todo.id.clone(), todo);
        }
        parent.clean();
        let mut child = parent.clone();
        let gs = child.goals.get_mut("g").unwrap();
        let picked = gs.todos.keys().nth(pick % gs.todos.len()).unwrap().to_owned();
        if drop {
            gs.todos.remove(&picked);
        } else {
            gs.todos.get_mut(&picked).unwrap().rev += 1;
        }
        gs.todos.insert(changed.id.clone(), changed);
        let mut run = Run::new("run_0123456789ab".into(), RunKind::Spend, "g", None, t(5));
        run.summary = Some(summary);
        gs.runs.insert(run.id.clone(), run);
        child.goals.get_mut("g").unwrap().goal.rev += 1;
        let changes = transaction::changes(Some(&parent), &child);
        child.clean();
        let bytes = cache::delta_bytes(&Oid("p".into()), &child, &changes);
        let delta = binary::decode_delta(&bytes).ok_or_else(|| TestCaseError::fail("no decode"))?;
        let mut replayed = parent.clone();
        cache::replay(&mut replayed, delta.files).ok_or_else(|| TestCaseError::fail("no replay"))?;
        prop_assert_eq!(&replayed, &child);
        let mut from_yaml = parent.clone();
        for change in &changes {
            let (path, bytes) = match change {
                loopx::store::FileChange::Upsert { path, bytes } => (path, Some(bytes.as_slice())),
                loopx::store::FileChange::Remove { path } => (path, None),
            };
            loopx::codec::apply_file(&mut from_yaml, path, bytes).unwrap();
        }
        from_yaml.clean();
        prop_assert_eq!(&from_yaml, &child);
    }
}

#[derive(Clone, Debug)]
enum Op {
    Add(u8),
    Claim(u8, u8, i64),
    Renew(u8, u8),
    Release(u8, u8),
    Done(u8, u8),
    Handoff(u8, u8, u8),
    Tick(i64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u8..4).prop_map(Op::Add),
        (0u8..3, 0u8..6, 60i64..7200).prop_map(|(a, t, ttl)| Op::Claim(a, t, ttl)),
        (0u8..3, 0u8..6).prop_map(|(a, t)| Op::Renew(a, t)),
        (0u8..3, 0u8..6).prop_map(|(a, t)| Op::Release(a, t)),
        (0u8..3, 0u8..6).prop_map(|(a, t)| Op::Done(a, t)),
        (0u8..3, 0u8..6, 0u8..3).prop_map(|(a, t, b)| Op::Handoff(a, t, b)),
        (1i64..5000).prop_map(Op::Tick),
    ]
}

fn fresh_state() -> State {
    State::with_goal(Goal::new("g", "o", t(0)), t(0))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn lease_operations_keep_every_entity_valid(ops in prop::collection::vec(op(), 1..60)) {
        let agents = ["agent-a", "agent-b", "agent-c"];
        let mut state = fresh_state();
        let mut now = t(0);
        let mut epochs: std::collections::BTreeMap<String, u64> = Default::default();
        for (n, op) in ops.iter().enumerate() {
            let gs = state.goals.get_mut("g").unwrap();
            let ids: Vec<String> = gs.todos.keys().map(str::to_owned).collect();
            let pick = |i: u8| ids.get(i as usize % ids.len().max(1)).cloned();
            match op.clone() {
                Op::Add(p) => {
                    let id = ids::derive_id("todo_", &["g", &n.to_string()]);
                    let pr = [Priority::P0, Priority::P1, Priority::P2, Priority::P3][p as usize];
                    gs.todos.insert(id.clone(), Todo::new(id, "g", "work", Role::Agent, TodoClass::AdvancementTask, pr, None, now));
                }
                Op::Claim(a, i, ttl) => if let Some(id) = pick(i) {
                    let _ = lease::claim(gs.todos.get_mut(&id).unwrap(), agents[a as usize], now, ttl);
                },
                Op::Renew(a, i) => if let Some(id) = pick(i) {
                    let _ = lease::renew(gs.todos.get_mut(&id).unwrap(), agents[a as usize], None, now, 600);
                },
                Op::Release(a, i) => if let Some(id) = pick(i) {
                    let todo = gs.todos.get_mut(&id).unwrap();
                    if let Ok(lease::Standing::Holder(_)) = lease::check_writer(todo, agents[a as usize], None, now) {
                        lease::release(todo);
                    }
                },
                Op::Done(a, i) => if let Some(id) = pick(i) {
                    let todo = gs.todos.get_mut(&id).unwrap();
                    if !todo.status.is_terminal() && lease::check_writer(todo, agents[a as usize], None, now).is_ok() {
                        todo.status = TodoStatus::Done;
                        lease::release(todo);
                    }
                },
                Op::Handoff(a, i, b) => if let Some(id) = pick(i) {
                    let todo = gs.todos.get_mut(&id).unwrap();
                    if let Ok(lease::Standing::Holder(_)) = lease::check_writer(todo, agents[a as usize], None, now) {
                        let _ = lease::transfer(todo, agents[b as usize], now, 600);
                    }
                },
                Op::Tick(s) => now = now.plus_seconds(s),
            }
            prop_assert!(state.check().is_ok(), "after {op:?}: {:?}", state.check());
            for todo in state.goals["g"].todos.values() {
                let prev = epochs.insert(todo.id.clone(), todo.epoch()).unwrap_or(0);
                prop_assert!(todo.epoch() >= prev, "epoch went backwards on {}", todo.id);
                prop_assert!(todo.live_claim(now).is_none_or(|c| !todo.status.is_terminal() && c.epoch == todo.epoch()));
            }
            let files = codec::encode_state(&state);
            let back = codec::decode_state(files.iter().map(|(p, b)| (p.as_str(), b.as_slice())))
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(&back, &state);
        }
    }
}

mod merge_props {
    use super::*;
    use loopx::model::merge::merge;

    #[derive(Clone, Debug)]
    enum Edit {
        Priority(u8, u8),
        Text(u8, String),
        Note(u8, String),
        Extra(u8, String, i64),
        AddTodo(String),
        AddRun(String),
    }

    fn edit() -> impl Strategy<Value = Edit> {
        prop_oneof![
            (0u8..4, 0u8..5).prop_map(|(t, p)| Edit::Priority(t, p)),
            (0u8..4, "[a-z ]{1,10}").prop_map(|(t, s)| Edit::Text(t, s)),
            (0u8..4, "[a-z ]{1,10}").prop_map(|(t, s)| Edit::Note(t, s)),
            (0u8..4, "zz_[a-c]", 0i64..5).prop_map(|(t, k, v)| Edit::Extra(t, k, v)),
            "[0-9a-f]{12}".prop_map(Edit::AddTodo),
            "[0-9a-f]{12}".prop_map(Edit::AddRun),
        ]
    }

    fn note() -> impl Strategy<Value = Note> {
        (0i64..4, prop::option::of("[ab]"), "[xyz]{1,2}").prop_map(|(at, agent, text)| Note {
            at: t(at),
            agent: agent.map(|a| format!("agent-{a}")),
            text,
            extra: Extra::new(),
        })
    }

    fn base() -> State {
        let mut s = fresh_state();
        let gs = s.goals.get_mut("g").unwrap();
        for i in 0..4 {
            let id = format!("todo_{i:012x}");
            gs.todos.insert(
                id.clone(),
                Todo::new(
                    id,
                    "g",
                    "base",
                    Role::Agent,
                    TodoClass::AdvancementTask,
                    Priority::P2,
                    None,
                    t(0),
                ),
            );
        }
        s
    }

    fn apply(state: &State, edits: &[Edit], at: i64) -> State {
        let mut s = state.clone();
        let gs = s.goals.get_mut("g").unwrap();
        let ids: Vec<String> = gs.todos.keys().map(str::to_owned).collect();
        for e in edits {
            let mut touch = |i: u8, f: &mut dyn FnMut(&mut Todo)| {
                let todo = gs.todos.get_mut(&ids[i as usize % ids.len()]).unwrap();
                f(todo);
                todo.rev += 1;
                todo.updated_at = t(at);
            };
            match e.clone() {
                Edit::Priority(i, p) => touch(i, &mut |t| {
                    t.priority = [
                        Priority::P0,
                        Priority::P1,
                        Priority::P2,
                        Priority::P3,
                        Priority::P4,
                    ][p as usize]
                }),
                Edit::Text(i, x) => touch(i, &mut |t| t.text = format!("text {x}")),
                Edit::Note(i, x) => touch(i, &mut |t| {
                    t.notes.push(Note {
                        at: super::t(at),
                        agent: None,
                        text: x.clone(),
                        extra: Extra::new(),
                    })
                }),
                Edit::Extra(i, k, v) => touch(i, &mut |t| {
                    t.extra.insert(k.clone(), Value::from(v));
                }),
                Edit::AddTodo(hex) => {
                    let id = format!("todo_{hex}");
                    gs.todos.insert(
                        id.clone(),
                        Todo::new(
                            id,
                            "g",
                            "new",
                            Role::Agent,
                            TodoClass::AdvancementTask,
                            Priority::P1,
                            None,
                            t(at),
                        ),
                    );
                }
                Edit::AddRun(hex) => {
                    let id = format!("run_{hex}");
                    gs.runs.insert(
                        id.clone(),
                        Run::new(id, RunKind::Writeback, "g", Some("a"), t(at)),
                    );
                }
            }
        }
        s
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn merge_is_deterministic_idempotent_symmetric_and_lossless(
            xs in prop::collection::vec(edit(), 0..8),
            ys in prop::collection::vec(edit(), 0..8),
        ) {
            let b = base();
            let x = apply(&b, &xs, 10);
            let y = apply(&b, &ys, 20);
            let xy = merge(Some(&b), &x, &y).map_err(TestCaseError::fail)?;
            let yx = merge(Some(&b), &y, &x).map_err(TestCaseError::fail)?;
            prop_assert_eq!(&xy.state, &yx.state, "order independent");
            prop_assert_eq!(&merge(Some(&b), &x, &y).unwrap().state, &xy.state, "deterministic");
            prop_assert_eq!(&merge(Some(&b), &x, &x).unwrap().state, &x, "idempotent");
            prop_assert_eq!(&merge(Some(&b), &x, &b).unwrap().state, &x);
            prop_assert_eq!(&merge(Some(&b), &b, &y).unwrap().state, &y);
            // Merging the result again with either side changes nothing.
            prop_assert_eq!(&merge(Some(&x), &xy.state, &x).unwrap().state, &xy.state);
            // Lossless: each side's changed field is in the result or reported lost.
            let m = &xy.state.goals["g"];
            for side in [&x, &y] {
                for (id, todo) in &side.goals["g"].todos {
                    let merged = serde_json::to_value(&m.todos[id]).unwrap();
                    let mine = serde_json::to_value(todo).unwrap();
                    let before = b.goals["g"].todos.get(id).map(|t| serde_json::to_value(t).unwrap());
                    for (k, v) in mine.as_object().unwrap() {
                        if matches!(k.as_str(), "rev" | "updated_at") || before.as_ref().and_then(|b| b.get(k)) == Some(v) {
                            continue;
                        }
                        if k == "notes" {
                            // An append-only list: every element survives.
                            let all = merged.get(k).and_then(Value::as_array).cloned().unwrap_or_default();
                            for n in v.as_array().unwrap() {
                                prop_assert!(all.contains(n), "{id}: note {n} was lost");
                            }
                            continue;
                        }
                        let kept = merged.get(k) == Some(v);
                        let reported = xy.conflicts.iter().any(|c| c.entity == format!("todo {id}") && c.field == *k && (&c.lost == v || &c.kept == v));
                        prop_assert!(kept || reported, "{id}.{k} = {v} was lost silently");
                    }
                }
                for id in side.goals["g"].runs.keys() {
                    prop_assert!(m.runs.contains_key(id), "run {id} survives");
                }
            }
            prop_assert!(xy.state.check().is_ok());
        }

        /// Append-only lists changed on both sides merge as a union: no
        /// base note and no note either side added is ever lost, whichever
        /// side is "ours", also when the claim went to the remote (issue 13.3).
        #[test]
        fn notes_and_artifacts_added_on_both_sides_are_never_lost(
            base_notes in prop::collection::vec(note(), 0..6),
            xs in prop::collection::vec(note(), 1..8),
            ys in prop::collection::vec(note(), 1..8),
            xa in prop::collection::vec("[a-c]{1,2}", 1..4),
            ya in prop::collection::vec("[a-c]{1,2}", 1..4),
            remote_claims in any::<bool>(),
        ) {
            let id = "todo_000000000000";
            let mut b = base();
            let run = Run::new("run_000000000001".into(), RunKind::Writeback, "g", Some("a"), t(0));
            b.goals.get_mut("g").unwrap().runs.insert(run.id.clone(), run);
            b.goals.get_mut("g").unwrap().todos.get_mut(id).unwrap().notes = base_notes.clone();
            let side = |notes: &[Note], artifacts: &[String], rev: u64, claim: bool| {
                let mut s = b.clone();
                let gs = s.goals.get_mut("g").unwrap();
                let todo = gs.todos.get_mut(id).unwrap();
                todo.notes.extend(notes.iter().cloned());
                todo.rev += rev;
                if claim {
                    todo.claim = Some(Claim { agent: "agent-r".into(), epoch: 1, acquired_at: t(1), expires_at: t(999), extra: Extra::new() });
                }
                gs.runs.get_mut("run_000000000001").unwrap().artifacts.extend(artifacts.iter().cloned());
                s
            };
            let x = side(&xs, &xa, 1, false);
            let y = side(&ys, &ya, 2, remote_claims);
            let xy = merge(Some(&b), &x, &y).map_err(TestCaseError::fail)?;
            let yx = merge(Some(&b), &y, &x).map_err(TestCaseError::fail)?;
            if !remote_claims {
                prop_assert_eq!(&xy.state, &yx.state, "order independent");
            }
            prop_assert_eq!(&merge(Some(&x), &xy.state, &x).unwrap().state, &xy.state, "merging again changes nothing");
            for m in [&xy, &yx] {
                let todo = &m.state.goals["g"].todos[id];
                let run = &m.state.goals["g"].runs["run_000000000001"];
                for n in base_notes.iter().chain(&xs).chain(&ys) {
                    prop_assert!(todo.notes.contains(n), "note {:?} was lost: {:?}", n, todo.notes);
                }
                for a in xa.iter().chain(&ya) {
                    prop_assert!(run.artifacts.contains(a), "artifact {a} was lost: {:?}", run.artifacts);
                }
                prop_assert!(!m.conflicts.iter().any(|c| c.field == "notes" || c.field == "artifacts"), "a union is not a conflict: {:?}", m.conflicts);
                // Exact duplicates across sides collapse: never more than both sides had.
                prop_assert!(todo.notes.len() <= base_notes.len() + xs.len() + ys.len());
            }
            if remote_claims {
                prop_assert_eq!(&xy.state.goals["g"].todos[id].claim, &y.goals["g"].todos[id].claim);
            }
        }

        #[test]
        fn a_remote_claim_always_beats_a_local_one(agent_l in "[a-c]", agent_r in "[d-f]", el in 1u64..4, er in 1u64..4) {
            let b = base();
            let claim = |agent: &str, epoch: u64| Some(Claim { agent: format!("agent-{agent}"), epoch, acquired_at: t(1), expires_at: t(999), extra: Extra::new() });
            let mut local = b.clone();
            let mut remote = b.clone();
            let id = "todo_000000000000";
            local.goals.get_mut("g").unwrap().todos.get_mut(id).unwrap().claim = claim(&agent_l, el);
            local.goals.get_mut("g").unwrap().todos.get_mut(id).unwrap().rev = 9;
            remote.goals.get_mut("g").unwrap().todos.get_mut(id).unwrap().claim = claim(&agent_r, er);
            let m = merge(Some(&b), &local, &remote).map_err(TestCaseError::fail)?;
            prop_assert_eq!(&m.state.goals["g"].todos[id].claim, &remote.goals["g"].todos[id].claim);
            prop_assert_eq!(m.lost_claims.len(), 1);
        }
    }
}
