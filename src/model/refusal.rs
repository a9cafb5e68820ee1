//! Stable error codes (SPEC §3) and the refusals the domain rules produce.
//!
//! Every failure the tool reports carries one [`Code`]; the code alone decides
//! the process exit status, so callers never guess it from message text.

use std::fmt;

/// A stable, machine-readable error code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    ClaimConflict,
    NotClaimHolder,
    StaleEpoch,
    TodoNotFound,
    AmbiguousId,
    GoalExists,
    Throttled,
    NothingToSpend,
    NothingReady,
    GateOpen,
    GateReserved,
    PersonOnly,
    PushRejected,
    UnrelatedHistories,
    LeakDetected,
    ValidationFailed,
    StateMissing,
    StateInvalid,
    NotARepo,
    DubiousOwnership,
    UnsupportedRefStorage,
    UnsupportedObjectFormat,
    StateCheckedOut,
    StateLocked,
    GitFailed,
    InvalidInput,
    AgentFailed,
    Interrupted,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::ClaimConflict => "claim_conflict",
            Code::NotClaimHolder => "not_claim_holder",
            Code::StaleEpoch => "stale_epoch",
            Code::TodoNotFound => "todo_not_found",
            Code::AmbiguousId => "ambiguous_id",
            Code::GoalExists => "goal_exists",
            Code::Throttled => "throttled",
            Code::NothingToSpend => "nothing_to_spend",
            Code::NothingReady => "nothing_ready",
            Code::GateOpen => "gate_open",
            Code::GateReserved => "gate_reserved",
            Code::PersonOnly => "person_only",
            Code::PushRejected => "push_rejected",
            Code::UnrelatedHistories => "unrelated_histories",
            Code::LeakDetected => "leak_detected",
            Code::ValidationFailed => "validation_failed",
            Code::StateMissing => "state_missing",
            Code::StateInvalid => "state_invalid",
            Code::NotARepo => "not_a_repo",
            Code::DubiousOwnership => "dubious_ownership",
            Code::UnsupportedRefStorage => "unsupported_ref_storage",
            Code::UnsupportedObjectFormat => "unsupported_object_format",
            Code::StateCheckedOut => "state_checked_out",
            Code::StateLocked => "state_locked",
            Code::GitFailed => "git_failed",
            Code::InvalidInput => "invalid_input",
            Code::AgentFailed => "agent_failed",
            Code::Interrupted => "interrupted",
        }
    }

    /// 1 refused by a rule, 2 usage (bad input: also an id that names no
    /// todo, or several), 3 repository or state problem; 130 (128 + SIGINT,
    /// as shells report it) for a run ended by a signal.
    pub fn exit_code(self) -> i32 {
        match self {
            Code::Interrupted => 130,
            Code::InvalidInput | Code::TodoNotFound | Code::AmbiguousId => 2,
            Code::StateMissing
            | Code::StateInvalid
            | Code::NotARepo
            | Code::DubiousOwnership
            | Code::UnsupportedRefStorage
            | Code::UnsupportedObjectFormat
            | Code::StateCheckedOut
            | Code::StateLocked
            | Code::GitFailed => 3,
            _ => 1,
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A request the rules refuse: bad input, or an operation the state forbids.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub code: Code,
    pub message: String,
    pub hint: Option<String>,
}

impl Refusal {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Refusal {
            code,
            message: message.into(),
            hint: None,
        }
    }

    pub fn invalid_input(message: impl Into<String>) -> Self {
        Refusal::new(Code::InvalidInput, message)
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Refusal {}
