//! Reading a LoopX 2.x state from disk (the only place that opens its SQLite
//! authority stores).
//!
//! LoopX 2.1.1 keeps a goal's state in two places:
//! - the project: `.loopx/registry.json` (the goals: id, objective, status,
//!   registered agents);
//! - the runtime root (`--runtime-root`, else `$LOOPX_RUNTIME_ROOT`, else
//!   `~/.loopx`): `authority/sqlite-v0/*.sqlite`, one store per goal whose
//!   `head` row holds the goal's current todos and task leases as one JSON
//!   document (`ACTIVE_GOAL_STATE.md` is rendered from it), and
//!   `goals/<goal>/runs/*-quota-slot-spent-*.json`, one file per quota spend.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::model::{Code, Refusal};
use crate::Result;

/// One LoopX goal as read.
#[derive(Debug, Clone)]
pub struct Goal {
    pub id: String,
    pub objective: String,
    pub status: String,
    pub agents: Vec<String>,
    /// `quota.compute` and `quota.window_hours`, when the registry sets them.
    pub compute: Option<f64>,
    pub window_hours: Option<u32>,
    /// The todo records (LoopX's `todo_domain_record_v0`), in store order.
    pub todos: Vec<Map<String, Value>>,
    pub leases: Vec<Lease>,
    pub spends: Vec<Spend>,
    /// No authority store was found for this goal (its todos are not read).
    pub store_missing: bool,
}

/// A LoopX task lease (`task_lease_v0`).
#[derive(Debug, Clone)]
pub struct Lease {
    pub todo_id: String,
    pub owner: String,
    pub epoch: u64,
    pub status: String,
    pub acquired_at: String,
    pub expires_at: String,
}

/// A LoopX quota spend (`quota_slot_spent`).
#[derive(Debug, Clone)]
pub struct Spend {
    /// The spend's settlement effect id (else its file name).
    pub key: String,
    pub at: String,
    pub agent: Option<String>,
    pub todo_id: Option<String>,
    pub turn: Option<String>,
    pub slots: u32,
}

/// Everything read from one LoopX project and runtime root.
#[derive(Debug, Clone)]
pub struct Source {
    pub project: PathBuf,
    pub runtime_root: PathBuf,
    pub goals: Vec<Goal>,
}

fn invalid(file: &Path, what: impl std::fmt::Display) -> crate::Error {
    Refusal::new(
        Code::StateInvalid,
        format!("LoopX state file {}: {what}", file.display()),
    )
    .into()
}

/// The most a JSON file or a store's head projection may hold: far above
/// any real LoopX state, far below what would exhaust memory.
const MAX_BYTES: u64 = 64 << 20;

/// Refuses anything but a regular file of at most [`MAX_BYTES`] (a FIFO or
/// a device would block the read forever, or never end).
fn regular(file: &Path) -> Result<()> {
    let meta =
        std::fs::metadata(file).map_err(|e| invalid(file, format!("cannot read it: {e}")))?;
    if !meta.is_file() {
        return Err(invalid(file, "not a regular file"));
    }
    if meta.len() > MAX_BYTES {
        return Err(invalid(
            file,
            format!(
                "{} bytes, more than the {MAX_BYTES} an import reads",
                meta.len()
            ),
        ));
    }
    Ok(())
}

fn read_json(file: &Path) -> Result<Value> {
    regular(file)?;
    let bytes = std::fs::read(file).map_err(|e| invalid(file, format!("cannot read it: {e}")))?;
    serde_json::from_slice(&bytes).map_err(|e| invalid(file, format!("not valid JSON: {e}")))
}

/// `obj[key]` as a string; `where_` names the object in errors.
fn string(file: &Path, obj: &Map<String, Value>, where_: &str, key: &str) -> Result<String> {
    match obj.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(invalid(
            file,
            format!(
                "field `{where_}.{key}` is {}, not a string",
                crate::codec::json_kind(other)
            ),
        )),
        None => Err(invalid(file, format!("field `{where_}.{key}` is missing"))),
    }
}

