//! The one integration-test binary: drives the real `git-loopx` against real
//! repositories built in temporary directories by [`env::TestEnv`].

mod agent_claude;
mod agent_codex;
mod agent_gemini;
mod agent_opencode;
mod agent_pi;
mod agents;
mod ancestry;
mod artifacts;
mod binary_rules;
mod check;
mod codec_rules;
mod decisions;
mod docs_refs;
mod doctor_rev;
mod domain;
mod env;
mod evidence;
mod faults;
mod flags;
mod fleet;
mod fuzz;
mod gate_holds;
mod gates;
mod git_config;
mod governance;
mod handoff;
mod handoff_rules;
mod help;
mod hook_programs;
mod hooks_install;
mod hooks_runtimes;
mod hostile;
#[cfg(feature = "import-loopx")]
mod import;
mod inspect_rules;
mod kernel;
mod layers;
mod layout;
mod leak_corpus;
mod leak_rules;
mod leaks;
mod lease_liveness;
mod lease_refs;
mod lease_rules;
mod mcp;
#[cfg(feature = "mcp")]
mod mcp_rmcp;
#[cfg(feature = "mcp")]
mod mcp_stdio;
#[cfg(feature = "mcp")]
mod mcp_turns;
mod merge_rules;
mod monitor;
mod notify;
mod notify_faults;
// Only a build that leaves a front end out has something to test here.
#[cfg(not(all(feature = "serve", feature = "mcp", feature = "import-loopx")))]
mod not_built;
mod order;
mod ownership;
mod parity;
mod person;
mod person_hints;
mod person_refs;
mod pipeline;
mod pr;
mod proptests;
mod quiet;
mod race;
mod report;
mod repos;
mod repos_hostile;
mod require;
mod retention;
mod retention_rules;
mod reviewing;
mod run;
mod run_escape;
mod runtimes;
mod scope;
#[cfg(feature = "serve")]
mod serve;
#[cfg(feature = "serve")]
mod serve_answer;
#[cfg(feature = "serve")]
mod serve_hostile;
#[cfg(feature = "serve")]
mod serve_page;
#[cfg(feature = "serve")]
mod serve_repos;
mod should_run_rules;
mod signed_answers;
mod sizes;
mod source;
mod state_diff;
mod stored_commands;
mod sync;
mod transports;
mod turn;
mod unattended;
mod validate_rules;
mod vocab;
mod week;
mod workflows;

#[path = "../../examples/support/served.rs"]
mod served;
#[path = "../../examples/support/state.rs"]
mod state;
#[cfg(feature = "serve")]
#[path = "../../examples/support/webdriver.rs"]
mod webdriver;
