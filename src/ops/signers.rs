//! The `gate_signers` policy (docs/gates.md): which gate resolutions count.
//!
//! The policy in effect at a state commit C (`effective`) follows C's first
//! parent P: unchanged when C leaves `gate_signers` as P had it; otherwise
//! C's list takes effect only when P had no policy in effect, when a merge
//! brings it from a parent where it was in effect, or when C is signed by a
//! key of P's policy. So a hand-made commit that drops or replaces the list
//! without a signer's key changes nothing.
//!
//! A resolution counts when the policy in effect at the tip is empty, when
//! the commit that made it (`resolving_commit`) came before any policy, or
//! when that commit is signed by a key of the policy in effect at its
//! parent. Everything is cached host-locally under `.git/loopx/gates/`
//! (by commit id, and by the gate file's content), so `should-run` spawns
//! no `git` once a state has been seen.

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::model::{Code, Refusal, State, Todo, TodoClass, TodoStatus};
use crate::session::Context;
use crate::store::Oid;
use crate::Result;

/// How many commits' policies the host-local cache keeps.
const POLICY_CACHE: usize = 128;

fn dir(ctx: &Context) -> PathBuf {
    ctx.store.common_dir().join("loopx").join("gates")
}

fn hash(text: &str) -> String {
    sha1_smol::Sha1::from(text).digest().to_string()
}

