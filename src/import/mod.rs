//! The LoopX importer: reads a LoopX 2.x project's state files
//! (`source`) and maps them onto git-loopx's entities (`map`), with what it
//! could not bring over. It neither opens the repository nor writes: the
//! `import loopx` use case (`ops::import`) writes the plan through the
//! normal write path.

mod map;
mod source;

pub use map::{origin, plan, Plan, Skipped};
pub use source::read;
