//! The one integration-test binary: drives the real `git-loopx` against real
//! repositories built in temporary directories by [`env::TestEnv`].

mod doctor_rev;
mod domain;
mod env;
mod faults;
mod gates;
mod hook_programs;
mod hooks_install;
mod hostile;
mod kernel;
mod leaks;
mod order;
mod pr;
mod race;
mod reviewing;
mod run;
mod runtimes;
mod scope;
mod state_diff;
mod sync;
mod turn;
mod vocab;
mod workflows;
