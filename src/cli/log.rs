//! `git loopx log`

use crate::cli::Output;
use crate::ops::log;
use crate::render;
use crate::session::Context;
use crate::Result;

pub use log::LogArgs as Args;

pub fn run(ctx: &Context, args: &Args) -> Result<Output> {
    let report = log::log(ctx, args)?;
    let text = render::text::log(&report);
    Ok(Output::new(report, text))
}
