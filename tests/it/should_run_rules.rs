//! `should-run`'s rules (`model::should_run::decide`) on states built in
//! memory: each rule, their precedence, throttling's exact next eligible
//! time, monitors, and the order claims are offered in.

use loopx::model::should_run::{
    decide, Decision, WAKE_RUN_NOW, WAKE_STOPPED, WAKE_UNTIL_REASSIGNED, WAKE_WAITING,
    WAKE_WAITING_FOR_USER,
};
use loopx::model::*;

fn t(s: i64) -> Timestamp {
    Timestamp::parse("2026-12-02T10:00:00Z")
        .unwrap()
        .plus_seconds(s)
}

struct World {
    state: State,
    n: usize,
}

impl World {
    fn new() -> Self {
        let mut goal = Goal::new("g", "o", t(0));
        goal.quota.allowed_slots = Some(3);
        let state = State::with_goal(goal, t(0));
        World { state, n: 0 }
    }

    fn gs(&mut self) -> &mut GoalState {
        self.state.goals.get_mut("g").unwrap()
    }

    fn todo(&mut self, class: TodoClass, f: impl FnOnce(&mut Todo)) -> String {
        self.n += 1;
        let id = format!("todo_{:012x}", self.n);
        let mut todo = Todo::new(
            id.clone(),
            "g",
            &format!("todo {}", self.n),
            class.role(),
            class,
            Priority::P2,
            None,
            t(self.n as i64),
        );
        f(&mut todo);
        self.gs().todos.insert(id.clone(), todo);
        id
    }

    fn spend(&mut self, at: i64) {
        self.n += 1;
        let id = format!("run_{:012x}", self.n);
        let mut run = Run::new(id.clone(), RunKind::Spend, "g", Some("a"), t(at));
        run.slots = Some(1);
        self.gs().runs.insert(id, run);
    }

    fn decide(&self, agent: Option<&str>, now: Timestamp) -> Decision {
        decide(&self.state, &self.state.goals["g"], agent, &[], now)
    }
}

fn claimed_by(agent: &str) -> impl FnOnce(&mut Todo) + '_ {
    move |t| {
        t.claim = Some(Claim {
            agent: agent.into(),
            epoch: 1,
            acquired_at: crate::should_run_rules::t(0),
            expires_at: crate::should_run_rules::t(3600),
            extra: Extra::new(),
        });
    }
}

