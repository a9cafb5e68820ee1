//! The binary cache codec (`codec::binary`) on bytes built in memory:
//! truncated, foreign and hostile bytes decode to nothing.

use loopx::codec::binary::*;
use loopx::model::Goal;
use loopx::model::*;

#[test]
fn truncated_or_foreign_bytes_decode_to_none() {
    let now = Timestamp::from_unix(1_800_000_000);
    let mut state = State::with_goal(Goal::new("g", "o", now), now);
    let id = "todo_0123456789ab".to_owned();
    let todo = Todo::new(
        id.clone(),
        "g",
        "t",
        Role::Agent,
        TodoClass::Blocker,
        Priority::P1,
        Some("a"),
        now,
    );
    state.goals.get_mut("g").unwrap().todos.insert(id, todo);
    state.clean();
    let bytes = encode(&state);
    assert_eq!(decode(bytes.clone()).as_ref(), Some(&state));
    for cut in 0..bytes.len() {
        assert_eq!(decode(bytes[..cut].to_vec()), None, "cut at {cut}");
    }
    assert_eq!(decode(b"{\"meta\":{}}".to_vec()), None);
    let mut longer = bytes.clone();
    longer.push(0);
    assert_eq!(decode(longer), None);
}

/// Found by the fuzz test: a snapshot whose checksum holds but whose
/// entity length is near `u64::MAX` overflowed `at + len` (a panic in a
/// debug build) instead of decoding to `None`.
#[test]
fn a_huge_entity_length_decodes_to_none() {
    let now = Timestamp::from_unix(1_800_000_000);
    let mut state = State::with_goal(Goal::new("g", "o", now), now);
    let id = "todo_0123456789ab".to_owned();
    let todo = Todo::new(
        id.clone(),
        "g",
        "t",
        Role::Agent,
        TodoClass::Blocker,
        Priority::P1,
        Some("a"),
        now,
    );
    state
        .goals
        .get_mut("g")
        .unwrap()
        .todos
        .insert(id.clone(), todo);
    let bytes = encode(&state);
    let body = &bytes[..bytes.len() - 8];
    // The entity's length follows its key; put u64::MAX there.
    let key_end = body
        .windows(id.len())
        .position(|w| w == id.as_bytes())
        .expect("the key is in the snapshot")
        + id.len();
    let mut hostile = body[..key_end].to_vec();
    hostile.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
    hostile.extend_from_slice(&body[key_end + 1..]);
    assert_eq!(decode(seal(hostile)), None);
}