fn opt_string(obj: &Map<String, Value>, key: &str) -> Option<String> {
    obj.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// Reads the LoopX state of `project` (the directory holding `.loopx/`),
/// with its runtime root.
pub fn read(project: &Path, runtime_root: &Path) -> Result<Source> {
    let registry = project.join(".loopx").join("registry.json");
    if !registry.exists() {
        return Err(Refusal::new(
            Code::StateMissing,
            format!(
                "no LoopX state at {}: {} does not exist",
                project.display(),
                registry.display()
            ),
        )
        .with_hint("pass the LoopX project directory (the one holding .loopx/registry.json)")
        .into());
    }
    let doc = read_json(&registry)?;
    let goals = match doc.get("goals") {
        Some(Value::Array(goals)) => goals,
        Some(other) => {
            return Err(invalid(
                &registry,
                format!(
                    "field `goals` is {}, not an array",
                    crate::codec::json_kind(other)
                ),
            ))
        }
        None => return Err(invalid(&registry, "field `goals` is missing")),
    };
    let stores = read_stores(runtime_root)?;
    let mut out = Vec::new();
    for (i, goal) in goals.iter().enumerate() {
        let where_ = format!("goals[{i}]");
        let Value::Object(goal) = goal else {
            return Err(invalid(&registry, format!("`{where_}` is not an object")));
        };
        let id = string(&registry, goal, &where_, "id")?;
        let objective = opt_string(goal, "display_name").unwrap_or_else(|| id.clone());
        let status = opt_string(goal, "status").unwrap_or_else(|| "active".into());
        let agents = goal
            .get("coordination")
            .and_then(|c| c.get("registered_agents"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let quota = goal.get("quota");
        let compute = quota.and_then(|q| q.get("compute")).and_then(Value::as_f64);
        let window_hours = quota
            .and_then(|q| q.get("window_hours"))
            .and_then(Value::as_u64)
            .and_then(|h| u32::try_from(h).ok());
        let (todos, leases, store_missing) = match stores.get(&id) {
            Some((file, projection)) => {
                let (t, l) = todos_and_leases(file, projection)?;
                (t, l, false)
            }
            None => (Vec::new(), Vec::new(), true),
        };
        let spends = read_spends(&runtime_root.join("goals").join(&id).join("runs"))?;
        out.push(Goal {
            id,
            objective,
            status,
            agents,
            compute,
            window_hours,
            todos,
            leases,
            spends,
            store_missing,
        });
    }
    Ok(Source {
        project: project.to_owned(),
        runtime_root: runtime_root.to_owned(),
        goals: out,
    })
}

/// Every goal's authority store: goal id → (file, head projection).
fn read_stores(runtime_root: &Path) -> Result<BTreeMap<String, (PathBuf, Value)>> {
    let dir = runtime_root.join("authority").join("sqlite-v0");
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(out);
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "sqlite"))
        .collect();
    files.sort();
    for file in files {
        let (goal, projection) = read_store(&file)?;
        out.insert(goal, (file, projection));
    }
    Ok(out)
}

/// The goal id and head projection of one SQLite authority store, opened
/// read-only.
///
/// Bounded: only a regular file is opened, `metadata` and `head` must be
/// tables (a view may compute without end), and no value may be longer than
/// [`MAX_BYTES`] (SQLite's length limit, so a huge one is never built).
fn read_store(file: &Path) -> Result<(String, Value)> {
    use rusqlite::limits::Limit;
    use rusqlite::OpenFlags;
    regular(file)?;
    let db = rusqlite::Connection::open_with_flags(
        file,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| invalid(file, format!("cannot open the SQLite store: {e}")))?;
    db.set_limit(Limit::SQLITE_LIMIT_LENGTH, MAX_BYTES as i32)
        .map_err(|e| invalid(file, format!("cannot bound the SQLite store: {e}")))?;
    for table in ["metadata", "head"] {
        let kind: Option<String> = db
            .query_row(
                "SELECT type FROM sqlite_master WHERE name = ?1",
                [table],
                |r| r.get(0),
            )
            .ok();
        if kind.as_deref() != Some("table") {
            return Err(invalid(
                file,
                format!(
                    "`{table}` is {}, not a table",
                    kind.map_or("missing".to_owned(), |k| format!("a {k}"))
                ),
            ));
        }
    }
    let goal: String = db
        .query_row("SELECT goal_id FROM metadata", [], |r| r.get(0))
        .map_err(|e| invalid(file, format!("table `metadata`, column `goal_id`: {e}")))?;
    let projection: String = db
        .query_row("SELECT projection FROM head", [], |r| r.get(0))
        .map_err(|e| invalid(file, format!("table `head`, column `projection`: {e}")))?;
    let value = serde_json::from_str(&projection).map_err(|e| {
        invalid(
            file,
            format!("table `head`, column `projection` is not valid JSON: {e}"),
        )
    })?;
    Ok((goal, value))
}

type TodosAndLeases = (Vec<Map<String, Value>>, Vec<Lease>);

fn todos_and_leases(file: &Path, projection: &Value) -> Result<TodosAndLeases> {
    let list = |key: &str| -> Result<Vec<Value>> {
        match projection.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(a)) => Ok(a.clone()),
            Some(other) => Err(invalid(
                file,
                format!(
                    "field `head.projection.{key}` is {}, not an array",
                    crate::codec::json_kind(other)
                ),
            )),
        }
    };
    let mut todos = Vec::new();
    for (i, t) in list("todos")?.into_iter().enumerate() {
        let Value::Object(t) = t else {
            return Err(invalid(
                file,
                format!("`head.projection.todos[{i}]` is not an object"),
            ));
        };
        string(file, &t, &format!("todos[{i}]"), "todo_id")?;
        todos.push(t);
    }
    let mut leases = Vec::new();
    for (i, l) in list("leases")?.into_iter().enumerate() {
        let where_ = format!("leases[{i}]");
        let Value::Object(l) = l else {
            return Err(invalid(
                file,
                format!("`head.projection.{where_}` is not an object"),
            ));
        };
        leases.push(Lease {
            todo_id: string(file, &l, &where_, "todo_id")?,
            owner: string(file, &l, &where_, "owner")?,
            epoch: l.get("lease_epoch").and_then(Value::as_u64).unwrap_or(1),
            status: opt_string(&l, "status").unwrap_or_default(),
            acquired_at: string(file, &l, &where_, "acquired_at")?,
            expires_at: string(file, &l, &where_, "expires_at")?,
        });
    }
    Ok((todos, leases))
}

