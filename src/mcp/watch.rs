//! Resource change notifications: a thread polls the tip of `loopx-state`
//! (a file read) every 250 ms with a store of its own, and on a move reads
//! which goals there are and what each holds; the notifier sends
//! `notifications/resources/updated` for each subscribed resource that
//! changed (`loopx://status` on every move) and
//! `notifications/resources/list_changed` when goals come or go: to a
//! client that used `resources/subscribe` ([`notify`]), and on each
//! `subscriptions/listen` stream of the 2026-07-28 revision ([`listen`]).
//!
//! Invariants: the watcher only reads; it never holds the ops thread, so a
//! long tool call does not delay a notification.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::{Peer, SubscriptionContext};
use rmcp::{ErrorData, RoleServer};
use tokio::sync::watch;

use crate::mcp::resources::{self, Target};
use crate::mcp::Options;
use crate::session::Context;
use crate::{Error, Result};

/// How often the tip is read.
const POLL: Duration = Duration::from_millis(250);

/// The state as last seen: its tip, and each goal's `goal.yaml` as JSON.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Seen {
    tip: Option<String>,
    goals: BTreeMap<String, String>,
}

fn look(ctx: &Context) -> Seen {
    let tip = ctx.tip().ok().flatten().map(|oid| oid.to_string());
    let goals = match ctx.load() {
        Ok((_, state)) => state
            .goals
            .iter()
            .map(|(id, gs)| {
                (
                    id.clone(),
                    serde_json::to_string(&gs.goal).unwrap_or_default(),
                )
            })
            .collect(),
        Err(_) => BTreeMap::new(),
    };
    Seen { tip, goals }
}

/// Starts the watcher thread; the receiver sees every new tip.
pub fn start(options: &Options) -> Result<watch::Receiver<Seen>> {
    let (ready, opened) = std::sync::mpsc::channel::<Result<watch::Receiver<Seen>>>();
    let dir = options.dir.clone();
    let (clock, goal) = (options.clock, options.goal.clone());
    std::thread::Builder::new()
        .name("loopx-mcp-watch".to_owned())
        .spawn(move || {
            let ctx = match clock().and_then(|now| Context::open(&dir, now, None, goal)) {
                Ok(ctx) => ctx,
                Err(e) => {
                    let _ = ready.send(Err(e));
                    return;
                }
            };
            let mut last = look(&ctx);
            let (tx, rx) = watch::channel(last.clone());
            let _ = ready.send(Ok(rx));
            loop {
                std::thread::sleep(POLL);
                let tip = ctx.tip().ok().flatten().map(|oid| oid.to_string());
                if tip == last.tip {
                    continue;
                }
                last = look(&ctx);
                if tx.send(last.clone()).is_err() {
                    return;
                }
            }
        })
        .map_err(|e| Error::invalid_input(format!("cannot start the state watcher: {e}")))?;
    opened
        .recv()
        .map_err(|_| Error::invalid_input("the state watcher stopped while opening"))?
}

/// Which of the subscribed `uris` changed between `last` and `now`.
fn changed<'a>(uris: impl IntoIterator<Item = &'a String>, last: &Seen, now: &Seen) -> Vec<String> {
    uris.into_iter()
        .filter(|uri| match resources::parse_uri(uri) {
            Ok(Target::Status) => true,
            Ok(Target::Goal(id)) => now.goals.get(&id) != last.goals.get(&id),
            Err(_) => false,
        })
        .cloned()
        .collect()
}

/// Sends the notifications for each move the watcher sees to a client that
/// subscribed with `resources/subscribe` (the handshake revisions), until
/// the client is gone.
pub async fn notify(
    peer: Peer<RoleServer>,
    mut seen: watch::Receiver<Seen>,
    subscribed: Arc<Mutex<BTreeSet<String>>>,
) {
    let mut last = seen.borrow_and_update().clone();
    while seen.changed().await.is_ok() {
        let now = seen.borrow_and_update().clone();
        let uris = subscribed
            .lock()
            .expect("the subscription set is not poisoned")
            .clone();
        for uri in changed(&uris, &last, &now) {
            let param = ResourceUpdatedNotificationParam::new(uri);
            if peer.notify_resource_updated(param).await.is_err() {
                return;
            }
        }
        if !now.goals.keys().eq(last.goals.keys())
            && peer.notify_resource_list_changed().await.is_err()
        {
            return;
        }
        last = now;
    }
}

/// One `subscriptions/listen` stream (2026-07-28): the same notifications,
/// for what the accepted filter names, until the client cancels it.
pub async fn listen(
    context: SubscriptionContext,
    mut seen: watch::Receiver<Seen>,
) -> Result<(), ErrorData> {
    let accepted = context.accepted().clone();
    let uris = accepted.resource_subscriptions.clone().unwrap_or_default();
    let lost =
        |e: rmcp::service::SubscriptionSendError| ErrorData::internal_error(e.to_string(), None);
    let mut last = seen.borrow_and_update().clone();
    loop {
        tokio::select! {
            () = context.cancelled() => return Ok(()),
            moved = seen.changed() => {
                if moved.is_err() {
                    return Ok(());
                }
                let now = seen.borrow_and_update().clone();
                for uri in changed(&uris, &last, &now) {
                    context.sink().notify_resource_updated(uri).await.map_err(lost)?;
                }
                if accepted.resources_list_changed == Some(true)
                    && !now.goals.keys().eq(last.goals.keys())
                {
                    context.sink().notify_resource_list_changed().await.map_err(lost)?;
                }
                last = now;
            }
        }
    }
}
