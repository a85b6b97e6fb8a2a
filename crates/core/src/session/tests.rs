//! A subagent waits for its parent's `task` call to be durable: the sync the parent started
//! for the call is waited for through the child's recorder.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use super::{Relay, Session, SharedSync};
use crate::content::{ToolCallView, ToolKind, ToolStatus};
use crate::ids::{SessionId, TurnId};
use crate::log::{EntryKind, Header, SessionStore, StoreError};
use crate::modes::Harness;
use crate::state::SessionState;

fn open(store: &SessionStore) -> Session {
    let header = Header::new(
        SessionId::generate(),
        std::env::temp_dir(),
        vec![],
        Harness::Code,
        None,
    );
    let log = store.create(&header).unwrap_or_else(|e| panic!("{e}"));
    Session::new(SessionState::new(&header), log, None)
}

/// A sync that ends when `done` is sent (with the error sent, if any).
fn controlled() -> (SharedSync, oneshot::Sender<Option<String>>) {
    let (tx, rx) = oneshot::channel::<Option<String>>();
    let sync = async move {
        match rx.await.ok().flatten() {
            None => Ok(()),
            Some(msg) => Err(Arc::new(StoreError::Io {
                path: "parent.jsonl".into(),
                source: std::io::Error::other(msg),
            })),
        }
    };
    let sync = SharedSync {
        sync: futures::FutureExt::shared(Box::pin(sync)),
        path: "parent.jsonl".into(),
    };
    (sync, tx)
}

/// The parent's recorder and its child's (a subagent's log, synced in the background).
fn parent_and_child(store: &SessionStore) -> (Session, super::Recorder) {
    let parent = open(store);
    let (events, _) = mpsc::channel(64);
    let parent_rec = parent.recorder(events, Some(TurnId(1)));
    let child = open(store);
    child.sync_in_background();
    let card = ToolCallView {
        id: "t1".into(),
        title: "Subagent: look".into(),
        kind: ToolKind::Other,
        status: ToolStatus::Pending,
        locations: vec![],
        content: vec![],
        raw_input: None,
    };
    let child_rec = parent_rec.for_child(&child, Relay::new(parent_rec.clone(), card, false));
    (parent, child_rec)
}

#[tokio::test]
async fn a_child_waits_for_its_parents_task_call_to_be_durable() {
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = SessionStore::new(home.path());
    let (parent, child_rec) = parent_and_child(&store);
    // Nothing started: nothing to wait for.
    child_rec
        .calls_durable()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (sync, done) = controlled();
    parent.lock().calls_sync = Some(sync);
    let waiting = tokio::spawn(async move { child_rec.calls_durable().await });
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert!(
        !waiting.is_finished(),
        "the child went on before the parent's sync ended"
    );
    done.send(None)
        .unwrap_or_else(|_| panic!("the waiter is gone"));
    let waited = waiting.await.unwrap_or_else(|e| panic!("{e}"));
    assert!(waited.is_ok(), "{waited:?}");
}

#[tokio::test]
async fn a_failed_parent_sync_is_the_childs_failure_too() {
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = SessionStore::new(home.path());
    let (parent, child_rec) = parent_and_child(&store);
    let (sync, done) = controlled();
    parent.lock().calls_sync = Some(sync);
    done.send(Some("disk full".into()))
        .unwrap_or_else(|_| panic!("the waiter is gone"));
    let err = child_rec.calls_durable().await.map_err(|e| e.to_string());
    assert!(
        matches!(&err, Err(e) if e.contains("disk full") && e.contains("parent.jsonl")),
        "{err:?}"
    );
    // The parent's turn takes the failure as its own; its later responses are not failed by it.
    let (events, _) = mpsc::channel(64);
    let parent_rec = parent.recorder(events, Some(TurnId(2)));
    assert!(parent_rec.end_calls_sync().await.is_err());
    parent_rec
        .calls_durable()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(child_rec.calls_durable().await.is_ok());
}

#[tokio::test]
async fn a_started_calls_sync_is_waited_for_and_a_background_log_keeps_its_own() {
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = SessionStore::new(home.path());
    let (parent, child_rec) = parent_and_child(&store);
    let title = || EntryKind::Title {
        title: "look".into(),
        by: None,
    };
    parent
        .lock()
        .record(title())
        .unwrap_or_else(|e| panic!("{e}"));
    parent.start_calls_sync().unwrap_or_else(|e| panic!("{e}"));
    assert!(
        parent.calls_sync().is_some(),
        "the call's sync was not kept"
    );
    child_rec
        .calls_durable()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // A subagent's own calls are synced in the background with the rest of its log.
    let child = open(&store);
    child.sync_in_background();
    child
        .lock()
        .record(title())
        .unwrap_or_else(|e| panic!("{e}"));
    child.start_calls_sync().unwrap_or_else(|e| panic!("{e}"));
    assert!(child.calls_sync().is_none());
    assert_eq!(
        child.lock().background_syncs.as_ref().map(Vec::len),
        Some(1)
    );
    child.durable().await.unwrap_or_else(|e| panic!("{e}"));
}
