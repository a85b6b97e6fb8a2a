use std::collections::{BTreeMap, HashSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::capture::{Capturer, Index, Keep, walk};
use super::pack::Blobs;
use super::restore;
use super::*;

fn put(p: &Path, bytes: &[u8], mode: u32) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, bytes).unwrap();
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn world() -> (tempfile::TempDir, PathBuf, Store) {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let ws = root.join("ws");
    std::fs::create_dir(&ws).unwrap();
    let store = Store::new(&root.join("home"), &SessionId::parse("s1").unwrap());
    (tmp, ws, store)
}

#[test]
fn a_walk_honours_ignore_files_without_git_and_skips_git_and_ferrite_home() {
    let (_t, ws, _) = world();
    put(&ws.join(".gitignore"), b"target/\n*.log\n", 0o644);
    put(&ws.join("src/main.rs"), b"fn main() {}\n", 0o644);
    put(&ws.join(".hidden/conf"), b"x", 0o644);
    put(&ws.join("target/debug/bin"), b"x", 0o755);
    put(&ws.join("run.log"), b"x", 0o644);
    put(&ws.join(".git/config"), b"x", 0o644);
    put(&ws.join(".ferrite-home/sessions/a.jsonl"), b"x", 0o600);
    let rel: Vec<String> = walk(std::slice::from_ref(&ws), &ws.join(".ferrite-home"))
        .iter()
        .map(|p| p.strip_prefix(&ws).unwrap().display().to_string())
        .collect();
    assert_eq!(
        rel,
        [
            ".gitignore",
            ".hidden",
            ".hidden/conf",
            "src",
            "src/main.rs"
        ]
    );
}

#[test]
fn captures_keep_bytes_once_links_as_links_and_large_files_as_not_kept() {
    let (_t, ws, store) = world();
    put(&ws.join("a.txt"), b"same", 0o640);
    put(&ws.join("b.txt"), b"same", 0o600);
    put(&ws.join("big.bin"), &[7u8; 100], 0o644);
    std::os::unix::fs::symlink("a.txt", ws.join("link")).unwrap();
    let mut index = Index::default();
    let mut blobs = Blobs::default();
    let mut cap = Capturer::new(&store, &mut index, &mut blobs, 50);
    let a = cap
        .capture(&ws.join("a.txt"), Keep::Bytes)
        .unwrap()
        .unwrap();
    let b = cap
        .capture(&ws.join("b.txt"), Keep::Bytes)
        .unwrap()
        .unwrap();
    assert_eq!(a.hash(), b.hash(), "content-addressed");
    assert!(matches!(
        a,
        FileState::File {
            mode: 0o640,
            size: 4,
            ..
        }
    ));
    cap.seal().unwrap();
    assert_eq!(Blobs::load(&store).count(), 1);
    assert!(matches!(
        cap.capture(&ws.join("big.bin"), Keep::Bytes)
            .unwrap()
            .unwrap(),
        FileState::NotKept { size: 100, .. }
    ));
    assert_eq!(
        cap.capture(&ws.join("link"), Keep::Bytes).unwrap().unwrap(),
        FileState::Symlink {
            target: PathBuf::from("a.txt")
        }
    );
    assert_eq!(
        cap.capture(&ws.join("nope"), Keep::Bytes).unwrap().unwrap(),
        FileState::Absent
    );
}

#[test]
fn a_plan_restores_bytes_modes_links_and_removes_created_dirs() {
    let (_t, ws, store) = world();
    put(&ws.join("m.txt"), b"before\n", 0o751);
    put(&ws.join("del.txt"), b"\x00\xffbin", 0o600);
    std::os::unix::fs::symlink("m.txt", ws.join("ln")).unwrap();
    let paths = ["m.txt", "del.txt", "ln", "new", "new/f.txt"].map(|p| ws.join(p));
    let mut index = Index::default();
    let mut blobs = Blobs::default();
    let mut cap = Capturer::new(&store, &mut index, &mut blobs, 1 << 20);
    let mut before = BTreeMap::new();
    for p in &paths {
        before.insert(p.clone(), cap.capture(p, Keep::Bytes).unwrap().unwrap());
    }
    cap.seal().unwrap();
    // The "turn".
    put(&ws.join("m.txt"), b"after\n", 0o644);
    std::fs::remove_file(ws.join("del.txt")).unwrap();
    std::fs::remove_file(ws.join("ln")).unwrap();
    std::os::unix::fs::symlink("elsewhere", ws.join("ln")).unwrap();
    put(&ws.join("new/f.txt"), b"n", 0o644);
    let mut after = BTreeMap::new();
    for p in &paths {
        after.insert(p.clone(), cap.capture(p, Keep::HashOnly).unwrap().unwrap());
    }
    let m = Manifest {
        id: 1,
        turn: 1,
        created_at: String::new(),
        roots: vec![ws.clone()],
        full: false,
        undid: vec![],
        before: before.clone(),
        after: Some(after),
    };
    // The user touched nothing since: no conflicts.
    let plan = restore::plan(&mut cap, std::slice::from_ref(&m), &ws).unwrap();
    assert!(plan.steps.iter().all(|s| !s.conflict));
    for s in &plan.steps {
        restore::apply(&store, &Blobs::load(&store), s).unwrap();
    }
    for (p, b) in &before {
        assert_eq!(
            &cap.capture(p, Keep::HashOnly).unwrap().unwrap(),
            b,
            "{}",
            p.display()
        );
    }
    assert_eq!(std::fs::read(ws.join("del.txt")).unwrap(), b"\x00\xffbin");
    assert!(!ws.join("new").exists());

    // Changed by the user after the turn: a conflict.
    put(&ws.join("m.txt"), b"user\n", 0o644);
    let plan = restore::plan(&mut cap, std::slice::from_ref(&m), &ws).unwrap();
    let m_step = plan
        .steps
        .iter()
        .find(|s| s.path.ends_with("m.txt"))
        .unwrap();
    assert!(m_step.conflict);
}

