//! Entities ⇄ canonical YAML bytes, and the file layout of the state branch.
//!
//! The only module that knows YAML. Invariants: encoding is a pure function of
//! the entity (same entity, same bytes); decoding never drops a field it does
//! not know (those land in `extra`); a state written by a newer format is
//! refused before anything else is read. Parsing uses `serde_norway` (libyaml);
//! writing uses our own emitter in [`emit`], see `docs/ARCHITECTURE.md`.
//! [`binary`] is the state's other form: the compact bytes of the host-local
//! parsed-state cache (`store::cache`), never on the branch.

pub mod binary;
mod emit;
pub mod inspect;

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::model::tracked::Entities;
use crate::model::{ids, Agent, Goal, GoalState, Meta, Run, State, Todo, Tracked, FORMAT};

/// Largest entity file we parse; anything bigger is refused as hostile.
pub const MAX_FILE_BYTES: usize = crate::model::limits::READER_LIMIT;

/// A file of the state tree that cannot be read. `path` is relative to the tree root.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct Error {
    pub path: String,
    pub message: String,
}

fn err(path: &str, message: impl Into<String>) -> Error {
    Error {
        path: path.to_owned(),
        message: message.into(),
    }
}

/// Canonical bytes of one entity.
pub fn encode<T: Serialize>(entity: &T) -> Vec<u8> {
    match serde_json::to_value(entity) {
        Ok(serde_json::Value::Object(map)) => emit::document(&map).into_bytes(),
        Ok(other) => panic!("BUG: entities serialize to mappings, got {other}"),
        Err(e) => panic!("BUG: entity does not serialize: {e}"),
    }
}

/// Parses one entity file; the error names the file, the field and the line.
pub fn decode<T: DeserializeOwned>(path: &str, bytes: &[u8]) -> Result<T, Error> {
    if bytes.len() > MAX_FILE_BYTES {
        return Err(too_large(path, bytes.len() as u64));
    }
    check_nesting(bytes).map_err(|message| err(path, message))?;
    serde_norway::from_slice(bytes).map_err(|e| err(path, e.to_string()))
}

/// The refusal of a file of `size` bytes, more than a reader takes
/// (also said by the store, which reads an object's size before its bytes).
pub fn too_large(path: &str, size: u64) -> Error {
    err(
        path,
        format!("file is {size} bytes, more than the {MAX_FILE_BYTES} allowed"),
    )
}

/// The most `[`/`{` a file may leave open at once. libyaml's work grows
/// with the square of the flow nesting (100,000 levels took ~50 s), so this
/// is checked on the bytes before the parser sees them. Brackets are counted
/// everywhere, quoted text included: a text with thousands of unclosed
/// brackets is refused when written, which no real note needs.
pub const MAX_FLOW_NESTING: usize = 1024;

