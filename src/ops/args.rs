//! What the commands' arguments have in common.
//!
//! A command's arguments are one struct, beside its use case
//! (`lease::ClaimArgs`, `writeback::WritebackArgs`, …), for both front
//! ends: clap's `Args` makes it the command's flags, serde's `Deserialize`
//! and (with the `mcp` feature) schemars' `JsonSchema` the arguments of the
//! MCP tool of the same meaning. A field's doc comment is its `--help` text
//! and its schema description; its name is the tool's field and the flag's
//! id, and its long flag is the field name in kebab case, or for a
//! repeatable flag its singular (`artifacts` is `--artifact`).
//!
//! Invariants: every such struct refuses unknown fields, and a field the
//! tool does not take (`todo release --force`, `diff --markdown`) is
//! `#[serde(skip)]`, which leaves it out of the schema too. Which flags go
//! together and which exclude each other is said once, in clap's terms
//! (`requires`, `conflicts_with`): the MCP server holds a call to them by
//! parsing it as the command line it would be (`mcp::params`). A value is
//! parsed by one function for both: a duration by [`Seconds`], a model enum
//! by its serde name ([`enum_arg`]).

use crate::model::parse_duration;

/// A duration as a flag or a tool argument writes it (`90s`, `30m`, `2h`,
/// `1d`, or bare seconds), in seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(try_from = "String")]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema), schemars(inline))]
pub struct Seconds(pub i64);

impl std::str::FromStr for Seconds {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        parse_duration(text)
            .map(Seconds)
            .ok_or_else(|| format!("`{text}` is not a duration like 90s, 30m, 2h"))
    }
}

impl TryFrom<String> for Seconds {
    type Error = String;

    fn try_from(text: String) -> Result<Self, String> {
        text.parse()
    }
}

/// Parses a snake_case value of a model enum (its serde name): clap's
/// parser for such a flag, and what serde does with the tool's field.
pub fn enum_arg<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, String> {
    serde_json::from_value(serde_json::Value::String(text.to_owned())).map_err(|e| {
        let msg = e.to_string();
        match msg.split_once(", expected ") {
            // serde says "one of `a`, `b`, `c`" or "`a` or `b`"; a person
            // reads "one of a, b, c".
            Some((_, expected)) => format!(
                "`{text}` is not one of {}",
                expected
                    .strip_prefix("one of ")
                    .unwrap_or(expected)
                    .replace("` or `", ", ")
                    .replace('`', "")
            ),
            None => msg,
        }
    })
}
