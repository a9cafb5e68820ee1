//! The `git-loopx` binary: logging, the CLI, and the exit status.
#![forbid(unsafe_code)]

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            // Log lines are for whoever asks (`LOOPX_LOG`, else `RUST_LOG`):
            // what a user must know is printed by the CLI itself.
            tracing_subscriber::EnvFilter::try_from_env("LOOPX_LOG")
                .or_else(|_| tracing_subscriber::EnvFilter::try_from_env("RUST_LOG"))
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("off")),
        )
        .with_writer(std::io::stderr)
        .without_time()
        .init();
    std::process::exit(loopx::cli::main(std::env::args_os()));
}
