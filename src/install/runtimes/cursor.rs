//! Cursor: `sessionStart` and `stop` hooks in the project's
//! `.cursor/hooks.json` (Cursor's hooks file: `{"version": 1, "hooks":
//! {"<event>": [{"command": …}]}}`; a `stop` answer with a
//! `followup_message` continues the agent). Cursor has no setting that
//! reaches its agent's terminal environment, so the identity travels in
//! the prompt's `--agent` and in the hooks' commands.

use serde_json::{json, Value};

use super::{hook_command, File, Site};
use crate::install::json_edit::{Edit, Op};
use crate::install::runtime_json::Syntax;
use crate::install::Kind;
use crate::model::runtime::Runtime;

pub fn files(site: &Site) -> Vec<File> {
    let hook = |event: &str, name: &str| Edit {
        path: vec!["hooks".to_owned(), name.to_owned()],
        op: Op::Union(vec![
            json!({ "command": hook_command(Runtime::Cursor, event, site.baked) }),
        ]),
    };
    vec![File {
        path: site.root.join(".cursor").join("hooks.json"),
        kind: Kind::Json {
            syntax: Syntax::Json,
            template: None,
            prefix: "git loopx hook cursor ",
            edits: vec![
                Edit::set(&["version"], Value::from(1)),
                hook("session-start", "sessionStart"),
                hook("stop", "stop"),
            ],
        },
    }]
}
