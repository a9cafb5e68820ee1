//! The `git-loopx` binary: logging, the CLI, and the exit status.
#![forbid(unsafe_code)]

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("LOOPX_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .without_time()
        .init();
    std::process::exit(loopx::cli::main(std::env::args_os()));
}
