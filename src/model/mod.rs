//! The pure domain: entities, their invariants and the rules over them.
//!
//! Nothing here performs I/O, reads a clock or knows about git or YAML: time
//! comes in as a [`Timestamp`] argument, and results come back as values.
//! The one value drawn from outside is the random part of a new id,
//! [`ids::nonce`].

pub mod diff;
mod entity;
pub mod facts;
pub mod gate;
pub mod handoff;
pub mod ids;
pub mod leaks;
pub mod lease;
pub mod limits;
pub mod merge;
pub mod quota;
mod refusal;
pub mod retention;
pub mod runtime;
pub mod select;
pub mod should_run;
mod state;
mod time;
pub mod tracked;
pub mod validate;

pub use entity::*;
pub use facts::{RunFacts, TodoFacts};
pub use refusal::{Code, Refusal};
pub use state::{Bucket, GoalState, State, TodoCounts};
pub use time::{parse_duration, Timestamp};
pub use tracked::Tracked;