fn check_nesting(bytes: &[u8]) -> Result<(), String> {
    let mut depth = 0usize;
    for (at, &b) in bytes.iter().enumerate() {
        match b {
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_FLOW_NESTING {
                    let line = bytes[..at].iter().filter(|&&c| c == b'\n').count() + 1;
                    return Err(format!(
                        "more than {MAX_FLOW_NESTING} unclosed `[`/`{{` at line {line}: refused unparsed"
                    ));
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

pub const META_PATH: &str = "loopx.yaml";

pub fn agent_path(id: &str) -> String {
    format!("agents/{id}.yaml")
}

pub fn goal_path(id: &str) -> String {
    format!("goals/{id}/goal.yaml")
}

pub fn todo_path(todo: &Todo) -> String {
    format!(
        "goals/{}/todos/{}/{}.yaml",
        todo.goal,
        ids::shard(&todo.id),
        todo.id
    )
}

/// Where a run is written: `goals/<goal>/runs/<day>/<xx>/<id>.yaml`, `<xx>`
/// its id's shard as for todos, so a writeback rewrites a shard's small
/// tree, not the whole day's.
pub fn run_path(run: &Run) -> String {
    format!(
        "goals/{}/runs/{}/{}/{}.yaml",
        run.goal,
        run.at.day(),
        ids::shard(&run.id),
        run.id
    )
}

/// The canonical file set of a state.
pub fn encode_state(state: &State) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    files.insert(META_PATH.to_owned(), encode(&state.meta));
    for agent in state.agents.values() {
        files.insert(agent_path(&agent.id), encode(agent));
    }
    for gs in state.goals.values() {
        files.insert(goal_path(&gs.goal.id), encode(&gs.goal));
        for todo in gs.todos.values() {
            files.insert(todo_path(todo), encode(todo));
        }
        for run in gs.runs.values() {
            files.insert(run_path(run), encode(run));
        }
    }
    files
}

/// The small entities of a state (everything but todos and runs), kept
/// before a mutation so a transaction can see what changed without copying
/// the todos: those report their own writes ([`crate::model::Tracked`]).
pub struct Skeleton {
    meta: Meta,
    agents: BTreeMap<String, Agent>,
    goals: BTreeMap<String, Goal>,
}

impl Skeleton {
    pub fn of(state: &State) -> Self {
        Skeleton {
            meta: state.meta.clone(),
            agents: state.agents.clone(),
            goals: state
                .goals
                .iter()
                .map(|(id, gs)| (id.clone(), gs.goal.clone()))
                .collect(),
        }
    }
}

/// The files a mutation changed: the small entities by comparison with
/// `before`, todos and runs by the keys they report as written.
pub fn written_files(before: Option<&Skeleton>, new: &State) -> Vec<FileEdit> {
    let mut out = Vec::new();
    if before.map(|b| &b.meta) != Some(&new.meta) {
        out.push((META_PATH.to_owned(), Some(encode(&new.meta))));
    }
    for (id, agent) in &new.agents {
        if before.and_then(|b| b.agents.get(id)) != Some(agent) {
            out.push((agent_path(id), Some(encode(agent))));
        }
    }
    for id in before.map(|b| b.agents.keys()).into_iter().flatten() {
        if !new.agents.contains_key(id) {
            out.push((agent_path(id), None));
        }
    }
    for (gid, gs) in &new.goals {
        if before.and_then(|b| b.goals.get(gid)) != Some(&gs.goal) {
            out.push((goal_path(gid), Some(encode(&gs.goal))));
        }
        for id in gs.todos.dirty() {
            match gs.todos.get(id) {
                Some(todo) => out.push((todo_path(todo), Some(encode(todo)))),
                None => out.push((
                    format!("goals/{gid}/todos/{}/{id}.yaml", ids::shard(id)),
                    None,
                )),
            }
        }
        // Runs are append-only: a written run is (re)stored where its day
        // and shard say.
        for id in gs.runs.dirty() {
            if let Some(run) = gs.runs.get(id) {
                out.push((run_path(run), Some(encode(run))));
            }
        }
    }
    out
}

/// Applies one file of the layout to `state` (used to replay a cached delta).
pub fn apply_file(state: &mut State, path: &str, bytes: Option<&[u8]>) -> Result<(), Error> {
    match (classify(path)?, bytes) {
        (Slot::Meta, Some(b)) => state.meta = decode(path, b)?,
        (Slot::Agent(id), Some(b)) => {
            state.agents.insert(id.to_owned(), decode(path, b)?);
        }
        (Slot::Agent(id), None) => {
            state.agents.remove(id);
        }
        (Slot::Goal(id), Some(b)) => {
            let goal: Goal = decode(path, b)?;
            match state.goals.get_mut(id) {
                Some(gs) => gs.goal = goal,
                None => {
                    state.goals.insert(id.to_owned(), GoalState::new(goal));
                }
            }
        }
        (Slot::Todo { goal, id, .. }, b) => {
            let gs = goal_of(state, goal, path)?;
            apply_entity(&mut gs.todos, id, path, b)?;
        }
        (Slot::Run { goal, id, .. }, b) => {
            let gs = goal_of(state, goal, path)?;
            apply_entity(&mut gs.runs, id, path, b)?;
        }
        (Slot::Foreign, _) | (Slot::Meta, None) | (Slot::Goal(_), None) => {}
    }
    Ok(())
}

/// Checks that `bytes` at `path` would be read back: no larger than a
/// reader accepts, and decodable as what its place in the layout holds.
/// Every write passes through this before its commit (SPEC §5: nothing is
/// ever written that a reader would refuse).
pub fn check_file(path: &str, bytes: &[u8]) -> Result<(), Error> {
    match classify(path)? {
        Slot::Meta => {
            check_format(bytes)?;
            decode::<Meta>(path, bytes).map(drop)
        }
        Slot::Agent(_) => decode::<Agent>(path, bytes).map(drop),
        Slot::Goal(_) => decode::<Goal>(path, bytes).map(drop),
        Slot::Todo { .. } => decode::<Todo>(path, bytes).map(drop),
        Slot::Run { .. } => decode::<Run>(path, bytes).map(drop),
        Slot::Foreign => Ok(()),
    }
}

/// A todo's or a run's file in the layout: its goal and its id.
pub enum EntityFile<'a> {
    Todo { goal: &'a str, id: &'a str },
    Run { goal: &'a str, id: &'a str },
}

/// Which todo or run `path` holds, if it is one's file.
pub fn entity_file(path: &str) -> Option<EntityFile<'_>> {
    match classify(path).ok()? {
        Slot::Todo { goal, id, .. } => Some(EntityFile::Todo { goal, id }),
        Slot::Run { goal, id, .. } => Some(EntityFile::Run { goal, id }),
        _ => None,
    }
}

/// Puts an already decoded todo where its file `path` says, as
/// [`apply_file`] would put the file's.
pub fn place_todo(state: &mut State, path: &str, todo: Todo) -> Result<(), Error> {
    match classify(path)? {
        Slot::Todo { goal, id, .. } => {
            goal_of(state, goal, path)?
                .todos
                .insert(id.to_owned(), todo);
            Ok(())
        }
        _ => Err(err(path, "not a todo's file")),
    }
}

/// Puts an already decoded run where its file `path` says.
pub fn place_run(state: &mut State, path: &str, run: Run) -> Result<(), Error> {
    match classify(path)? {
        Slot::Run { goal, id, .. } => {
            goal_of(state, goal, path)?.runs.insert(id.to_owned(), run);
            Ok(())
        }
        _ => Err(err(path, "not a run's file")),
    }
}

fn goal_of<'a>(state: &'a mut State, goal: &str, path: &str) -> Result<&'a mut GoalState, Error> {
    state
        .goals
        .get_mut(goal)
        .ok_or_else(|| err(path, format!("goal `{goal}` has no goal.yaml")))
}

