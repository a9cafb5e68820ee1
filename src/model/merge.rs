//! Three-way merge of two divergent states (SPEC §5), as a pure function.
//!
//! Entity by entity: a side that did not change an entity yields to the one
//! that did. When both changed it, fields are merged: a field changed on one
//! side is taken; a field changed on both goes to the side with the higher
//! `rev` (ties: the greater value in canonical JSON, so the result does not
//! depend on which side is "ours"), and the value it overwrote is reported.
//! Run records are append-only and simply unioned, and so are the append-only
//! lists inside an entity ([`APPEND_ONLY`]: a todo's `notes`, a run's
//! `artifacts` and `artifact_urls`): changed on both sides, a list becomes the union of both, in
//! a deterministic order, so no added element is lost and nothing is reported.
//! Unknown fields take part like any other. Leases are never merged: when both
//! sides changed a todo's claim, the remote's todo wins whole (its append-only
//! lists still take the union) and the local claimant is told.
//!
//! A gate's resolution (`decision`, `resolved_by`, `resolved_at`) is kept
//! whole: when both sides resolved a gate differently, all three come from
//! the side whose `decision` won (rule `resolution`), so a decision is never
//! credited to the person who took the other one.
//!
//! A todo's `evidence` is one string written by `todo done`, not a list: when
//! both sides changed it, it is a field like any other (the higher `rev`
//! wins, the other value is reported as a conflict).

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::model::tracked::{same, Entities, Facts};
use crate::model::{GoalState, State, Tracked};

/// A value that lost to the other side's, never silently.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Conflict {
    /// The entity (`todo todo_…`, `goal main`, `agent a`, `loopx`).
    pub entity: String,
    pub field: String,
    pub kept: Value,
    pub lost: Value,
    /// `rev`, `tie`, `remote_claim`, `resolution` or `deleted`.
    pub rule: &'static str,
}

/// A local claim that the remote's claim overrode.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LostClaim {
    pub todo: String,
    pub local: Value,
    pub remote: Value,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Merged {
    pub state: State,
    pub conflicts: Vec<Conflict>,
    pub lost_claims: Vec<LostClaim>,
}

