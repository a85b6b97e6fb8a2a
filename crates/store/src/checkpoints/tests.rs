use std::collections::{BTreeMap, HashSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::capture::{Capturer, Index, Keep, walk};
use super::pack::Blobs;
use super::*;
use super::{caps, restore};

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

/// The undo may write in `ws` (the world's home is its sibling `home`).
fn reach(ws: &Path) -> restore::Reach {
    restore::Reach {
        roots: vec![ws.to_owned()],
        home: ws.parent().unwrap().join("home"),
    }
}

/// One checkpoint of `paths`: their states before, then `change`, then after.
fn checkpoint(store: &Store, ws: &Path, paths: &[PathBuf], change: impl FnOnce()) -> Manifest {
    let mut index = Index::default();
    let mut blobs = Blobs::default();
    let mut cap = Capturer::new(store, &mut index, &mut blobs, 1 << 20);
    let before: BTreeMap<PathBuf, FileState> = paths
        .iter()
        .map(|p| (p.clone(), cap.capture(p, Keep::Bytes).unwrap().unwrap()))
        .collect();
    cap.seal().unwrap();
    change();
    let mut cap = Capturer::new(store, &mut index, &mut blobs, 1 << 20);
    let after = paths
        .iter()
        .map(|p| (p.clone(), cap.capture(p, Keep::HashOnly).unwrap().unwrap()))
        .collect();
    Manifest {
        id: 1,
        turn: 1,
        created_at: String::new(),
        roots: vec![ws.to_owned()],
        full: false,
        undid: vec![],
        before,
        after: Some(after),
    }
}

fn plan_of(store: &Store, ws: &Path, m: &Manifest) -> restore::Plan {
    let mut index = Index::default();
    let mut blobs = Blobs::default();
    let mut cap = Capturer::new(store, &mut index, &mut blobs, 1 << 20);
    restore::plan(&mut cap, std::slice::from_ref(m), &reach(ws)).unwrap()
}

#[test]
fn undo_skips_paths_behind_a_directory_now_a_link_and_never_writes_through_one() {
    let (_t, ws, store) = world();
    let outside = tempfile::tempdir().unwrap();
    let out = std::fs::canonicalize(outside.path()).unwrap();
    put(&ws.join("sub/f.txt"), b"original", 0o644);
    put(&ws.join("sub/gone.txt"), b"gone", 0o644);
    let paths = [ws.join("sub/f.txt"), ws.join("sub/gone.txt")];
    let m = checkpoint(&store, &ws, &paths, || {
        put(&ws.join("sub/f.txt"), b"agent", 0o644);
        std::fs::remove_file(ws.join("sub/gone.txt")).unwrap();
    });
    // `sub` becomes a link to a directory holding what the agent left.
    put(&out.join("f.txt"), b"agent", 0o644);
    std::fs::remove_dir_all(ws.join("sub")).unwrap();
    std::os::unix::fs::symlink(&out, ws.join("sub")).unwrap();
    let plan = plan_of(&store, &ws, &m);
    assert!(plan.steps.is_empty(), "{:?}", plan.steps);
    let skipped: Vec<&Path> = plan.skipped.iter().map(|s| s.path.as_path()).collect();
    assert_eq!(skipped, [paths[0].as_path(), paths[1].as_path()]);
    assert!(plan.skipped[0].reason.contains("symlink"));

    // A link planted after the plan (while the user reads a question) fails the step.
    std::fs::remove_file(ws.join("sub")).unwrap();
    put(&ws.join("sub/f.txt"), b"agent", 0o644);
    let plan = plan_of(&store, &ws, &m);
    assert_eq!(plan.steps.len(), 2);
    std::fs::remove_dir_all(ws.join("sub")).unwrap();
    std::os::unix::fs::symlink(&out, ws.join("sub")).unwrap();
    for s in &plan.steps {
        let err = restore::apply(&store, &Blobs::load(&store), s, &reach(&ws)).unwrap_err();
        assert!(err.to_string().contains("symlink"), "{err}");
    }
    assert_eq!(std::fs::read(out.join("f.txt")).unwrap(), b"agent");
    assert!(!out.join("gone.txt").exists());

    // Paths outside the workspace or in FERRITE_HOME are refused whatever the manifest says.
    let home_file = ws.parent().unwrap().join("home/AGENTS.md");
    let step = restore::Step {
        path: home_file.clone(),
        current: FileState::Absent,
        target: FileState::Symlink { target: "x".into() },
        conflict: false,
    };
    assert!(restore::apply(&store, &Blobs::load(&store), &step, &reach(&ws)).is_err());
    assert!(std::fs::symlink_metadata(&home_file).is_err());
}

#[test]
fn undo_puts_back_a_directory_a_link_replaced_then_fills_it() {
    let (_t, ws, store) = world();
    let outside = tempfile::tempdir().unwrap();
    let out = std::fs::canonicalize(outside.path()).unwrap();
    put(&ws.join("sub/f.txt"), b"original", 0o640);
    let paths = [ws.join("sub"), ws.join("sub/f.txt")];
    // The turn itself replaced `sub` with a link.
    let m = checkpoint(&store, &ws, &paths, || {
        std::fs::remove_dir_all(ws.join("sub")).unwrap();
        std::os::unix::fs::symlink(&out, ws.join("sub")).unwrap();
    });
    assert_eq!(
        m.after.as_ref().unwrap()[&paths[1]],
        FileState::Absent,
        "nothing behind the link is read"
    );
    let plan = plan_of(&store, &ws, &m);
    assert!(plan.skipped.is_empty(), "{:?}", plan.skipped);
    for s in &plan.steps {
        assert!(!s.conflict);
        restore::apply(&store, &Blobs::load(&store), s, &reach(&ws)).unwrap();
    }
    assert!(std::fs::symlink_metadata(ws.join("sub")).unwrap().is_dir());
    assert_eq!(std::fs::read(ws.join("sub/f.txt")).unwrap(), b"original");
    let mode = std::fs::metadata(ws.join("sub/f.txt"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o640);
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0);
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
    let plan = restore::plan(&mut cap, std::slice::from_ref(&m), &reach(&ws)).unwrap();
    assert!(plan.steps.iter().all(|s| !s.conflict));
    for s in &plan.steps {
        restore::apply(&store, &Blobs::load(&store), s, &reach(&ws)).unwrap();
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
    let plan = restore::plan(&mut cap, std::slice::from_ref(&m), &reach(&ws)).unwrap();
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
    let cfg = CheckpointsConfig {
        max_count: 2,
        ..Default::default()
    };
    let sid = SessionId::parse("s1").unwrap();
    let home = ws.parent().unwrap().join("home");
    let report = caps::enforce(&store, &home, &sid, &cfg).unwrap();
    assert_eq!(report.own.len(), 1);
    assert_eq!(report.notice(&cfg), None, "max_count pruning is quiet");
    assert_eq!(caps::dropped(&store), report.own, "and recorded");
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
    pack::collect(&store, &live, pack::Rewrite::MostlyDead).unwrap();
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

#[test]
fn the_total_cap_leaves_an_open_session_alone_and_drops_a_closed_ones() {
    let (_t, ws, own) = world();
    let home = ws.parent().unwrap().join("home");
    let (s1, s2) = (
        SessionId::parse("s1").unwrap(),
        SessionId::parse("s2").unwrap(),
    );
    // Session s2 has a log (open: its lock is held) and a store of 900 KiB.
    let logs = crate::log::SessionStore::new(&home);
    let header = crate::log::Header::new(
        s2.clone(),
        ws.clone(),
        vec![],
        crate::modes::Harness::Code,
        None,
    );
    let writer = logs.create(&header).unwrap();
    let other = Store::new(&home, &s2);
    for (store, name, seed) in [(&other, "other.bin", 1u8), (&own, "own.bin", 2)] {
        put(&ws.join(name), &vec![seed; 900 << 10], 0o644);
        let m = checkpoint(store, &ws, &[ws.join(name)], || {
            put(&ws.join(name), b"changed", 0o644)
        });
        store.save(&m).unwrap();
    }
    let cfg = CheckpointsConfig {
        max_total_bytes: 1 << 20,
        ..Default::default()
    };
    let before = caps::dir_bytes(&other.dir);
    let report = caps::enforce(&own, &home, &s1, &cfg).unwrap();
    assert_eq!(report.others, (0, 0), "an open session is not touched");
    assert_eq!(caps::dir_bytes(&other.dir), before);
    assert_eq!(own.list().len(), 1, "the newest of this session stays");

    drop(writer);
    let report = caps::enforce(&own, &home, &s1, &cfg).unwrap();
    assert_eq!(report.others, (1, 1));
    assert!(other.list().is_empty());
    assert!(caps::dir_bytes(&other.dir) < 4096, "its blobs are gone");
    assert_eq!(caps::dropped(&other)[0].why, caps::Why::TotalBytes);
    assert_eq!(other.next_id(), 2, "ids are not given twice");
    assert!(report.notice(&cfg).unwrap().contains("1 other session"));
}