fn apply_entity<T: DeserializeOwned + Clone + crate::model::tracked::Facts>(
    map: &mut crate::model::Tracked<T>,
    id: &str,
    path: &str,
    bytes: Option<&[u8]>,
) -> Result<(), Error> {
    match bytes {
        Some(b) => {
            map.insert(id.to_owned(), decode(path, b)?);
        }
        None => {
            map.remove(id);
        }
    }
    Ok(())
}

/// A file to write (`Some(bytes)`) or remove (`None`), by path.
pub type FileEdit = (String, Option<Vec<u8>>);

/// The files that differ between `old` and `new`: only changed entities are
/// encoded, so a write costs what it changes, not what the state holds.
pub fn changed_files(old: Option<&State>, new: &State) -> Vec<FileEdit> {
    let mut out = Vec::new();
    fn entity<T: Serialize + PartialEq>(
        out: &mut Vec<FileEdit>,
        old: Option<&T>,
        new: Option<&T>,
        path: fn(&T) -> String,
    ) {
        match (old, new) {
            (Some(a), Some(b)) if a == b => {}
            (Some(a), b) => {
                let pa = path(a);
                match b {
                    Some(b) => {
                        let pb = path(b);
                        if pa != pb {
                            out.push((pa, None));
                        }
                        out.push((pb, Some(encode(b))));
                    }
                    None => out.push((pa, None)),
                }
            }
            (None, Some(b)) => out.push((path(b), Some(encode(b)))),
            (None, None) => {}
        }
    }
    fn map<T: Serialize + PartialEq>(
        out: &mut Vec<FileEdit>,
        old: Option<&dyn Entities<T>>,
        new: &dyn Entities<T>,
        path: fn(&T) -> String,
    ) {
        for id in new.entity_keys() {
            if crate::model::tracked::same(old, Some(new), id) {
                continue;
            }
            entity(out, old.and_then(|o| o.entity(id)), new.entity(id), path);
        }
        for id in old.into_iter().flat_map(|o| o.entity_keys()) {
            if new.entity(id).is_none() {
                entity(out, old.and_then(|o| o.entity(id)), None, path);
            }
        }
    }
    entity(&mut out, old.map(|o| &o.meta), Some(&new.meta), |_| {
        META_PATH.to_owned()
    });
    map(&mut out, old.map(|o| &o.agents as _), &new.agents, |a| {
        agent_path(&a.id)
    });
    for (gid, gs) in &new.goals {
        let og = old.and_then(|o| o.goals.get(gid));
        entity(&mut out, og.map(|g| &g.goal), Some(&gs.goal), |g| {
            goal_path(&g.id)
        });
        map(&mut out, og.map(|g| &g.todos as _), &gs.todos, todo_path);
        map(&mut out, og.map(|g| &g.runs as _), &gs.runs, run_path);
    }
    for (gid, og) in old.map(|o| &o.goals).into_iter().flatten() {
        if !new.goals.contains_key(gid) {
            out.push((goal_path(gid), None));
            map(&mut out, Some(&og.todos), &Tracked::new(), todo_path);
            map(&mut out, Some(&og.runs), &Tracked::new(), run_path);
        }
    }
    out
}