fn to_map<T: Serialize>(v: &T) -> Map<String, Value> {
    match serde_json::to_value(v) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

fn rev_of(m: &Map<String, Value>) -> u64 {
    m.get("rev").and_then(Value::as_u64).unwrap_or(0)
}

fn canonical(v: Option<&Value>) -> String {
    v.map_or_else(String::new, |v| v.to_string())
}

/// The append-only lists: (entity kind, field). Nothing removes an element
/// from one of these, so when both sides changed one the merge keeps every
/// element of both.
pub const APPEND_ONLY: &[(&str, &str)] = &[
    ("todo", "notes"),
    ("run", "artifacts"),
    ("run", "artifact_urls"),
];

/// The lists merged as sets, three ways: an element one side added is
/// kept, one a side removed is gone ([`crate::model::retention`]: a new
/// archive replaces the goal's list, and two made at once both stay).
pub const SETS: &[(&str, &str)] = &[("goal", "archive")];

fn is_set(entity: &str, field: &str) -> bool {
    SETS.iter()
        .any(|(kind, f)| *f == field && entity.split(' ').next() == Some(kind))
}

/// The three-way merge of a set-like list: what both sides hold, and what
/// either added since `b`; in canonical order. `None` when empty.
fn merge_set(b: Option<&Value>, l: Option<&Value>, r: Option<&Value>) -> Option<Value> {
    let items = |v: Option<&Value>| -> BTreeMap<String, Value> {
        v.and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|e| (e.to_string(), e.clone()))
            .collect()
    };
    let (b, l, r) = (items(b), items(l), items(r));
    let kept: Vec<Value> = l
        .iter()
        .chain(r.iter())
        .filter(|(k, _)| (l.contains_key(*k) && r.contains_key(*k)) || !b.contains_key(*k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect::<BTreeMap<_, _>>()
        .into_values()
        .collect();
    (!kept.is_empty()).then_some(Value::Array(kept))
}

fn is_append_only(entity: &str, field: &str) -> bool {
    APPEND_ONLY
        .iter()
        .any(|(kind, f)| *f == field && entity.split(' ').next() == Some(kind))
}

/// How elements of the two sides interleave in a merged append-only list:
/// by time, then author, then text (a note's `at`, `agent`, `text`; a
/// string is its own text), then the whole element in canonical JSON — a
/// total order, so the result does not depend on which side is "ours".
fn element_key(v: &Value) -> (String, String, String, String) {
    let field = |k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let text = v.as_str().map_or_else(|| field("text"), str::to_owned);
    (field("at"), field("agent"), text, v.to_string())
}

/// The union of two versions of an append-only list. Every element of
/// either side is kept, as many times as the side that has it most often
/// (an element both sides hold collapses into one; a side's own repeats
/// stay). The common prefix comes first; after it the two sides' elements
/// interleave as in a merge of two sorted runs, comparing the heads by
/// [`element_key`], so each side's own order is kept and the result is the
/// same whichever side is "ours". `None` when both are empty.
fn union(l: Option<&Value>, r: Option<&Value>) -> Option<Value> {
    let empty = Vec::new();
    let l = l.and_then(Value::as_array).unwrap_or(&empty);
    let r = r.and_then(Value::as_array).unwrap_or(&empty);
    let key = |v: &Value| v.to_string();
    // How many of each element the result holds: the larger side's count.
    let mut want: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for v in l {
        want.entry(key(v)).or_default().0 += 1;
    }
    for v in r {
        want.entry(key(v)).or_default().1 += 1;
    }
    let mut have: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = Vec::with_capacity(l.len().max(r.len()));
    let mut emit = |v: &Value| {
        let k = key(v);
        let n = have.entry(k.clone()).or_default();
        let (nl, nr) = want[&k];
        if *n < nl.max(nr) {
            *n += 1;
            out.push(v.clone());
        }
    };
    let prefix = l.iter().zip(r).take_while(|(a, b)| a == b).count();
    l[..prefix].iter().for_each(&mut emit);
    let (mut i, mut j) = (prefix, prefix);
    while i < l.len() && j < r.len() {
        if l[i] == r[j] {
            emit(&l[i]);
            i += 1;
            j += 1;
        } else if element_key(&l[i]) < element_key(&r[j]) {
            emit(&l[i]);
            i += 1;
        } else {
            emit(&r[j]);
            j += 1;
        }
    }
    l[i..].iter().chain(&r[j..]).for_each(&mut emit);
    (!out.is_empty()).then_some(Value::Array(out))
}

/// An append-only list three-way: one side's change is taken as it is; a
/// change on both sides is the union.
fn merge_list(b: Option<&Value>, l: Option<&Value>, r: Option<&Value>) -> Option<Value> {
    if l == r || r == b {
        l.cloned()
    } else if l == b {
        r.cloned()
    } else {
        union(l, r)
    }
}

struct Ctx<'a> {
    conflicts: &'a mut Vec<Conflict>,
    lost_claims: &'a mut Vec<LostClaim>,
    claims: ClaimRule,
}

/// Which side's todo wins when both sides changed its claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClaimRule {
    /// The remote's, always: a local claim not yet on the remote yields.
    Remote,
    /// Between two published heads: the higher epoch (the later grant, as
    /// the remote's lease ref ordered them); equal epochs, the greater
    /// claim in canonical JSON, so the order of the heads does not matter.
    Epoch,
}

/// The epoch a todo (as a JSON map) has handed out.
fn epoch_in(todo: &Map<String, Value>) -> u64 {
    let of = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    of(todo.get("claim").and_then(|c| c.get("epoch"))).max(of(todo.get("last_epoch")))
}

