//! `git loopx init`

use crate::cli::Output;
use crate::ops::init;
use crate::render;
use crate::session::Context;
use crate::Result;

pub use init::InitArgs as Args;

pub fn run(ctx: &Context, args: &Args) -> Result<Output> {
    let report = init::init(ctx, args)?;
    crate::ops::repos::register(ctx);
    let text = render::text::init(&report);
    Ok(Output::new(report, text))
}