#[derive(serde::Deserialize)]
struct FormatOnly {
    format: Option<serde_json::Value>,
}

/// Checks `loopx.yaml`'s `format` before anything else is parsed.
fn check_format(bytes: &[u8]) -> Result<(), Error> {
    let probe: FormatOnly = decode(META_PATH, bytes)?;
    match probe.format {
        Some(serde_json::Value::Number(n)) if n.as_u64() == Some(u64::from(FORMAT)) => Ok(()),
        Some(serde_json::Value::Number(n)) if n.as_u64().is_some_and(|n| n > u64::from(FORMAT)) => {
            Err(err(
                META_PATH,
                format!(
                    "format: {n} is newer than this git-loopx understands (format {FORMAT}); upgrade git-loopx, nothing was changed"
                ),
            ))
        }
        Some(other) => Err(err(META_PATH, format!("format: unsupported value {other}"))),
        None => Err(err(META_PATH, "format: missing field")),
    }
}

/// What a path in the state tree holds.
enum Slot<'a> {
    Meta,
    Agent(&'a str),
    Goal(&'a str),
    Todo {
        goal: &'a str,
        shard: &'a str,
        id: &'a str,
    },
    Run {
        goal: &'a str,
        day: &'a str,
        shard: &'a str,
        id: &'a str,
    },
    Foreign,
}

fn classify(path: &str) -> Result<Slot<'_>, Error> {
    let parts: Vec<&str> = path.split('/').collect();
    let yaml = |name: &str| name.strip_suffix(".yaml").map(str::to_owned);
    let slot = match parts.as_slice() {
        ["loopx.yaml"] => Slot::Meta,
        ["agents", file] => match file.strip_suffix(".yaml") {
            Some(id) => Slot::Agent(id),
            None => return Err(err(path, "unexpected file under agents/")),
        },
        ["goals", goal, "goal.yaml"] => Slot::Goal(goal),
        ["goals", goal, "todos", shard, file] if yaml(file).is_some() => Slot::Todo {
            goal,
            shard,
            id: &file[..file.len() - 5],
        },
        ["goals", goal, "runs", day, shard, file] if yaml(file).is_some() => Slot::Run {
            goal,
            day,
            shard,
            id: &file[..file.len() - 5],
        },
        ["agents", ..] | ["goals", ..] => {
            return Err(err(path, "unexpected file in the state layout"))
        }
        _ => Slot::Foreign,
    };
    Ok(slot)
}

