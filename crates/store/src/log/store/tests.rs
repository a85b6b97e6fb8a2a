//! The log on disk: durability, locking, torn lines, listing.

use super::*;
use crate::content::UserContent;
use crate::modes::{Harness, Mode};
use pretty_assertions::assert_eq;

fn header(id: &SessionId) -> Header {
    Header::new(id.clone(), "/w".into(), vec![], Harness::Code, None)
}

fn user(text: &str) -> EntryKind {
    EntryKind::UserMessage {
        id: None,
        content: vec![UserContent::Text { text: text.into() }],
    }
}

#[test]
fn a_released_writer_reopens_and_refuses_a_log_changed_meanwhile() {
    let home = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let id = SessionId::generate();
    let mut w = store.create(&header(&id)).unwrap();
    w.append(user("one")).unwrap();
    w.release().unwrap();
    assert!(w.is_released());
    // Released means unlocked: another writer could take it now.
    let (other, _) = store.open(&id).unwrap();
    drop(other);
    w.append(user("two")).unwrap();
    w.sync().unwrap();
    assert!(!w.is_released());
    let loaded = store.read(&id).unwrap();
    assert_eq!(loaded.entries.len(), 2);
    // Someone appends while this writer is released: its next write is refused.
    w.release().unwrap();
    let (mut other, _) = store.open(&id).unwrap();
    other.append(user("theirs")).unwrap();
    drop(other);
    assert!(matches!(
        w.append(user("mine")),
        Err(StoreError::Corrupt { .. })
    ));
    assert_eq!(store.read(&id).unwrap().entries.len(), 3);
}

#[test]
fn roundtrip_and_seq() {
    let home = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let id = SessionId::generate();
    let mut w = store.create(&header(&id)).unwrap();
    assert_eq!(w.append(user("hi")).unwrap(), 1);
    assert_eq!(w.append(EntryKind::Mode { mode: Mode::Auto }).unwrap(), 2);
    w.sync().unwrap();
    drop(w);
    let (w, log) = store.open(&id).unwrap();
    assert_eq!(log.entries.len(), 2);
    assert_eq!(log.entries[1].kind, EntryKind::Mode { mode: Mode::Auto });
    assert_eq!(w.next_seq(), 3);
    assert_eq!(log.header.id, id);
}

#[test]
fn second_writer_is_refused_until_the_first_is_gone() {
    let home = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let id = SessionId::generate();
    let w = store.create(&header(&id)).unwrap();
    assert!(matches!(store.open(&id), Err(StoreError::Locked)));
    assert!(matches!(store.delete(&id), Err(StoreError::Locked)));
    drop(w);
    assert!(store.open(&id).is_ok());
}

#[test]
fn torn_tail_is_dropped_and_cut() {
    let home = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let id = SessionId::generate();
    let mut w = store.create(&header(&id)).unwrap();
    w.append(user("one")).unwrap();
    drop(w);
    let path = store.path(&id);
    let mut f = OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(b"{\"seq\":2,\"at\":\"x\",\"type\":\"user_mess")
        .unwrap();
    drop(f);
    let log = store.read(&id).unwrap();
    assert!(log.torn_tail);
    assert_eq!(log.entries.len(), 1);
    let (mut w, _) = store.open(&id).unwrap();
    assert_eq!(w.append(user("two")).unwrap(), 2);
    drop(w);
    let log = store.read(&id).unwrap();
    assert!(!log.torn_tail);
    assert_eq!(log.entries.len(), 2);
}

#[test]
fn bad_middle_line_is_skipped_not_fatal() {
    let home = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let id = SessionId::generate();
    let mut w = store.create(&header(&id)).unwrap();
    w.append(user("one")).unwrap();
    w.write_line(b"{not json".to_vec()).unwrap();
    w.append(user("two")).unwrap();
    drop(w);
    let log = store.read(&id).unwrap();
    assert_eq!(log.entries.len(), 2);
    assert_eq!(log.skipped_lines, 1);
}

#[test]
fn list_newest_first_with_titles() {
    let home = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let a = SessionId::generate();
    let mut w = store.create(&header(&a)).unwrap();
    w.append(user("  first   question \n here ")).unwrap();
    drop(w);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let b = SessionId::generate();
    drop(store.create(&header(&b)).unwrap());
    std::fs::write(store.dir().join("not-a-session.txt"), "x").unwrap();
    let list = store.list().unwrap();
    assert_eq!(
        list.iter().map(|s| s.id.clone()).collect::<Vec<_>>(),
        vec![b, a]
    );
    assert_eq!(list[1].title.as_deref(), Some("first question here"));
    assert_eq!(list[0].title, None);
}

/// The title noted beside a log (not synced) is listed; a note a crash left empty is not, and
/// the list falls back on the log's first prompt.
#[test]
fn a_noted_title_is_listed_unless_a_crash_left_it_empty() {
    let home = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let id = SessionId::generate();
    let mut w = store.create(&header(&id)).unwrap();
    w.append(user("fix the parser")).unwrap();
    w.append(EntryKind::Title {
        title: "Parser fix".into(),
        by: Some(crate::log::TitleBy::Generated),
    })
    .unwrap();
    drop(w);
    assert_eq!(
        store.list().unwrap()[0].title.as_deref(),
        Some("Parser fix")
    );
    let note = store.path(&id).with_extension("title");
    std::fs::write(&note, "").unwrap();
    assert_eq!(
        store.list().unwrap()[0].title.as_deref(),
        Some("fix the parser")
    );
}

/// A subagent's session is never listed (its parent's card leads to it): no notes are kept
/// beside its log, and its title still loads from the log.
#[test]
fn a_subagents_log_keeps_no_listing_notes() {
    let home = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let id = SessionId::generate();
    let child = header(&id).subagent_of(SessionId::generate());
    let mut w = store.create_unsynced(&child).unwrap();
    w.append(EntryKind::Title {
        title: "look around".into(),
        by: None,
    })
    .unwrap();
    w.append(EntryKind::Directories {
        additional_directories: vec!["/elsewhere".into()],
    })
    .unwrap();
    drop(w);
    let path = store.path(&id);
    assert!(!path.with_extension("title").exists());
    assert!(!roots_path(&path).exists());
    let (_, loaded) = store.open(&id).unwrap();
    assert!(
        matches!(&loaded.entries[0].kind, EntryKind::Title { title, .. } if title == "look around")
    );
}

/// A sync taken out of the writer covers the new log's header, its folder and every line written
/// before it was taken; what is written after it needs another one.
#[test]
fn a_taken_sync_covers_what_was_written_before_it() {
    let home = tempfile::tempdir().unwrap();
    let store = SessionStore::new(home.path());
    let id = SessionId::generate();
    let mut w = store.create_unsynced(&header(&id)).unwrap();
    w.append(user("task")).unwrap();
    let first = w
        .take_sync()
        .unwrap()
        .expect("the header and the task are unsynced");
    assert!(
        first.dir.is_some(),
        "a new log's folder entry is synced once"
    );
    assert!(
        w.take_sync().unwrap().is_none(),
        "nothing was written since"
    );
    w.append(user("answer")).unwrap();
    let second = w.take_sync().unwrap().expect("the answer is unsynced");
    assert!(second.dir.is_none());
    // The writer goes on while they run elsewhere.
    let (a, b) = (
        std::thread::spawn(move || first.run()),
        std::thread::spawn(move || second.run()),
    );
    a.join().unwrap().unwrap();
    b.join().unwrap().unwrap();
    drop(w);
    let loaded = store.read(&id).unwrap();
    assert_eq!(loaded.entries.len(), 2);
    assert!(!loaded.torn_tail);
}
