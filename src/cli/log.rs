//! `git loopx log`

use crate::cli::Output;
use crate::ops::{log, Context};
use crate::render;
use crate::Result;

pub use log::LogArgs as Args;

pub fn run(ctx: &Context, args: &Args) -> Result<Output> {
    let report = log::log(ctx, args)?;
    Ok(Output::new(&report, render::text::log(&report)))
}