/// A todo or run decoded ahead of the checks in [`decode_state`].
enum Parsed {
    Todo(Todo),
    Run(Run),
}

/// `f` over `items`, in order, split across the cores when there are enough
/// items to pay for the threads. Todos and runs are nearly all of a state's
/// files and parse independently: a cold load of thousands (the first read
/// after a fetch, say) shares them out.
fn parallel_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    const WORTH_A_THREAD: usize = 256;
    let threads = if items.len() < 2 * WORTH_A_THREAD {
        1
    } else {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(items.len() / WORTH_A_THREAD)
            .min(8)
    };
    if threads < 2 {
        return items.iter().map(f).collect();
    }
    let f = &f;
    std::thread::scope(|s| {
        let parts: Vec<_> = items
            .chunks(items.len().div_ceil(threads))
            .map(|chunk| s.spawn(move || chunk.iter().map(f).collect::<Vec<R>>()))
            .collect();
        parts
            .into_iter()
            .flat_map(|part| part.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

/// Decodes a whole state tree. Files outside the layout (a README, say) are
/// ignored here and left in the tree untouched by writes.
pub fn decode_state<'a, I>(files: I) -> Result<State, Error>
where
    I: IntoIterator<Item = (&'a str, &'a [u8])>,
{
    let files: Vec<(&str, &[u8])> = files.into_iter().collect();
    let meta_bytes = files
        .iter()
        .find(|(p, _)| *p == META_PATH)
        .map(|(_, b)| *b)
        .ok_or_else(|| err(META_PATH, "missing: the state branch has no loopx.yaml"))?;
    check_format(meta_bytes)?;
    let meta: Meta = decode(META_PATH, meta_bytes)?;
    let mut state = State::new(meta);
    let mut todos = Vec::new();
    let mut runs = Vec::new();
    let mut parsed = parallel_map(&files, |(path, bytes)| match classify(path) {
        Ok(Slot::Todo { .. }) => Some(decode(path, bytes).map(Parsed::Todo)),
        Ok(Slot::Run { .. }) => Some(decode(path, bytes).map(Parsed::Run)),
        _ => None,
    });
    for ((path, bytes), parsed) in files.iter().zip(&mut parsed) {
        match classify(path)? {
            Slot::Meta | Slot::Foreign => {}
            Slot::Agent(id) => {
                let agent = read_agent(path, id, bytes)?;
                state.agents.insert(agent.id.clone(), agent);
            }
            Slot::Goal(id) => {
                let goal = read_goal(path, id, bytes)?;
                state.goals.insert(goal.id.clone(), GoalState::new(goal));
            }
            slot @ Slot::Todo { .. } => {
                let Some(Parsed::Todo(todo)) = parsed.take().transpose()? else {
                    unreachable!("a todo's file parses as a todo");
                };
                check_place(path, &slot, &todo.id, &todo.goal, None)?;
                todos.push((path, todo));
            }
            slot @ Slot::Run { .. } => {
                let Some(Parsed::Run(run)) = parsed.take().transpose()? else {
                    unreachable!("a run's file parses as a run");
                };
                check_place(path, &slot, &run.id, &run.goal, Some(&run.at.day()))?;
                runs.push((path, run));
            }
        }
    }
    for (path, todo) in todos {
        goal_of(&mut state, &todo.goal.clone(), path)?
            .todos
            .insert(todo.id.clone(), todo);
    }
    for (path, run) in runs {
        let gs = goal_of(&mut state, &run.goal.clone(), path)?;
        if let Some(first) = gs.runs.insert(run.id.clone(), run) {
            // The same run under two days is refused: which of the two
            // holds it would be a guess. Each was read where its day and
            // shard say, so `run_path` is where the first one is.
            return Err(duplicate_run(path, &first));
        }
    }
    checked(&mut state)?;
    Ok(state)
}

/// The checks of the whole state a read makes; then `state` is marked clean.
fn checked(state: &mut State) -> Result<(), Error> {
    state.check().map_err(|(entity, message)| {
        let path = path_of_entity(state, &entity).unwrap_or_else(|| entity.clone());
        err(&path, message)
    })?;
    state.clean();
    Ok(())
}

fn read_agent(path: &str, id: &str, bytes: &[u8]) -> Result<Agent, Error> {
    let agent: Agent = decode(path, bytes)?;
    expect_id(path, &agent.id, id)?;
    ids::check_name("agent", id).map_err(|e| err(path, e.message))?;
    Ok(agent)
}

fn read_goal(path: &str, id: &str, bytes: &[u8]) -> Result<Goal, Error> {
    let goal: Goal = decode(path, bytes)?;
    expect_id(path, &goal.id, id)?;
    ids::check_name("goal", id).map_err(|e| err(path, e.message))?;
    Ok(goal)
}

/// Checks that a todo or run read from `path` (of `slot`) belongs there:
/// its id, goal and (for a run) day are the ones its place names.
fn check_place(
    path: &str,
    slot: &Slot<'_>,
    found_id: &str,
    found_goal: &str,
    found_day: Option<&str>,
) -> Result<(), Error> {
    let (goal, shard, id, valid, what) = match *slot {
        Slot::Todo { goal, shard, id } => (goal, shard, id, ids::is_valid_todo_id(id), "todo"),
        Slot::Run {
            goal, shard, id, ..
        } => (goal, shard, id, ids::is_valid_run_id(id), "run"),
        _ => return Ok(()),
    };
    expect_id(path, found_id, id)?;
    if !valid {
        return Err(err(path, format!("`{id}` is not a {what} id")));
    }
    if ids::shard(id) != shard {
        return Err(err(
            path,
            format!("`{id}` is not a {what} id of shard `{shard}`"),
        ));
    }
    expect_field(path, "goal", found_goal, goal)?;
    if let (Slot::Run { day, .. }, Some(found)) = (slot, found_day) {
        expect_field(path, "at", found, day)?;
    }
    Ok(())
}

fn duplicate_run(path: &str, first: &Run) -> Error {
    err(
        path,
        format!(
            "duplicate run id `{}`: also stored at {}",
            first.id,
            run_path(first)
        ),
    )
}

/// Applies the files that changed between a commit and one of its
/// ancestors (`None`: removed) to the ancestor's state, with every check a
/// whole read of the commit ([`decode_state`]) makes, so that the result is
/// the state `decode_state` would give, or the error it would give. `false`
/// (and `state` partly changed) for a change this does not replay — the
/// metadata or a goal's file removed —: read the commit whole.
pub fn apply_changes(state: &mut State, files: &[(&str, Option<&[u8]>)]) -> Result<bool, Error> {
    // The metadata and goals first, so that todos and runs find theirs.
    let mut files: Vec<(&str, Option<&[u8]>, Slot<'_>)> = files
        .iter()
        .map(|&(path, bytes)| Ok((path, bytes, classify(path)?)))
        .collect::<Result<_, Error>>()?;
    files.sort_by_key(|(_, _, slot)| !matches!(slot, Slot::Meta | Slot::Goal(_)));
    let removed: std::collections::BTreeSet<&str> = files
        .iter()
        .filter(|(_, bytes, _)| bytes.is_none())
        .map(|(path, ..)| *path)
        .collect();
    for (path, bytes, slot) in &files {
        let path = *path;
        match (slot, *bytes) {
            (Slot::Meta, Some(b)) => {
                check_format(b)?;
                state.meta = decode(path, b)?;
            }
            (Slot::Meta | Slot::Goal(_), None) => return Ok(false),
            (Slot::Agent(id), Some(b)) => {
                state
                    .agents
                    .insert((*id).to_owned(), read_agent(path, id, b)?);
            }
            (Slot::Agent(id), None) => {
                state.agents.remove(*id);
            }
            (Slot::Goal(id), Some(b)) => {
                let goal = read_goal(path, id, b)?;
                match state.goals.get_mut(*id) {
                    Some(gs) => gs.goal = goal,
                    None => {
                        state.goals.insert((*id).to_owned(), GoalState::new(goal));
                    }
                }
            }
            (Slot::Todo { goal, id, .. }, Some(b)) => {
                let todo: Todo = decode(path, b)?;
                check_place(path, slot, &todo.id, &todo.goal, None)?;
                goal_of(state, goal, path)?
                    .todos
                    .insert((*id).to_owned(), todo);
            }
            (Slot::Run { goal, id, .. }, Some(b)) => {
                let run: Run = decode(path, b)?;
                check_place(path, slot, &run.id, &run.goal, Some(&run.at.day()))?;
                let gs = goal_of(state, goal, path)?;
                if let Some(first) = gs.runs.get(id) {
                    let first_path = run_path(first);
                    if first_path != path && !removed.contains(first_path.as_str()) {
                        return Err(duplicate_run(path, first));
                    }
                }
                gs.runs.insert((*id).to_owned(), run);
            }
            (Slot::Todo { goal, id, .. }, None) => {
                if let Some(gs) = state.goals.get_mut(*goal) {
                    gs.todos.remove(id);
                }
            }
            (Slot::Run { goal, id, .. }, None) => {
                if let Some(gs) = state.goals.get_mut(*goal) {
                    // Only the run stored here: a run that moved to another
                    // day is in this change twice, and its new place stays.
                    if gs.runs.get(id).is_some_and(|r| run_path(r) == path) {
                        gs.runs.remove(id);
                    }
                }
            }
            (Slot::Foreign, _) => {}
        }
    }
    checked(state)?;
    Ok(true)
}

/// The file `entity` (as `State::check` names it) was read from.
fn path_of_entity(state: &State, entity: &str) -> Option<String> {
    let (kind, id) = entity.split_once(' ').unwrap_or((entity, ""));
    match kind {
        "loopx" => Some(META_PATH.to_owned()),
        "agent" => Some(agent_path(id)),
        "goal" => Some(goal_path(id)),
        "todo" => state
            .goals
            .values()
            .find_map(|gs| gs.todos.get(id))
            .map(todo_path),
        "run" => state
            .goals
            .values()
            .find_map(|gs| gs.runs.get(id))
            .map(run_path),
        _ => None,
    }
}

fn expect_id(path: &str, found: &str, from_path: &str) -> Result<(), Error> {
    expect_field(path, "id", found, from_path)
}

fn expect_field(path: &str, field: &str, found: &str, from_path: &str) -> Result<(), Error> {
    if found == from_path {
        Ok(())
    } else {
        Err(err(
            path,
            format!("{field}: `{found}` does not match the file's place (`{from_path}`)"),
        ))
    }
}

/// Whether `path` belongs to the layout git-loopx owns (as opposed to a file
/// someone else put on the branch, which writes leave alone).
pub fn is_layout_path(path: &str) -> bool {
    !matches!(classify(path), Ok(Slot::Foreign))
}

/// What a JSON value is, in words, for a message about a file or input of
/// the wrong shape (`a number`, `an object`).
pub fn json_kind(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