/// Field-level merge of one entity changed on both sides.
fn merge_fields(
    entity: &str,
    base: Option<&Map<String, Value>>,
    l: &Map<String, Value>,
    r: &Map<String, Value>,
    ctx: &mut Ctx<'_>,
) -> Map<String, Value> {
    let empty = Map::new();
    let b = base.unwrap_or(&empty);
    let is_todo = entity.starts_with("todo ");
    let changed = |k: &str, side: &Map<String, Value>| side.get(k) != b.get(k);
    if is_todo && changed("claim", l) && changed("claim", r) && l.get("claim") != r.get("claim") {
        // A lease is never merged: one side's todo wins whole.
        let local_wins = ctx.claims == ClaimRule::Epoch
            && (epoch_in(l), canonical(l.get("claim"))) > (epoch_in(r), canonical(r.get("claim")));
        let (l, r) = if local_wins { (r, l) } else { (l, r) };
        ctx.lost_claims.push(LostClaim {
            todo: entity.trim_start_matches("todo ").to_owned(),
            local: l.get("claim").cloned().unwrap_or(Value::Null),
            remote: r.get("claim").cloned().unwrap_or(Value::Null),
        });
        let changed = |k: &str, side: &Map<String, Value>| side.get(k) != b.get(k);
        let mut out = r.clone();
        for key in l.keys().chain(r.keys()) {
            if is_append_only(entity, key) {
                match merge_list(b.get(key), l.get(key), r.get(key)) {
                    Some(list) => out.insert(key.clone(), list),
                    None => out.remove(key),
                };
                continue;
            }
            if matches!(key.as_str(), "rev" | "updated_at")
                || l.get(key) == r.get(key)
                || !changed(key, l)
            {
                continue;
            }
            if ctx
                .conflicts
                .iter()
                .any(|c| c.entity == entity && c.field == *key)
            {
                continue;
            }
            ctx.conflicts.push(Conflict {
                entity: entity.to_owned(),
                field: key.clone(),
                kept: r.get(key).cloned().unwrap_or(Value::Null),
                lost: l.get(key).cloned().unwrap_or(Value::Null),
                rule: "remote_claim",
            });
        }
        return out;
    }
    let (rl, rr) = (rev_of(l), rev_of(r));
    let mut keys: Vec<&String> = l.keys().chain(r.keys()).chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut out = Map::new();
    for key in keys {
        if matches!(key.as_str(), "rev" | "updated_at") {
            continue;
        }
        let (vb, vl, vr) = (b.get(key), l.get(key), r.get(key));
        if is_append_only(entity, key) {
            if let Some(list) = merge_list(vb, vl, vr) {
                out.insert(key.clone(), list);
            }
            continue;
        }
        if is_set(entity, key) {
            if let Some(list) = merge_set(vb, vl, vr) {
                out.insert(key.clone(), list);
            }
            continue;
        }
        let chosen = if vl == vr || vr == vb {
            vl
        } else if vl == vb {
            vr
        } else {
            let (winner, loser, rule) = if rl != rr {
                if rl > rr {
                    (vl, vr, "rev")
                } else {
                    (vr, vl, "rev")
                }
            } else if canonical(vl) >= canonical(vr) {
                (vl, vr, "tie")
            } else {
                (vr, vl, "tie")
            };
            ctx.conflicts.push(Conflict {
                entity: entity.to_owned(),
                field: key.clone(),
                kept: winner.cloned().unwrap_or(Value::Null),
                lost: loser.cloned().unwrap_or(Value::Null),
                rule,
            });
            winner
        };
        if let Some(v) = chosen {
            out.insert(key.clone(), v.clone());
        }
    }
    if is_todo {
        keep_resolution_whole(entity, b, l, r, &mut out, ctx);
    }
    if l.contains_key("rev") || r.contains_key("rev") {
        out.insert("rev".into(), Value::from(rl.max(rr).saturating_add(1)));
    }
    let newest = [l.get("updated_at"), r.get("updated_at")]
        .into_iter()
        .flatten()
        .max_by_key(|v| canonical(Some(v)));
    if let Some(u) = newest {
        out.insert("updated_at".into(), u.clone());
    }
    out
}

/// The fields of a gate's resolution, which move together.
const RESOLUTION: [&str; 3] = ["decision", "resolved_by", "resolved_at"];

/// When both sides changed a gate's resolution, the field merge may take
/// `decision` from one side and `resolved_by` from the other; take all of
/// them from the side whose `decision` won instead.
fn keep_resolution_whole(
    entity: &str,
    b: &Map<String, Value>,
    l: &Map<String, Value>,
    r: &Map<String, Value>,
    out: &mut Map<String, Value>,
    ctx: &mut Ctx<'_>,
) {
    let group = |m: &Map<String, Value>| RESOLUTION.map(|k| m.get(k).cloned());
    let (gb, gl, gr) = (group(b), group(l), group(r));
    if gl == gr || gl == gb || gr == gb {
        return; // the same, or changed on one side only: taken whole already
    }
    let left_won = if l.get("decision") != r.get("decision") {
        out.get("decision") == l.get("decision")
    } else {
        out.get("resolved_by") == l.get("resolved_by")
    };
    let (winner, loser) = if left_won { (l, r) } else { (r, l) };
    ctx.conflicts
        .retain(|c| !(c.entity == entity && RESOLUTION.contains(&c.field.as_str())));
    for key in RESOLUTION {
        match winner.get(key) {
            Some(v) => out.insert(key.to_owned(), v.clone()),
            None => out.remove(key),
        };
        if winner.get(key) != loser.get(key) {
            ctx.conflicts.push(Conflict {
                entity: entity.to_owned(),
                field: key.to_owned(),
                kept: winner.get(key).cloned().unwrap_or(Value::Null),
                lost: loser.get(key).cloned().unwrap_or(Value::Null),
                rule: "resolution",
            });
        }
    }
}

