//! Published leases (`model::lease`) built in memory: their trailers, which
//! states record their end, renewal past half the TTL, and fencing.

use loopx::model::lease::*;
use loopx::model::*;
use loopx::model::{Priority, TodoClass};

fn t(seconds: i64) -> Timestamp {
    Timestamp::from_unix(1_800_000_000 + seconds)
}

fn todo() -> Todo {
    let class = TodoClass::AdvancementTask;
    Todo::new(
        "todo_0123456789ab".to_owned(),
        "g",
        "work",
        class.role(),
        class,
        Priority::P1,
        None,
        t(0),
    )
}

#[test]
fn an_ended_lease_is_recorded_only_by_a_state_that_saw_its_end() {
    let mut w = todo();
    claim(&mut w, "a", t(0), 600).unwrap();
    let held = Published::of("g", &w.id, w.claim.as_ref().unwrap());
    let ended = |status| Published {
        status,
        ended_at: Some(t(20)),
        ..held.clone()
    };
    // The state still holds the lease: nothing is recorded yet.
    assert!(!held.recorded_in(&w));
    assert!(!ended(LeaseStatus::Released).recorded_in(&w));
    // An older state, before the claim, records nothing either.
    assert!(!ended(LeaseStatus::Released).recorded_in(&todo()));
    let mut released = w.clone();
    release(&mut released);
    assert!(ended(LeaseStatus::Released).recorded_in(&released));
    // A lease that ended done needs a state where the todo is done.
    assert!(!ended(LeaseStatus::Done).recorded_in(&released));
    let mut done = released.clone();
    done.status = loopx::model::TodoStatus::Done;
    assert!(ended(LeaseStatus::Done).recorded_in(&done));
    // Claimed again since: the old lease's end is behind the state.
    claim(&mut released, "b", t(10), 600).unwrap();
    assert!(ended(LeaseStatus::Done).recorded_in(&released));
    assert!(!held.recorded_in(&released));
}

#[test]
fn a_published_lease_round_trips_through_its_trailers() {
    let mut w = todo();
    claim(&mut w, "a", t(0), 600).unwrap();
    let p = Published::of("g", &w.id, w.claim.as_ref().unwrap());
    let trailers: Vec<(String, String)> = p
        .trailers()
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    assert_eq!(Published::from_trailers(&trailers), Some(p.clone()));
    let broken: Vec<(String, String)> = trailers
        .iter()
        .filter(|(k, _)| k != "Loopx-Epoch")
        .cloned()
        .collect();
    assert_eq!(Published::from_trailers(&broken), None);
}

/// A lease newer than the state is laid over the todo; one the state
/// has seen is not, and its end is what the state says.
#[test]
fn a_lease_overlays_only_a_state_that_has_not_seen_it() {
    let mut held = todo();
    claim(&mut held, "a", t(0), 600).unwrap();
    let lease = Published::of("g", &held.id, held.claim.as_ref().unwrap());
    let mut stale = todo();
    assert!(lease.keeps_from(&stale, "b", t(10)));
    assert!(!lease.keeps_from(&stale, "a", t(10)), "its own lease");
    assert!(!lease.keeps_from(&stale, "b", t(700)), "expired");
    assert!(lease.overlay(&mut stale));
    assert_eq!(stale.claim.as_ref().unwrap().agent, "a");
    let err = claim(&mut stale, "b", t(10), 600).unwrap_err();
    assert_eq!(err.code, Code::ClaimConflict);
    // The state knows this epoch: nothing laid over, and its end shows.
    assert!(!lease.overlay(&mut held));
    assert_eq!(
        lease.ended_in(&held, t(20)),
        None,
        "still held as published"
    );
    let mut released = held.clone();
    released.last_epoch = 1;
    released.claim = None;
    let end = lease.ended_in(&released, t(20)).unwrap();
    assert_eq!(end.status, LeaseStatus::Released);
    assert_eq!(end.ended_at, Some(t(20)));
    let mut done = held.clone();
    done.status = loopx::model::TodoStatus::Done;
    assert_eq!(
        lease.ended_in(&done, t(20)).unwrap().status,
        LeaseStatus::Done
    );
    // A done lease keeps every agent from a stale todo.
    let mut stale = todo();
    let finished = lease.ended_in(&done, t(20)).unwrap();
    assert!(finished.keeps_from(&stale, "a", t(10)));
    finished.overlay(&mut stale);
    assert!(claim(&mut stale, "b", t(10), 600).is_err());
}

#[test]
fn the_holder_extends_only_past_half_the_ttl() {
    let mut todo = todo();
    assert_eq!(claim(&mut todo, "a", t(0), 600), Ok(ClaimAction::Acquired));
    let before = todo.clone();
    assert_eq!(claim(&mut todo, "a", t(300), 600), Ok(ClaimAction::Held));
    assert_eq!(
        renew(&mut todo, "a", Some(1), t(300), 600),
        Ok((1, ClaimAction::Held))
    );
    assert_eq!(todo, before, "held changes nothing");
    assert_eq!(
        renew(&mut todo, "a", Some(1), t(301), 600),
        Ok((1, ClaimAction::Renewed))
    );
    assert_eq!(todo.claim.as_ref().unwrap().expires_at, t(901));
    // Expired but not taken over: always renewed.
    assert_eq!(
        renew(&mut todo, "a", None, t(2000), 3600),
        Ok((1, ClaimAction::Renewed))
    );
    assert_eq!(todo.claim.as_ref().unwrap().acquired_at, t(2000));
}

#[test]
fn taking_a_lease_back_fences_its_holder() {
    let mut todo = todo();
    assert_eq!(take_back(&mut todo), Ok(None));
    claim(&mut todo, "a", t(0), 600).unwrap();
    let taken = take_back(&mut todo).unwrap().unwrap();
    assert_eq!((taken.agent.as_str(), taken.epoch), ("a", 1));
    assert!(todo.claim.is_none());
    assert_eq!(todo.last_epoch, 2);
    let refused = check_writer(&todo, "a", Some(1), t(10)).unwrap_err();
    assert_eq!(refused.code, Code::StaleEpoch);
    claim(&mut todo, "b", t(10), 600).unwrap();
    assert_eq!(todo.claim.as_ref().unwrap().epoch, 3);
}
