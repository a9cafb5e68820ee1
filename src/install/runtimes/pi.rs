//! Pi: an extension of ours, `.pi/extensions/loopx.ts` (Pi's extension
//! API). It runs the bash tool with the agent's identity in its
//! environment, hands the session its turn before the agent starts, and,
//! when a turn of the agent ends with no tool call, asks `git loopx hook pi
//! stop` and queues the next turn's prompt as a follow-up while it says
//! block. Pi has no sandbox and no permission prompts.

use super::{owned, File, Site};
use crate::install::Kind;
use crate::model::runtime::Runtime;

pub const EXTENSION: &str = include_str!("../../../hooks/pi/loopx.ts");

pub fn files(site: &Site) -> Vec<File> {
    vec![File {
        path: site.root.join(".pi/extensions/loopx.ts"),
        kind: Kind::Owned {
            text: owned(EXTENSION, Runtime::Pi, site.baked),
        },
    }]
}