/// The quota spends recorded under a goal's `runs/` directory.
fn read_spends(dir: &Path) -> Result<Vec<Spend>> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "json")
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.contains("-quota-slot-spent-"))
        })
        .collect();
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let Value::Object(doc) = read_json(&file)? else {
            return Err(invalid(&file, "not a JSON object"));
        };
        if doc.get("classification").and_then(Value::as_str) != Some("quota_slot_spent") {
            continue;
        }
        let at = string(&file, &doc, "$", "generated_at")?;
        let event = doc.get("quota_event").and_then(Value::as_object);
        let slots = match event.and_then(|e| e.get("slots")) {
            None => 1,
            Some(v) => v
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .filter(|n| *n > 0)
                .ok_or_else(|| {
                    invalid(&file, "field `quota_event.slots` is not a positive integer")
                })?,
        };
        let key = event
            .and_then(|e| e.get("settlement_identity"))
            .and_then(|s| s.get("effect_id"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| {
                file.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            });
        out.push(Spend {
            key,
            at,
            agent: opt_string(&doc, "agent_id"),
            todo_id: opt_string(&doc, "todo_id")
                .or_else(|| event.and_then(|e| opt_string(e, "todo_id"))),
            turn: opt_string(&doc, "turn_instance_id"),
            slots,
        });
    }
    Ok(out)
}