#[test]
fn pruning_keeps_the_newest_and_removes_unreferenced_blobs() {
    let (_t, ws, store) = world();
    let mut index = Index::default();
    let mut blobs = Blobs::default();
    for (id, text) in [(1, "one"), (2, "two"), (3, "three")] {
        put(&ws.join("f"), text.as_bytes(), 0o644);
        let mut cap = Capturer::new(&store, &mut index, &mut blobs, 1 << 20);
        let state = cap.capture(&ws.join("f"), Keep::Bytes).unwrap().unwrap();
        cap.seal().unwrap();
        let m = Manifest {
            id,
            turn: id,
            created_at: String::new(),
            roots: vec![ws.clone()],
            full: false,
            undid: vec![],
            before: BTreeMap::from([(ws.join("f"), state)]),
            after: Some(BTreeMap::from([(ws.join("f"), FileState::Absent)])),
        };
        store.save(&m).unwrap();
    }
    // The index names "three"'s blob only after it is saved.
    index.save(&store).unwrap();
    store.prune(2).unwrap();
    assert_eq!(
        store.list().iter().map(|m| m.id).collect::<Vec<_>>(),
        [2, 3]
    );
    assert_eq!(
        Blobs::load(&store).count(),
        2,
        "\"one\" is gone, \"two\" and \"three\" stay"
    );
    assert_eq!(store.next_id(), 4);
}

#[test]
fn a_mostly_dead_pack_is_rewritten_with_its_live_blobs_and_an_unsealed_one_is_removed() {
    let (_t, ws, store) = world();
    put(&ws.join("small"), b"small", 0o644);
    put(&ws.join("large"), &[1u8; 4096], 0o644);
    let mut index = Index::default();
    let mut blobs = Blobs::default();
    let mut cap = Capturer::new(&store, &mut index, &mut blobs, 1 << 20);
    let small = cap
        .capture(&ws.join("small"), Keep::Bytes)
        .unwrap()
        .unwrap();
    cap.capture(&ws.join("large"), Keep::Bytes)
        .unwrap()
        .unwrap();
    cap.seal().unwrap();
    // A capture that crashed before sealing leaves a pack without an index.
    put(&ws.join("lost"), b"lost", 0o644);
    let mut cap = Capturer::new(&store, &mut index, &mut blobs, 1 << 20);
    cap.capture(&ws.join("lost"), Keep::Bytes).unwrap();
    drop(cap);
    let live = HashSet::from([small.hash().unwrap().to_owned()]);
    pack::collect(&store, &live).unwrap();
    let packs: Vec<String> = std::fs::read_dir(store.packs())
        .unwrap()
        .map(|d| d.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        packs.len(),
        2,
        "one rewritten pack and its index: {packs:?}"
    );
    let after = Blobs::load(&store);
    assert_eq!(after.count(), 1);
    assert_eq!(after.read(&store, small.hash().unwrap()).unwrap(), b"small");
}

#[test]
fn one_capture_stores_at_most_its_budget_and_lists_the_rest_as_not_kept() {
    let (_t, ws, store) = world();
    for name in ["a", "b", "c"] {
        put(&ws.join(name), &[name.as_bytes()[0]; 10], 0o644);
    }
    let mut index = Index::default();
    let mut blobs = Blobs::default();
    let mut cap = Capturer::new(&store, &mut index, &mut blobs, 1 << 20);
    cap.budget = 25;
    let states: Vec<FileState> = ["a", "b", "c"]
        .iter()
        .map(|n| cap.capture(&ws.join(n), Keep::Bytes).unwrap().unwrap())
        .collect();
    assert!(matches!(states[0], FileState::File { .. }));
    assert!(matches!(states[1], FileState::File { .. }));
    assert!(matches!(states[2], FileState::NotKept { size: 10, .. }));
}