/// (name, world builder, agent, expected (decision, state, action, wake), notify)
#[test]
fn rules_and_their_precedence() {
    type Build = fn(&mut World);
    /// (decision, state, effective_action, wake_after_seconds)
    type Expected = (&'static str, &'static str, &'static str, i64);
    type Case = (&'static str, Build, Option<&'static str>, Expected, bool);
    let cases: Vec<Case> = vec![
        (
            "1 stopped goal",
            |w| {
                w.todo(TodoClass::AdvancementTask, |_| {});
                w.gs().goal.status = GoalStatus::Stopped;
            },
            Some("a"),
            ("skip", "paused", "quota_skip", WAKE_STOPPED),
            false,
        ),
        (
            "1 compute 0",
            |w| {
                w.todo(TodoClass::AdvancementTask, |_| {});
                w.gs().goal.quota.compute = 0.0;
            },
            Some("a"),
            ("skip", "paused", "quota_skip", WAKE_STOPPED),
            false,
        ),
        (
            // As LoopX 2.1.1: compute is kept to two decimals, so 0.0021
            // is 0 (issue 46, item 16).
            "1 compute that rounds to 0",
            |w| {
                w.todo(TodoClass::AdvancementTask, |_| {});
                w.gs().goal.quota.compute = 0.0021;
            },
            Some("a"),
            ("skip", "paused", "quota_skip", WAKE_STOPPED),
            false,
        ),
        (
            "1 a pause beats a gate",
            |w| {
                w.todo(TodoClass::UserGate, |g| g.global = true);
                w.gs().goal.status = GoalStatus::Stopped;
            },
            Some("a"),
            ("skip", "paused", "quota_skip", WAKE_STOPPED),
            false,
        ),
        (
            "1 a pause beats throttling",
            |w| {
                for i in 0..3 {
                    w.spend(-i);
                }
                w.gs().goal.status = GoalStatus::Stopped;
            },
            Some("a"),
            ("skip", "paused", "quota_skip", WAKE_STOPPED),
            false,
        ),
        (
            "agents registered, none given",
            |w| {
                w.state.agents.insert(
                    "a".into(),
                    Agent {
                        id: "a".into(),
                        runtime: None,
                        capabilities: vec![],
                        registered_at: t(0),
                        updated_at: t(0),
                        rev: 1,
                        extra: Extra::new(),
                    },
                );
                w.todo(TodoClass::AdvancementTask, |_| {});
            },
            None,
            (
                "skip",
                "needs_agent",
                "automation_prompt_upgrade_required",
                WAKE_STOPPED,
            ),
            false,
        ),
        (
            "3 throttled beats a ready todo",
            |w| {
                w.todo(TodoClass::AdvancementTask, |_| {});
                for i in 0..3 {
                    w.spend(-3600 * i);
                }
            },
            Some("a"),
            ("skip", "throttled", "throttled_skip", 24 * 3600 - 7200),
            false,
        ),
        (
            "3 throttled beats a gate",
            |w| {
                w.todo(TodoClass::UserGate, |g| g.global = true);
                for _ in 0..3 {
                    w.spend(0);
                }
            },
            Some("a"),
            ("skip", "throttled", "throttled_skip", 24 * 3600),
            true,
        ),
        (
            "5 gate with an independent candidate",
            |w| {
                let x = w.todo(TodoClass::AdvancementTask, |_| {});
                w.todo(TodoClass::AdvancementTask, |_| {});
                w.todo(TodoClass::UserGate, |g| {
                    g.global = true;
                    g.unblocks = Some(x);
                });
            },
            Some("a"),
            (
                "run",
                "eligible",
                "safe_bypass_user_gate_fallback",
                WAKE_RUN_NOW,
            ),
            true,
        ),
        (
            "5 gate blocking the only candidate",
            |w| {
                let x = w.todo(TodoClass::AdvancementTask, |_| {});
                w.todo(TodoClass::UserGate, |g| {
                    g.global = true;
                    g.unblocks = Some(x);
                });
            },
            Some("a"),
            (
                "skip",
                "operator_gate",
                "operator_gate_notify",
                WAKE_WAITING_FOR_USER,
            ),
            true,
        ),
        (
            "5 a global gate stops all work, even with candidates",
            |w| {
                w.todo(TodoClass::AdvancementTask, claimed_by("a"));
                w.todo(TodoClass::UserGate, |g| g.global = true);
            },
            Some("a"),
            (
                "skip",
                "operator_gate",
                "operator_gate_notify",
                WAKE_WAITING_FOR_USER,
            ),
            true,
        ),
        (
            "5 a gate with no scope is global (todo add --class user_gate)",
            |w| {
                w.todo(TodoClass::AdvancementTask, |_| {});
                w.todo(TodoClass::UserGate, |_| {});
            },
            Some("a"),
            (
                "skip",
                "operator_gate",
                "operator_gate_notify",
                WAKE_WAITING_FOR_USER,
            ),
            true,
        ),
        (
            "5 a gate beats held-by-others",
            |w| {
                w.todo(TodoClass::AdvancementTask, claimed_by("b"));
                w.todo(TodoClass::UserGate, |g| g.blocks_agent = Some("a".into()));
            },
            Some("a"),
            (
                "skip",
                "operator_gate",
                "operator_gate_notify",
                WAKE_WAITING_FOR_USER,
            ),
            true,
        ),
        (
            "5 another agent's gate is not mine",
            |w| {
                w.todo(TodoClass::AdvancementTask, |_| {});
                w.todo(TodoClass::UserGate, |g| g.blocks_agent = Some("b".into()));
            },
            Some("a"),
            ("run", "eligible", "normal_run", WAKE_RUN_NOW),
            false,
        ),
        (
            "6 a ready todo",
            |w| {
                w.todo(TodoClass::AdvancementTask, |_| {});
            },
            Some("a"),
            ("run", "eligible", "normal_run", WAKE_RUN_NOW),
            false,
        ),
        (
            "6 an expired claim is free",
            |w| {
                w.todo(TodoClass::AdvancementTask, |t| {
                    claimed_by("b")(t);
                    t.claim.as_mut().unwrap().expires_at = crate::should_run_rules::t(-1);
                });
            },
            Some("a"),
            ("run", "eligible", "normal_run", WAKE_RUN_NOW),
            false,
        ),
        (
            "7 held by others",
            |w| {
                w.todo(TodoClass::AdvancementTask, claimed_by("b"));
            },
            Some("a"),
            (
                "skip",
                "agent_scope_wait",
                "agent_scope_wait",
                WAKE_UNTIL_REASSIGNED,
            ),
            false,
        ),
        (
            "7 only blocked: a replan turn",
            |w| {
                w.todo(TodoClass::AdvancementTask, |t| {
                    t.status = TodoStatus::Blocked
                });
                w.todo(TodoClass::AdvancementTask, |t| {
                    t.status = TodoStatus::Deferred
                });
            },
            Some("a"),
            ("run", "replan", "replan_required", WAKE_RUN_NOW),
            false,
        ),
        (
            "7 only blocked, replanning off: wait",
            |w| {
                w.todo(TodoClass::AdvancementTask, |t| {
                    t.status = TodoStatus::Blocked
                });
                w.gs().goal.replan_when_blocked = Some(false);
            },
            Some("a"),
            ("skip", "waiting", "blocked_wait", WAKE_WAITING),
            false,
        ),
        (
            "7 a successor waiting on a blocked todo waits",
            |w| {
                let x = w.todo(TodoClass::AdvancementTask, |t| {
                    t.status = TodoStatus::Blocked
                });
                w.todo(TodoClass::AdvancementTask, |t| {
                    t.status = TodoStatus::Deferred;
                    t.resume_when = Some(format!("todo_done:{x}"));
                });
            },
            Some("a"),
            ("skip", "waiting", "blocked_wait", WAKE_WAITING),
            false,
        ),
        (
            "7 resume_when unmet",
            |w| {
                let x = w.todo(TodoClass::AdvancementTask, claimed_by("b"));
                w.todo(TodoClass::AdvancementTask, |t| {
                    t.resume_when = Some(format!("todo_done:{x}"))
                });
            },
            Some("a"),
            (
                "skip",
                "agent_scope_wait",
                "agent_scope_wait",
                WAKE_UNTIL_REASSIGNED,
            ),
            false,
        ),
        (
            "7 monitor not due",
            |w| {
                w.todo(TodoClass::ContinuousMonitor, |t| {
                    t.monitor = Some(Monitor::new("1h", crate::should_run_rules::t(600)))
                });
            },
            Some("a"),
            ("skip", "monitor_quiet", "monitor_quiet_skip", 600),
            false,
        ),
        (
            "7 nothing open after work: a planning turn, and tell the user",
            |w| {
                w.todo(TodoClass::AdvancementTask, |t| t.status = TodoStatus::Done);
            },
            Some("a"),
            ("run", "plan", "plan_required", WAKE_RUN_NOW),
            true,
        ),
        (
            "7 a new goal: a planning turn",
            |_| {},
            Some("a"),
            ("run", "plan", "plan_required", WAKE_RUN_NOW),
            false,
        ),
        (
            "7 only user todos: plan, and the reminder tells the user",
            |w| {
                w.todo(TodoClass::UserAction, |_| {});
            },
            Some("a"),
            ("run", "plan", "plan_required", WAKE_RUN_NOW),
            true,
        ),
        (
            "1 a goal marked done ends, whatever is open",
            |w| {
                w.todo(TodoClass::AdvancementTask, |_| {});
                w.gs().goal.status = GoalStatus::Done;
            },
            Some("a"),
            (
                "skip",
                "terminal_no_followup",
                "terminal_no_followup",
                WAKE_STOPPED,
            ),
            false,
        ),
        (
            "5 a gate blocking this agent holds all its work",
            |w| {
                w.todo(TodoClass::AdvancementTask, |_| {});
                w.todo(TodoClass::UserGate, |g| g.blocks_agent = Some("a".into()));
            },
            Some("a"),
            (
                "skip",
                "operator_gate",
                "operator_gate_notify",
                WAKE_WAITING_FOR_USER,
            ),
            true,
        ),
        (
            "5 another agent's gate that unblocks a todo leaves that todo to me (as LoopX)",
            |w| {
                let x = w.todo(TodoClass::AdvancementTask, |_| {});
                w.todo(TodoClass::UserGate, |g| {
                    g.blocks_agent = Some("b".into());
                    g.unblocks = Some(x);
                });
            },
            Some("a"),
            ("run", "eligible", "normal_run", WAKE_RUN_NOW),
            false,
        ),
        (
            "5 my gate that unblocks one todo leaves me my other todos (as LoopX)",
            |w| {
                let x = w.todo(TodoClass::AdvancementTask, |_| {});
                w.todo(TodoClass::AdvancementTask, |_| {});
                w.todo(TodoClass::UserGate, |g| {
                    g.blocks_agent = Some("a".into());
                    g.unblocks = Some(x);
                });
            },
            Some("a"),
            (
                "run",
                "eligible",
                "safe_bypass_user_gate_fallback",
                WAKE_RUN_NOW,
            ),
            true,
        ),
        (
            "6 a reminder tells the user, work goes on",
            |w| {
                w.todo(TodoClass::AdvancementTask, |_| {});
                w.todo(TodoClass::UserAction, |_| {});
            },
            Some("a"),
            ("run", "eligible", "normal_run", WAKE_RUN_NOW),
            true,
        ),
        (
            "6 a deferred successor whose predecessor is done",
            |w| {
                let x = w.todo(TodoClass::AdvancementTask, |t| t.status = TodoStatus::Done);
                w.todo(TodoClass::AdvancementTask, |t| {
                    t.status = TodoStatus::Deferred;
                    t.resume_when = Some(format!("todo_done:{x}"));
                });
            },
            Some("a"),
            ("run", "eligible", "successor_replan_required", WAKE_RUN_NOW),
            false,
        ),
        (
            // As LoopX 2.1.1: by priority (issue 46, item 14).
            "6 a ready successor above open work goes first",
            |w| {
                let x = w.todo(TodoClass::AdvancementTask, |t| t.status = TodoStatus::Done);
                w.todo(TodoClass::AdvancementTask, |t| {
                    t.status = TodoStatus::Deferred;
                    t.resume_when = Some(format!("todo_done:{x}"));
                    t.priority = Priority::P0;
                });
                w.todo(TodoClass::AdvancementTask, |t| t.priority = Priority::P3);
            },
            Some("a"),
            ("run", "eligible", "successor_replan_required", WAKE_RUN_NOW),
            false,
        ),
        (
            "6 at the same priority open work comes before a ready successor",
            |w| {
                let x = w.todo(TodoClass::AdvancementTask, |t| t.status = TodoStatus::Done);
                w.todo(TodoClass::AdvancementTask, |t| {
                    t.status = TodoStatus::Deferred;
                    t.resume_when = Some(format!("todo_done:{x}"));
                    t.priority = Priority::P1;
                });
                w.todo(TodoClass::AdvancementTask, |t| t.priority = Priority::P1);
            },
            Some("a"),
            ("run", "eligible", "normal_run", WAKE_RUN_NOW),
            false,
        ),
    ];
    for (name, build, agent, (decision, state, action, wake), notify) in cases {
        let mut w = World::new();
        build(&mut w);
        let d = w.decide(agent, t(0));
        assert_eq!(
            (
                d.decision,
                d.state,
                d.effective_action,
                d.scheduler_hint.wake_after_seconds
            ),
            (decision, state, action, wake),
            "{name}: {d:?}"
        );
        assert_eq!(d.notify_user, notify, "{name}");
        assert_eq!(d.should_run, decision == "run", "{name}");
        let planning = matches!(d.state, "plan" | "replan");
        assert_eq!(
            d.selected_todo.is_some(),
            d.should_run && !planning,
            "{name}"
        );
    }
}

#[test]
fn a_goal_with_only_deferred_todos_is_not_said_to_have_none() {
    let mut w = World::new();
    w.todo(TodoClass::AdvancementTask, |t| {
        t.status = TodoStatus::Deferred
    });
    let d = w.decide(Some("a"), t(0));
    assert_eq!(d.effective_action, "plan_required", "{d:?}");
    assert!(!d.reason.contains("no todo yet"), "{}", d.reason);
    assert!(d.reason.contains("1 todo(s), none ready"), "{}", d.reason);
}

#[test]
fn own_claims_come_first_then_order() {
    let mut w = World::new();
    w.todo(TodoClass::AdvancementTask, |t| t.priority = Priority::P0);
    let mine = w.todo(TodoClass::AdvancementTask, |t| {
        t.priority = Priority::P3;
        claimed_by("a")(t);
    });
    let d = w.decide(Some("a"), t(0));
    let sel = d.selected_todo.unwrap();
    assert_eq!(sel.id, mine);
    assert!(sel.claimed_by_me && !sel.claim_required);
    let d = w.decide(Some("b"), t(0));
    assert!(d.selected_todo.unwrap().claim_required);
}

#[test]
fn throttling_gives_the_exact_next_eligible_at() {
    let mut w = World::new();
    w.todo(TodoClass::AdvancementTask, |_| {});
    // Spends at -5h, -3h, -1h with 3 allowed per 24h: the -5h one leaves first.
    for h in [5, 3, 1] {
        w.spend(-h * 3600);
    }
    // A spend outside the window does not count.
    w.spend(-25 * 3600);
    let d = w.decide(Some("a"), t(0));
    assert_eq!(d.state, "throttled");
    assert_eq!(d.quota.spent_slots, 3);
    assert_eq!(d.quota.next_eligible_at, t(19 * 3600));
    assert_eq!(d.scheduler_hint.wake_after_seconds, 19 * 3600);
    // One second after that, the turn may run.
    let d = w.decide(Some("a"), t(19 * 3600));
    assert_eq!((d.state, d.quota.spent_slots), ("eligible", 2));
    // A voided spend stops counting.
    let first = w
        .gs()
        .runs
        .values()
        .find(|r| r.at == t(-5 * 3600))
        .unwrap()
        .id
        .clone();
    let mut void = Run::new(
        "run_ffffffffffff".into(),
        RunKind::Void,
        "g",
        Some("a"),
        t(0),
    );
    void.spend = Some(first);
    w.gs().runs.insert(void.id.clone(), void);
    assert_eq!(w.decide(Some("a"), t(0)).state, "eligible");
}

#[test]
fn monitors_run_when_due_and_until_they_expire() {
    let monitor = |due: i64, expires: Option<i64>| {
        move |t: &mut Todo| {
            let mut m = Monitor::new("15m", crate::should_run_rules::t(due));
            m.expires_at = expires.map(crate::should_run_rules::t);
            t.monitor = Some(m);
        }
    };
    // Two monitors not due: the earlier one sets the wake, to the second.
    let mut w = World::new();
    w.todo(TodoClass::ContinuousMonitor, monitor(900, None));
    let first = w.todo(TodoClass::ContinuousMonitor, monitor(300, None));
    let d = w.decide(Some("a"), t(0));
    assert_eq!(
        (d.state, d.effective_action, d.scheduler_hint.action),
        (
            "monitor_quiet",
            "monitor_quiet_skip",
            "backoff_until_material_transition"
        )
    );
    assert_eq!(d.scheduler_hint.cadence_class, "monitor_wait");
    assert_eq!(d.scheduler_hint.wake_after_seconds, 300);
    assert!(d.reason.contains(&first), "{}", d.reason);
    // Due at exactly its time: selected.
    let d = w.decide(Some("a"), t(300));
    assert_eq!(d.effective_action, "normal_run");
    assert_eq!(d.selected_todo.unwrap().id, first);
    // A ready todo goes first while the monitors are not due.
    let task = w.todo(TodoClass::AdvancementTask, |_| {});
    let d = w.decide(Some("a"), t(0));
    assert_eq!(d.selected_todo.unwrap().id, task);

    // Expired: never selected again, not even when due.
    let mut w = World::new();
    w.todo(TodoClass::ContinuousMonitor, monitor(0, Some(600)));
    assert_eq!(w.decide(Some("a"), t(599)).effective_action, "normal_run");
    let sel = select::select(&w.state.goals["g"], Some("a"), &[], t(600));
    assert!(sel.first().is_none() && sel.next_monitor.is_none());
    assert_eq!(sel.expired_monitors, 1);
    assert_ne!(w.decide(Some("a"), t(600)).effective_action, "normal_run");
    // Not due and expiring before it is due: expired wins once reached.
    let mut w = World::new();
    w.todo(TodoClass::ContinuousMonitor, monitor(900, Some(600)));
    assert_eq!(
        w.decide(Some("a"), t(0)).scheduler_hint.wake_after_seconds,
        900
    );

    // Blocked todos and a monitor not due: wait for the monitor.
    let mut w = World::new();
    w.todo(TodoClass::AdvancementTask, |t| {
        t.status = TodoStatus::Blocked
    });
    w.todo(TodoClass::ContinuousMonitor, monitor(60, None));
    let d = w.decide(Some("a"), t(0));
    assert_eq!(
        (d.state, d.scheduler_hint.wake_after_seconds),
        ("monitor_quiet", 60)
    );
    // Another agent's claim on the monitor: not this agent's to wait for.
    let mut w = World::new();
    w.todo(TodoClass::ContinuousMonitor, |t| {
        monitor(60, None)(t);
        claimed_by("b")(t);
    });
    assert_eq!(w.decide(Some("a"), t(0)).state, "agent_scope_wait");
}