/// Merges one entity; `None` when it is gone on the winning side.
fn merge_entity<T>(
    entity: &str,
    b: Option<&T>,
    l: Option<&T>,
    r: Option<&T>,
    ctx: &mut Ctx<'_>,
) -> Result<Option<T>, String>
where
    T: Serialize + DeserializeOwned + PartialEq + Clone,
{
    if l == r || r == b {
        return Ok(l.cloned());
    }
    if l == b {
        return Ok(r.cloned());
    }
    match (l, r) {
        (Some(l), Some(r)) => {
            let merged = merge_fields(entity, b.map(to_map).as_ref(), &to_map(l), &to_map(r), ctx);
            serde_json::from_value(Value::Object(merged))
                .map(Some)
                .map_err(|e| format!("{entity}: merged value is invalid: {e}"))
        }
        // Deleted on one side, changed on the other: keep the change.
        (Some(kept), None) | (None, Some(kept)) => {
            ctx.conflicts.push(Conflict {
                entity: entity.to_owned(),
                field: "(entity)".into(),
                kept: Value::Object(to_map(kept)),
                lost: Value::String("deleted".into()),
                rule: "deleted",
            });
            Ok(Some(kept.clone()))
        }
        (None, None) => Ok(None),
    }
}

fn merge_map<T>(
    kind: &str,
    b: Option<&dyn Entities<T>>,
    l: &dyn Entities<T>,
    r: &dyn Entities<T>,
    ctx: &mut Ctx<'_>,
) -> Result<BTreeMap<String, T>, String>
where
    T: Serialize + DeserializeOwned + PartialEq + Clone,
{
    let mut ids: Vec<&str> = l
        .entity_keys()
        .chain(r.entity_keys())
        .chain(b.into_iter().flat_map(|b| b.entity_keys()))
        .collect();
    ids.sort();
    ids.dedup();
    let mut out = BTreeMap::new();
    for id in ids {
        let entity = format!("{kind} {id}");
        if let Some(v) = merge_entity(
            &entity,
            b.and_then(|b| b.entity(id)),
            l.entity(id),
            r.entity(id),
            ctx,
        )? {
            out.insert(id.to_owned(), v);
        }
    }
    Ok(out)
}

/// [`merge_map`] for the todos or runs of a goal: `local`'s map, taken as
/// it is, with only the entries that differ changed, so that a merge
/// decodes and copies what the two sides changed, not every entry they hold.
fn merge_tracked<T>(
    kind: &str,
    b: Option<&Tracked<T>>,
    mut out: Tracked<T>,
    r: &Tracked<T>,
    ctx: &mut Ctx<'_>,
) -> Result<Tracked<T>, String>
where
    T: Serialize + DeserializeOwned + PartialEq + Clone + Facts,
{
    let bd = b.map(|b| b as &dyn Entities<T>);
    let rd = Some(r as &dyn Entities<T>);
    // Each key is read from `out` before it is written, once: `out` is
    // still the local side wherever it is read.
    for id in differing(b, &out, r) {
        let id = id.as_str();
        let ld = Some(&out as &dyn Entities<T>);
        if same(ld, rd, id) || same(rd, bd, id) {
            continue;
        }
        let merged = if same(ld, bd, id) {
            r.get(id).cloned()
        } else {
            merge_entity(
                &format!("{kind} {id}"),
                b.and_then(|b| b.get(id)),
                out.get(id),
                r.get(id),
                ctx,
            )?
        };
        match merged {
            Some(v) => {
                out.insert(id.to_owned(), v);
            }
            None => {
                out.remove(id);
            }
        }
    }
    Ok(out)
}