/// A key as compared: its type and base64 body, without the comment.
pub fn key_body(key: &str) -> String {
    key.split_whitespace().take(2).collect::<Vec<_>>().join(" ")
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Entry {
    commit: String,
    /// `gate_signers` as the commit's loopx.yaml has it.
    file: Vec<String>,
    /// The policy in effect at the commit.
    effective: Vec<String>,
}

fn load_cache(ctx: &Context) -> Vec<Entry> {
    std::fs::read(dir(ctx).join("policy.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

fn save_cache(ctx: &Context, mut entries: Vec<Entry>) {
    let cut = entries.len().saturating_sub(POLICY_CACHE);
    entries.drain(..cut);
    let d = dir(ctx);
    let tmp = d.join(format!("policy.json.{}.tmp", std::process::id()));
    if std::fs::create_dir_all(&d).is_ok()
        && serde_json::to_vec(&entries)
            .ok()
            .is_some_and(|b| std::fs::write(&tmp, b).is_ok())
    {
        let _ = std::fs::rename(&tmp, d.join("policy.json"));
    }
}

/// `gate_signers` in loopx.yaml at `commit`.
fn file_signers(ctx: &Context, commit: &Oid) -> Result<Vec<String>> {
    let Some(bytes) = ctx.store.read_file(commit, crate::codec::META_PATH)? else {
        return Ok(Vec::new());
    };
    let meta: crate::model::Meta =
        crate::codec::decode(crate::codec::META_PATH, &bytes).map_err(|source| {
            crate::store::Error::Corrupt {
                commit: commit.clone(),
                source,
            }
        })?;
    Ok(meta.gate_signers)
}

/// The policy in effect at `commit` (empty: none).
pub fn effective(ctx: &Context, commit: &Oid) -> Result<Vec<String>> {
    let mut cache = load_cache(ctx);
    let known = cache.len();
    let found = entry(ctx, &mut cache, commit)?;
    if cache.len() != known {
        save_cache(ctx, cache);
    }
    Ok(found.effective)
}

fn entry(ctx: &Context, cache: &mut Vec<Entry>, commit: &Oid) -> Result<Entry> {
    if let Some(e) = cache.iter().find(|e| e.commit == commit.0) {
        return Ok(e.clone());
    }
    // The first-parent chain back to a commit whose policy is known.
    let mut chain = Vec::new();
    let mut base = None;
    let mut next = Some(commit.clone());
    // Usually the parent is known (the tip before the last write).
    let mut chunk = 2;
    'walk: while let Some(from) = next.take() {
        let infos = ctx.store.first_parent_log(&from, chunk)?;
        chunk = 64;
        for info in infos {
            if let Some(e) = cache.iter().find(|e| e.commit == info.id.0) {
                base = Some(e.clone());
                break 'walk;
            }
            next = info.parents.first().cloned();
            chain.push(info);
        }
    }
    let mut parent = base;
    for info in chain.into_iter().rev() {
        let file = file_signers(ctx, &info.id)?;
        let effective = match &parent {
            None => file.clone(),
            Some(p) if file == p.file => p.effective.clone(),
            Some(p) if file == p.effective || p.effective.is_empty() => file.clone(),
            Some(p) => {
                let mut took = false;
                for other in info.parents.iter().skip(1) {
                    if entry(ctx, cache, other)?.effective == file {
                        took = true;
                        break;
                    }
                }
                if took || signed_by_any(ctx, &info.id, &p.effective)? {
                    file.clone()
                } else {
                    p.effective.clone()
                }
            }
        };
        let e = Entry {
            commit: info.id.0.clone(),
            file,
            effective,
        };
        cache.push(e.clone());
        parent = Some(e);
    }
    parent.ok_or_else(|| Refusal::new(Code::StateInvalid, "empty state history").into())
}

/// Whether `commit` is signed by one of `keys` (cached by commit and keys).
pub fn signed_by_any(ctx: &Context, commit: &Oid, keys: &[String]) -> Result<bool> {
    let body = keys
        .iter()
        .map(|k| format!("* {}\n", key_body(k)))
        .collect::<String>();
    let set = hash(&body);
    let d = dir(ctx);
    let marker = d.join("verified").join(format!("{}-{set}", commit.0));
    if let Ok(v) = std::fs::read_to_string(&marker) {
        return Ok(v == "1");
    }
    std::fs::create_dir_all(d.join("verified"))
        .map_err(|e| crate::Error::invalid_input(format!("{}: {e}", d.display())))?;
    let allowed = d.join(format!("allowed-signers-{set}"));
    if !allowed.exists() {
        std::fs::write(&allowed, &body)
            .map_err(|e| crate::Error::invalid_input(format!("{}: {e}", allowed.display())))?;
    }
    let ok =
        crate::git_cmd::signing::signed_by(ctx.repo_dir(), &commit.0, &allowed).map_err(|e| {
            Refusal::new(
                Code::GitFailed,
                format!("checking {commit}'s signature: {e}"),
            )
        })?;
    let _ = std::fs::write(&marker, if ok { "1" } else { "0" });
    Ok(ok)
}

/// The gates of the selected goal whose resolution does not count: resolved
/// (done) at `tip`, but not by a commit a gate signer signed.
pub fn unsigned_resolutions(ctx: &Context, tip: &Oid, state: &State) -> Result<BTreeSet<String>> {
    unsigned_resolutions_of(ctx, tip, state, &ctx.goal(state)?.goal.id)
}

/// [`unsigned_resolutions`] of the goal `goal`.
pub fn unsigned_resolutions_of(
    ctx: &Context,
    tip: &Oid,
    state: &State,
    goal: &str,
) -> Result<BTreeSet<String>> {
    Ok(judge(ctx, tip, state, goal)?
        .into_iter()
        .map(|(id, _)| id)
        .collect())
}

/// An answer to a gate that does not count (the person is shown it as
/// ignored): what it said, in whose name, when, and the commit that made it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct IgnoredAnswer {
    pub gate: String,
    pub question: String,
    pub decision: Option<crate::model::Decision>,
    /// The name the answer claims (`resolved_by`): not proof of anything.
    pub resolved_by: Option<String>,
    pub resolved_at: Option<crate::model::Timestamp>,
    /// The state commit that wrote it.
    pub commit: Oid,
    pub reason: &'static str,
}

impl IgnoredAnswer {
    /// `an answer not made by you was ignored: approve by X at T, commit C
    /// (not signed by a gate signer)`: the one wording of every surface.
    pub fn sentence(&self) -> String {
        let mut out = String::from("an answer not made by you was ignored: ");
        out.push_str(
            &self
                .decision
                .map_or_else(|| "resolved".to_owned(), |d| crate::ops::snake(&d)),
        );
        out.push_str(" by ");
        out.push_str(self.resolved_by.as_deref().unwrap_or("(not recorded)"));
        if let Some(at) = self.resolved_at {
            out.push_str(&format!(" at {at}"));
        }
        out.push_str(&format!(
            ", commit {} ({})",
            self.commit.short(),
            self.reason
        ));
        out
    }
}

/// Why an answer is ignored, as every surface says it.
pub const IGNORED_REASON: &str = "not signed by a gate signer";

/// [`IgnoredAnswer`]s of the goal `goal` at `tip`: empty without a policy.
pub fn ignored_answers_of(
    ctx: &Context,
    tip: &Oid,
    state: &State,
    goal: &str,
) -> Result<Vec<IgnoredAnswer>> {
    let gs = &state.goals[goal];
    Ok(judge(ctx, tip, state, goal)?
        .into_iter()
        .map(|(id, commit)| {
            let gate = &gs.todos[&id];
            IgnoredAnswer {
                question: gate.text.clone(),
                decision: gate.decision,
                resolved_by: gate.resolved_by.clone(),
                resolved_at: gate.resolved_at,
                commit,
                reason: IGNORED_REASON,
                gate: id,
            }
        })
        .collect())
}

/// [`ignored_answers_of`] every goal at `tip`.
pub fn ignored_answers_all(ctx: &Context, tip: &Oid, state: &State) -> Result<Vec<IgnoredAnswer>> {
    let mut out = Vec::new();
    for goal in state.goals.keys() {
        out.extend(ignored_answers_of(ctx, tip, state, goal)?);
    }
    Ok(out)
}

/// The resolved gates of `goal` whose resolution does not count, each with
/// the commit that made it.
fn judge(ctx: &Context, tip: &Oid, state: &State, goal: &str) -> Result<Vec<(String, Oid)>> {
    let gs = &state.goals[goal];
    let resolved: Vec<&str> = gs
        .todos
        .all_facts()
        .filter(|t| t.class == TodoClass::UserGate && t.status == TodoStatus::Done)
        .map(|t| t.id)
        .collect();
    let mut out = Vec::new();
    // No resolved gate, nothing to judge: the signer policy (whose first
    // reading walks the state's history back to a commit it knows) is not
    // asked for.
    if resolved.is_empty() || effective(ctx, tip)?.is_empty() {
        return Ok(out);
    }
    // Verdicts by the gate's content (its canonical encoding): the same
    // resolution is judged once, whatever commit it is read at. A line is
    // `<key> 1`, or `<key> 0 <commit>` for one that does not count.
    let file = dir(ctx).join("resolutions");
    let known = std::fs::read_to_string(&file).unwrap_or_default();
    let mut added = String::new();
    for id in resolved {
        let gate = &gs.todos[id];
        let key = sha1_smol::Sha1::from(crate::codec::encode(gate))
            .digest()
            .to_string();
        let cached = known.lines().find_map(|l| {
            let mut words = l.strip_prefix(key.as_str())?.split_whitespace();
            match (words.next()?, words.next()) {
                ("1", _) => Some(None),
                ("0", Some(commit)) => Some(Some(Oid(commit.to_owned()))),
                _ => None,
            }
        });
        let verdict = match cached {
            Some(v) => v,
            None => {
                let path = crate::codec::todo_path(gate);
                let Some(bytes) = ctx.store.read_file(tip, &path)? else {
                    continue;
                };
                let (counts, commit) = resolution_counts(ctx, tip, &path, &bytes)?;
                let verdict = (!counts).then_some(commit);
                match &verdict {
                    None => added.push_str(&format!("{key} 1\n")),
                    Some(c) => added.push_str(&format!("{key} 0 {c}\n")),
                }
                verdict
            }
        };
        if let Some(commit) = verdict {
            out.push((id.to_owned(), commit));
        }
    }
    if !added.is_empty() {
        use std::io::Write as _;
        let _ = std::fs::create_dir_all(dir(ctx));
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&file)
        {
            let _ = f.write_all(added.as_bytes());
        }
    }
    Ok(out)
}

/// Whether the commit that wrote `bytes` at `path` (walking back from `tip`
/// while a parent still holds them) was made before any policy, or signed
/// by a key of the policy in effect at its parent; and that commit.
fn resolution_counts(ctx: &Context, tip: &Oid, path: &str, bytes: &[u8]) -> Result<(bool, Oid)> {
    let mut cur = tip.clone();
    let parent = loop {
        let info = ctx.store.first_parent_log(&cur, 1)?.remove(0);
        let mut older = None;
        for p in &info.parents {
            if ctx.store.read_file(p, path)?.as_deref() == Some(bytes) {
                older = Some(p.clone());
                break;
            }
        }
        match older {
            Some(p) => cur = p,
            None => break info.parents.first().cloned(),
        }
    };
    let Some(parent) = parent else {
        return Ok((true, cur));
    };
    let keys = effective(ctx, &parent)?;
    let counts = keys.is_empty() || signed_by_any(ctx, &cur, &keys)?;
    Ok((counts, cur))
}

/// Puts the gates of `ids` back to open in `state` (a read-only view), and
/// returns them as they were, for [`restore`].
pub fn reopen(state: &mut State, goal: &str, ids: &BTreeSet<String>) -> Vec<Todo> {
    let mut saved = Vec::new();
    if ids.is_empty() {
        return saved;
    }
    let Some(gs) = state.goals.get_mut(goal) else {
        return saved;
    };
    for id in ids {
        if let Some(t) = gs.todos.get_mut(id) {
            saved.push(t.clone());
            t.status = TodoStatus::Open;
        }
    }
    saved
}

/// Undoes [`reopen`] (inside a transaction, before anything is written).
pub fn restore(state: &mut State, goal: &str, saved: Vec<Todo>) {
    if let Some(gs) = state.goals.get_mut(goal) {
        for t in saved {
            gs.todos.insert(t.id.clone(), t);
        }
    }
}

/// What `signers list` shows: the policy in effect and the one loopx.yaml
/// holds, when they differ (a change that did not take effect).
#[derive(Debug, serde::Serialize)]
pub struct SignersReport {
    pub effective: Vec<String>,
    pub in_file: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<Oid>,
}

pub fn list(ctx: &Context) -> Result<SignersReport> {
    let (tip, state) = ctx.load()?;
    Ok(SignersReport {
        effective: effective(ctx, &tip)?,
        in_file: state.meta.gate_signers.clone(),
        commit: None,
    })
}

/// A public key from the command line: the key itself, or a `.pub` file.
fn read_key(arg: &str) -> Result<String> {
    let text = match std::fs::read_to_string(arg) {
        Ok(t) => t.lines().next().unwrap_or("").trim().to_owned(),
        Err(_) => arg.trim().to_owned(),
    };
    let mut words = text.split_whitespace();
    let (kind, body) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let known = kind.starts_with("ssh-")
        || kind.starts_with("ecdsa-sha2-")
        || kind.starts_with("sk-ssh-")
        || kind.starts_with("sk-ecdsa-");
    let base64 = !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='));
    if !known || !base64 {
        return Err(Refusal::invalid_input(format!(
            "`{arg}` is not an ssh public key (`ssh-ed25519 AAAA… [comment]`) or a file holding one"
        ))
        .into());
    }
    Ok(text.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// `gate signers add KEY` / `remove KEY`: a new policy, built on the one in
/// effect and committed signed by the person's key.
pub fn change(ctx: &Context, add: bool, key: &str) -> Result<SignersReport> {
    ctx.person_moves(crate::session::PersonRef::Signers)?;
    let (tip, _) = ctx.load()?;
    let mut keys = effective(ctx, &tip)?;
    let word = if add { "add" } else { "remove" };
    if add {
        let new = read_key(key)?;
        if keys.iter().any(|k| key_body(k) == key_body(&new)) {
            return Err(Refusal::invalid_input("that key is already a gate signer").into());
        }
        keys.push(new);
    } else {
        let before = keys.len();
        let target = read_key(key).map(|k| key_body(&k)).ok();
        keys.retain(|k| {
            let comment = k.split_whitespace().nth(2);
            !(Some(key_body(k)) == target || comment == Some(key))
        });
        if keys.len() == before {
            return Err(Refusal::invalid_input(format!("`{key}` is not a gate signer")).into());
        }
    }
    let done = crate::session::signed::mutate_signed(ctx, |state, _| {
        state.meta.gate_signers = keys.clone();
        let message = crate::store::Message::new(
            "gate signers",
            format!("gate signers {word}: {} key(s)", keys.len()),
        );
        Ok(((), message))
    })?;
    Ok(SignersReport {
        effective: keys,
        in_file: Vec::new(),
        commit: done.commit,
    })
}

pub use crate::git_cmd::signing::Protection;

/// What `gate signers setup` did.
#[derive(Debug, serde::Serialize)]
pub struct SetupReport {
    /// The public key, as gate_signers lists it.
    pub key: String,
    pub key_file: PathBuf,
    pub protection: crate::git_cmd::signing::Protection,
    /// An ssh-agent (`SSH_AUTH_SOCK`) holds the key.
    pub in_ssh_agent: bool,
    /// The git config this run set (`key=value`), in the repository.
    pub configured: Vec<String>,
    /// The key became a gate signer now (false: it already was one).
    pub added: bool,
    /// The policy in effect afterwards.
    pub effective: Vec<String>,
    /// The signed commit that added it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<Oid>,
    /// What still lets a process running as you sign with it.
    pub warnings: Vec<String>,
}

/// The keys `setup` looks for under `~/.ssh`, best first: FIDO keys (a
/// touch for every signature), then the usual ones.
const DEFAULT_KEYS: [&str; 4] = [
    "id_ed25519_sk.pub",
    "id_ecdsa_sk.pub",
    "id_ed25519.pub",
    "id_ecdsa.pub",
];

fn expand_home(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(path),
    }
}

/// The public key file `setup` uses: `--key` (a `.pub` file, or the
/// private one beside it), else git's `user.signingkey` under `gpg.format
/// ssh`, else the first of [`DEFAULT_KEYS`] in `~/.ssh`.
fn find_key(ctx: &Context, given: Option<&str>) -> Result<PathBuf> {
    let make = "make one an agent running as you cannot use: `ssh-keygen -t ed25519-sk` \
                (a FIDO key: every signature needs your touch), or `ssh-keygen -t ed25519 \
                -f ~/.ssh/loopx_gates` with a passphrase; then \
                `git loopx gate signers setup --key ~/.ssh/loopx_gates.pub`";
    if let Some(given) = given {
        let path = expand_home(given);
        let public = if path.extension().is_some_and(|e| e == "pub") {
            path.clone()
        } else {
            let mut p = path.clone().into_os_string();
            p.push(".pub");
            PathBuf::from(p)
        };
        if !public.is_file() {
            return Err(Refusal::invalid_input(format!(
                "--key {given}: no public key file {}",
                public.display()
            ))
            .with_hint(make)
            .into());
        }
        return Ok(std::path::absolute(&public).unwrap_or(public));
    }
    let ssh = ctx.store.config_string("gpg.format").as_deref() == Some("ssh");
    if let Some(key) = ctx.store.config_string("user.signingkey").filter(|_| ssh) {
        let path = expand_home(key.trim());
        if path.is_file() {
            return Ok(path);
        }
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    for name in DEFAULT_KEYS {
        if let Some(p) = home.as_ref().map(|h| h.join(".ssh").join(name)) {
            if p.is_file() {
                return Ok(p);
            }
        }
    }
    Err(Refusal::invalid_input(
        "no ssh key to sign with: no --key, no user.signingkey (gpg.format ssh), none in ~/.ssh",
    )
    .with_hint(make)
    .into())
}

/// `gate signers setup`: one command that makes the person's answers
/// tamper-evident. It picks the signing key, refuses one that opens with
/// no passphrase (unless `allow_unprotected`), sets git to sign with it in
/// this repository, and adds it to gate_signers in a commit it signs.
pub fn setup(ctx: &Context, key: Option<&str>, allow_unprotected: bool) -> Result<SetupReport> {
    use crate::git_cmd::signing;
    ctx.person_moves(crate::session::PersonRef::Signers)?;
    let (tip, _) = ctx.load()?;
    let file = find_key(ctx, key)?;
    let text = read_key(&file.to_string_lossy())?;
    let body = key_body(&text);
    let protection = signing::protection(&file, &text)
        .map_err(|e| Refusal::new(Code::GitFailed, format!("reading {}: {e}", file.display())))?;
    let in_agent = signing::in_ssh_agent(&body);
    let mut warnings = Vec::new();
    match protection {
        Protection::None if !allow_unprotected => {
            return Err(Refusal::invalid_input(format!(
                "{} opens with no passphrase: a process running as you (an agent's shell) \
                 can sign with it, so its signature proves nothing",
                file.with_extension("").display()
            ))
            .with_hint(
                "give it a passphrase (`ssh-keygen -p -f <key>`), or use a FIDO key \
                 (`ssh-keygen -t ed25519-sk`); --allow-unprotected sets it up anyway, for \
                 agents whose sandbox cannot read the key",
            )
            .into());
        }
        Protection::None => warnings.push(format!(
            "{} has no passphrase: only an agent that cannot read it is stopped",
            file.with_extension("").display()
        )),
        Protection::AgentOnly if !in_agent => {
            return Err(Refusal::invalid_input(format!(
                "{}: no private key beside it, and no ssh-agent holds it: git cannot sign with it",
                file.display()
            ))
            .with_hint("add it to your ssh-agent (`ssh-add -c <key>`), or pass --key <file.pub>")
            .into());
        }
        _ => {}
    }
    if in_agent && protection != Protection::Touch {
        warnings.push(
            "your ssh-agent holds this key: a process that reaches SSH_AUTH_SOCK signs with it \
             without the passphrase, unless you added it with `ssh-add -c` (each use asks you)"
                .to_owned(),
        );
    }
    let mut configured = Vec::new();
    let signing_key = file.to_string_lossy().into_owned();
    for (name, value) in [
        ("gpg.format", "ssh"),
        ("user.signingkey", signing_key.as_str()),
    ] {
        if ctx.store.config_string(name).as_deref() == Some(value) {
            continue;
        }
        let out = crate::git_cmd::run(ctx.repo_dir(), &["config", "--local", name, value])
            .map_err(|e| Refusal::new(Code::GitFailed, format!("git config {name}: {e}")))?;
        if !out.success {
            return Err(Refusal::new(
                Code::GitFailed,
                format!("git config {name}: {}", out.stderr.trim()),
            )
            .into());
        }
        configured.push(format!("{name}={value}"));
    }
    let current = effective(ctx, &tip)?;
    if current.iter().any(|k| key_body(k) == body) {
        return Ok(SetupReport {
            key: text,
            key_file: file,
            protection,
            in_ssh_agent: in_agent,
            configured,
            added: false,
            effective: current,
            commit: None,
            warnings,
        });
    }
    let changed = change(ctx, true, &signing_key)?;
    // The commit that added it must verify as signed by it.
    if let Some(commit) = &changed.commit {
        if !signed_by_any(ctx, commit, std::slice::from_ref(&text))? {
            return Err(Refusal::new(
                Code::GitFailed,
                format!("{commit} was not signed by {}", file.display()),
            )
            .with_hint("check `git config user.signingkey` and `gpg.format`")
            .into());
        }
    }
    Ok(SetupReport {
        key: text,
        key_file: file,
        protection,
        in_ssh_agent: in_agent,
        configured,
        added: true,
        effective: changed.effective,
        commit: changed.commit,
        warnings,
    })
}
