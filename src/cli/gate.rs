//! `git loopx gate …`

use clap::Subcommand;

use crate::cli::Output;
use crate::model::Decision;
use crate::ops::gate;
use crate::session::Context;
use crate::Result;

/// Questions only a human may answer (gates).
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: GateCommand,
}

#[derive(Debug, Subcommand)]
enum GateCommand {
    /// Ask a question; every agent sees it unless --blocks-agent names one.
    Add(gate::AddArgs),
    /// Answer a gate.
    #[command(group(clap::ArgGroup::new("decision").required(true).args(["approve", "reject", "cancel"])))]
    Resolve {
        /// The gate: its id or a unique prefix of one.
        id: String,
        /// Answer yes: the work it holds may go on.
        #[arg(long)]
        approve: bool,
        /// Answer no.
        #[arg(long)]
        reject: bool,
        /// Withdraw the question unanswered.
        #[arg(long)]
        cancel: bool,
        /// Why, for the record.
        #[arg(long, value_name = "TEXT")]
        note: Option<String>,
    },
    /// Open gates (all with --all).
    List {
        /// Include resolved and cancelled gates.
        #[arg(long)]
        all: bool,
    },
    /// The keys whose signed resolutions count (the `gate_signers` policy).
    ///
    /// Once a key is added, a gate resolution counts only when its state
    /// commit is signed by a gate signer, and a change to the list only when
    /// signed by a current one. Git signs with your `user.signingkey`
    /// (`gpg.format ssh`). See docs/gates.md.
    Signers {
        #[command(subcommand)]
        command: SignersCommand,
    },
}

#[derive(Debug, Subcommand)]
enum SignersCommand {
    /// Add a signing key: an ssh public key, or the path of a `.pub` file.
    Add {
        /// An ssh public key (`ssh-ed25519 AAAA… comment`), or a `.pub` file's path.
        key: String,
    },
    /// Remove a signing key (the key, its `.pub` file, or its comment).
    Remove {
        /// The key, the path of its `.pub` file, or its comment.
        key: String,
    },
    /// The keys in effect (and loopx.yaml's list, when a change did not take effect).
    List,
    /// Set up signed answers in one step: pick your ssh key, set git to
    /// sign with it here, and make it a gate signer.
    ///
    /// The key is --key, else git's user.signingkey (gpg.format ssh), else
    /// the first of ~/.ssh/id_ed25519_sk.pub, id_ecdsa_sk.pub,
    /// id_ed25519.pub, id_ecdsa.pub. A key whose private file opens with no
    /// passphrase is refused: an agent running as you could sign with it.
    /// Run it again on each machine you answer from (it adds the key once).
    Setup {
        /// The public key file (or the private key beside it).
        #[arg(long, value_name = "FILE")]
        key: Option<String>,
        /// Accept a key with no passphrase (it then stops only agents whose
        /// sandbox cannot read it).
        #[arg(long)]
        allow_unprotected: bool,
    },
}

pub fn run(ctx: &Context, args: &Args) -> Result<Output> {
    match &args.command {
        GateCommand::Add(a) => {
            let r = gate::add(ctx, a)?;
            let text = format!("gate {}: {}\n", r.gate.id, r.gate.text);
            Ok(Output::new(r, text))
        }
        GateCommand::Resolve {
            id,
            approve,
            reject,
            cancel: _,
            note,
        } => {
            let decision = if *approve {
                Decision::Approve
            } else if *reject {
                Decision::Reject
            } else {
                Decision::Cancel
            };
            let r = gate::resolve(ctx, id, decision, note.as_deref())?;
            let mut text = format!(
                "gate {} resolved: {}\n",
                r.gate.id,
                crate::ops::snake(&decision)
            );
            if let Some(t) = &r.unblocked {
                text.push_str(&format!(
                    "{} is now {}\n",
                    t.id,
                    crate::model::status_name(t.status)
                ));
            }
            Ok(Output::new(r, text))
        }
        GateCommand::Signers {
            command:
                SignersCommand::Setup {
                    key,
                    allow_unprotected,
                },
        } => {
            let r = crate::ops::signers::setup(ctx, key.as_deref(), *allow_unprotected)?;
            let text = setup_text(&r);
            Ok(Output::new(r, text))
        }
        GateCommand::Signers { command } => {
            use crate::ops::signers;
            let r = match command {
                SignersCommand::Add { key } => signers::change(ctx, true, key)?,
                SignersCommand::Remove { key } => signers::change(ctx, false, key)?,
                SignersCommand::List => signers::list(ctx)?,
                SignersCommand::Setup { .. } => unreachable!("matched above"),
            };
            let mut text = String::new();
            if r.effective.is_empty() {
                text.push_str("no gate signers: a person's resolution counts unsigned\n");
            }
            for k in &r.effective {
                text.push_str(&format!("{k}\n"));
            }
            if matches!(command, SignersCommand::List) && r.in_file != r.effective {
                text.push_str(
                    "loopx.yaml lists other keys, set by a commit no gate signer signed: not in effect\n",
                );
            }
            Ok(Output::new(r, text))
        }
        GateCommand::List { all } => {
            let r = gate::list(ctx, *all)?;
            let mut text = String::new();
            for g in &r.gates {
                text.push_str(&format!("{}  [{}] {}", g.id, g.scope_label, g.question));
                let ignored = r.ignored_answers.iter().find(|a| a.gate == g.id);
                if let Some(a) = ignored {
                    text.push_str(&format!(
                        "\n    {}\n    it does not count: the gate waits for your signed answer",
                        a.sentence()
                    ));
                } else if let Some(d) = g.decision {
                    text.push_str(&format!(
                        "  ({} by {}{})",
                        crate::ops::snake(&d),
                        g.resolved_by.as_deref().unwrap_or("(not recorded)"),
                        g.resolved_at
                            .map(|t| format!(" at {t}"))
                            .unwrap_or_default()
                    ));
                }
                text.push('\n');
            }
            if r.gates.is_empty() {
                text.push_str("no open gates\n");
            }
            Ok(Output::new(r, text))
        }
    }
}

fn setup_text(r: &crate::ops::signers::SetupReport) -> String {
    use crate::ops::signers::Protection;
    let mut text = format!("signing key: {} ({})\n", r.key_file.display(), r.key);
    text.push_str(match r.protection {
        Protection::Touch => "protected by: a touch of the FIDO device for every signature\n",
        Protection::Passphrase => "protected by: its passphrase\n",
        Protection::None => "protected by: nothing (no passphrase)\n",
        Protection::AgentOnly => "held by: your ssh-agent only\n",
    });
    if r.configured.is_empty() {
        text.push_str("git config: already signs with it here\n");
    } else {
        text.push_str(&format!("git config set: {}\n", r.configured.join(", ")));
    }
    match (&r.commit, r.added) {
        (Some(c), true) => text.push_str(&format!(
            "gate signers: {} key(s); added in {}, signed by this key\n",
            r.effective.len(),
            c.short()
        )),
        _ => text.push_str(&format!(
            "gate signers: {} key(s); this key already is one\n",
            r.effective.len()
        )),
    }
    for w in &r.warnings {
        text.push_str(&format!("warning: {w}\n"));
    }
    text.push_str(
        "an answer to a gate now counts only in a commit a gate signer signed; others are shown as ignored\n",
    );
    text
}