/// The keys whose encoded bytes as loaded are not the same in all three
/// maps (or that one of them lacks, or holds as written since): one walk
/// over the three in key order, decoding nothing. Keys equal in all three
/// need no merge.
fn differing<T: Facts>(b: Option<&Tracked<T>>, l: &Tracked<T>, r: &Tracked<T>) -> Vec<String> {
    let none = Tracked::new();
    // Copies of one load (a sync's heads read from one cached state): what
    // none of them wrote is the same in all, and need not be walked.
    if let Some(keys) = Tracked::written_since_one_load(&[b.unwrap_or(&none), l, r]) {
        return keys;
    }
    // Keys as bytes: they order as their strings do, and a walk over
    // every entry of three maps, once per merged head, need not check
    // each one's UTF-8.
    let mut its = [b.unwrap_or(&none), l, r].map(|m| m.raw_entries_by_bytes().peekable());
    let mut out = Vec::new();
    loop {
        let Some(key) = its.iter_mut().filter_map(|it| it.peek().map(|e| e.0)).min() else {
            return out;
        };
        let mut raws: [Option<&[u8]>; 3] = [None; 3];
        let mut held = 0;
        for it in &mut its {
            if it.peek().is_some_and(|e| e.0 == key) {
                raws[held] = it.next().and_then(|e| e.1);
                held += 1;
            }
        }
        let alike = held == 3 && raws[0].is_some() && raws.iter().all(|r| *r == raws[0]);
        if !alike {
            out.push(String::from_utf8_lossy(key).into_owned());
        }
    }
}

/// Merges `local` and `remote`, which diverged from `base` (`None`: no common history).
pub fn merge(base: Option<&State>, local: &State, remote: &State) -> Result<Merged, String> {
    merge_with(base, local.clone(), remote, ClaimRule::Remote)
}

/// Merges two heads that are both already published (two peers' refs on the
/// remote): when both changed a todo's claim, the higher epoch wins, since
/// the remote's lease ref granted it later — whichever head is passed first.
/// A claim that lost is reported in `lost_claims` (`local`: the loser).
/// `a` is taken, not copied: a sync folds many heads into one state.
pub fn merge_published(base: Option<&State>, a: State, b: &State) -> Result<Merged, String> {
    merge_with(base, a, b, ClaimRule::Epoch)
}

fn merge_with(
    base: Option<&State>,
    local: State,
    remote: &State,
    claims: ClaimRule,
) -> Result<Merged, String> {
    let mut conflicts = Vec::new();
    let mut lost_claims = Vec::new();
    let mut ctx = Ctx {
        conflicts: &mut conflicts,
        lost_claims: &mut lost_claims,
        claims,
    };
    let meta = merge_entity(
        "loopx",
        base.map(|b| &b.meta),
        Some(&local.meta),
        Some(&remote.meta),
        &mut ctx,
    )?
    .unwrap_or_else(|| local.meta.clone());
    let agents = merge_map(
        "agent",
        base.map(|b| &b.agents as _),
        &local.agents,
        &remote.agents,
        &mut ctx,
    )?;
    let mut local_goals = local.goals;
    let mut goal_ids: Vec<String> = local_goals
        .keys()
        .chain(remote.goals.keys())
        .cloned()
        .collect();
    goal_ids.sort();
    goal_ids.dedup();
    let mut goals = BTreeMap::new();
    for gid in goal_ids {
        let bg = base.and_then(|b| b.goals.get(&gid));
        let rg = remote.goals.get(&gid);
        let lg = local_goals.remove(&gid);
        let goal = merge_entity(
            &format!("goal {gid}"),
            bg.map(|g| &g.goal),
            lg.as_ref().map(|g| &g.goal),
            rg.map(|g| &g.goal),
            &mut ctx,
        )?;
        let Some(goal) = goal else { continue };
        let (ltodos, lruns) = lg.map_or_else(Default::default, |g| (g.todos, g.runs));
        let none = Tracked::new();
        let todos = merge_tracked(
            "todo",
            bg.map(|g| &g.todos),
            ltodos,
            rg.map_or(&none, |g| &g.todos),
            &mut ctx,
        )?;
        let nor = Tracked::new();
        let runs = merge_tracked(
            "run",
            bg.map(|g| &g.runs),
            lruns,
            rg.map_or(&nor, |g| &g.runs),
            &mut ctx,
        )?;
        goals.insert(gid.clone(), GoalState { goal, todos, runs });
    }
    let state = State {
        meta,
        agents,
        goals,
    };
    state.check().map_err(|(entity, message)| {
        format!("the merged state is invalid at {entity}: {message}")
    })?;
    Ok(Merged {
        state,
        conflicts,
        lost_claims,
    })
}
