//! A tool's arguments: the command's own argument struct (`ops::args`),
//! deserialized from the call, then held to the rules clap keeps for the
//! command's flags (`requires`, `conflicts_with`) by parsing the call as
//! the command line it would be.
//!
//! Invariants: a call is refused before its tool runs, by the same rules
//! and in the same words as the command line; a field is the flag whose id
//! it has (its long flag, or its place as a positional).

use rmcp::handler::server::common::FromContextPart;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::JsonObject;
use rmcp::ErrorData;
use serde_json::Value;

/// Stands in for rmcp's `Parameters` (the `#[tool]` macro takes the input
/// schema from a parameter of this name): the same schema and
/// deserializer, and then the command's flag rules.
pub struct Parameters<T>(pub T);

impl<T: schemars::JsonSchema> schemars::JsonSchema for Parameters<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        T::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }
}

impl<S, T> FromContextPart<ToolCallContext<'_, S>> for Parameters<T>
where
    T: serde::de::DeserializeOwned + clap::Args,
{
    fn from_context_part(context: &mut ToolCallContext<S>) -> Result<Self, ErrorData> {
        let arguments = context.arguments.take().unwrap_or_default();
        // The prefix is rmcp's own, which `bad_arguments` takes off.
        let refused = |e: String| {
            ErrorData::invalid_params(format!("failed to deserialize parameters: {e}"), None)
        };
        let value = serde_json::from_value(Value::Object(arguments.clone()))
            .map_err(|e| refused(e.to_string()))?;
        check_rules::<T>(&arguments).map_err(refused)?;
        Ok(Parameters(value))
    }
}

/// Parses `arguments` with clap as the command line of `T`'s flags: a
/// field `f` becomes `--f=VALUE` (once per value of a list, bare for
/// `true`, nothing for `false` or null), a positional comes after `--`.
/// Values were typed by serde already; what is left to fail are the rules
/// between flags.
fn check_rules<T: clap::Args>(arguments: &JsonObject) -> Result<(), String> {
    let command = T::augment_args(clap::Command::new("tool"))
        .no_binary_name(true)
        .disable_help_flag(true)
        .color(clap::ColorChoice::Never);
    let text = |value: &Value| match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut line = Vec::new();
    let mut positionals = Vec::new();
    for (field, value) in arguments {
        let arg = command
            .get_arguments()
            .find(|a| a.get_id() == field.as_str())
            .ok_or_else(|| format!("`{field}` is not a flag of this command"))?;
        match (value, arg.get_long()) {
            (Value::Null | Value::Bool(false), _) => {}
            (Value::Bool(true), Some(long)) => line.push(format!("--{long}")),
            (Value::Array(items), Some(long)) => {
                line.extend(items.iter().map(|v| format!("--{long}={}", text(v))));
            }
            (value, Some(long)) => line.push(format!("--{long}={}", text(value))),
            (value, None) => positionals.push((arg.get_index(), text(value))),
        }
    }
    positionals.sort();
    line.push("--".to_owned());
    line.extend(positionals.into_iter().map(|(_, value)| value));
    command.try_get_matches_from(line).map(drop).map_err(|e| {
        // "error: WHAT\n  DETAIL\n\nUsage: …": what and detail, on one line.
        let rendered = e.render().to_string();
        let what = rendered.split("\n\n").next().unwrap_or_default();
        let what = what.strip_prefix("error: ").unwrap_or(what);
        what.split_whitespace().collect::<Vec<_>>().join(" ")
    })
}
