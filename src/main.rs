//! The `git-loopx` binary: logging, the CLI, and the exit status.
#![forbid(unsafe_code)]

fn main() {
    // Log lines are for whoever asks (`LOOPX_LOG`, else `RUST_LOG`): what a
    // user must know is printed by the CLI itself. Unasked, no subscriber is
    // set up at all (its registry and filter cost every command a few
    // dozen page faults).
    let filter = tracing_subscriber::EnvFilter::try_from_env("LOOPX_LOG")
        .or_else(|_| tracing_subscriber::EnvFilter::try_from_env("RUST_LOG"));
    if let Ok(filter) = filter {
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .without_time()
            .init();
    }
    std::process::exit(loopx::cli::main(std::env::args_os()));
}
