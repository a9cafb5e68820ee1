//! The crate's error: a refusal by a rule, a repository/state problem, or bad
//! usage. [`Error::code`] decides the exit status in one place.

use crate::model::{Code, Refusal};
use crate::store;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error(transparent)]
    Store(#[from] store::Error),
}

impl Error {
    pub fn code(&self) -> Code {
        match self {
            Error::Refused(r) => r.code,
            Error::Store(e) => e.code(),
        }
    }

    pub fn exit_code(&self) -> i32 {
        self.code().exit_code()
    }

    pub fn hint(&self) -> Option<String> {
        match self {
            Error::Refused(r) => r.hint.clone(),
            Error::Store(e) => e.hint(),
        }
    }

    pub fn invalid_input(message: impl Into<String>) -> Self {
        Error::Refused(Refusal::invalid_input(message))
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
