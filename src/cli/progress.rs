//! A progress line on stderr while `todo done` waits for `validate`: shown
//! only when stderr is a terminal, from the first second on, rewritten in
//! place once a second, and erased when the wait ends.

use std::io::{IsTerminal as _, Write as _};
use std::time::Duration;

use crate::ops::done::duration_words;

/// Calls [`Ticker::tick`] with the time waited; prints nothing off a terminal.
pub struct Ticker {
    enabled: bool,
    shown: Option<u64>,
}

impl Ticker {
    pub fn on_stderr() -> Self {
        Ticker {
            enabled: std::io::stderr().is_terminal(),
            shown: None,
        }
    }

    pub fn tick(&mut self, waited: Duration) {
        let secs = waited.as_secs();
        if !self.enabled || secs < 1 || self.shown == Some(secs) {
            return;
        }
        self.shown = Some(secs);
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{}", line(secs));
        let _ = err.flush();
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        if self.shown.is_some() {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}

/// The progress line after `secs` seconds.
pub fn line(secs: u64) -> String {
    format!("validate is running ({})…", duration_words(secs))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_progress_line_says_how_long() {
        assert_eq!(super::line(1), "validate is running (1s)…");
        assert_eq!(super::line(75), "validate is running (1m15s)…");
    }

    #[test]
    fn nothing_is_shown_off_a_terminal_or_before_a_second() {
        let mut off = super::Ticker {
            enabled: false,
            shown: None,
        };
        off.tick(std::time::Duration::from_secs(5));
        assert_eq!(off.shown, None);
        let mut on = super::Ticker {
            enabled: true,
            shown: None,
        };
        on.tick(std::time::Duration::from_millis(900));
        assert_eq!(on.shown, None);
    }
}
