//! Ferrite's own files hold conversations, keys, rules and copies of the workspace: only their
//! owner may read them. Every directory Ferrite creates under FERRITE_HOME is made here (0700)
//! and every file is opened with [`file_options`] or written with [`write_atomic`] (0600):
//! modes given at creation, so a umask can only narrow them and no file is ever readable by
//! others, not even for a moment before a `chmod`.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Creates `dir` and its missing parents with mode 0700 (existing ones are left as they are).
pub fn create_dir_all(dir: &Path) -> std::io::Result<()> {
    #[cfg_attr(not(unix), allow(unused_mut))]
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir)
}

/// Options that create a file with mode 0600.
pub fn file_options() -> OpenOptions {
    #[cfg_attr(not(unix), allow(unused_mut))]
    let mut opts = OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    opts
}

/// Writes `bytes` to `path` (mode 0600, missing parents 0700) via a temporary file in the same
/// directory: readers see the old or the new content, never a part, and the new one survives a
/// crash once this returns.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    replace(path, bytes, true)
}

/// [`write_atomic`] without its two syncs, for a note that only saves reading something that
/// stays the truth elsewhere (a session's title and roots beside its log): readers still see
/// the old or the new content, but after a machine crash the note may be the old one, or empty.
pub fn write_note(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    replace(path, bytes, false)
}

fn replace(path: &Path, bytes: &[u8], durable: bool) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    create_dir_all(dir)?;
    let (tmp, mut file) = temp_file_in(dir)?;
    let written = file
        .write_all(bytes)
        .and_then(|()| if durable { file.sync_all() } else { Ok(()) })
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written?;
    if durable && let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// A new private file with a random name in `dir`.
fn temp_file_in(dir: &Path) -> std::io::Result<(PathBuf, std::fs::File)> {
    loop {
        let path = dir.join(format!(".tmp-{}", uuid::Uuid::now_v7().simple()));
        match file_options().write(true).create_new(true).open(&path) {
            Ok(f) => return Ok((path, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn directories_and_files_are_private() {
        let dir = tempfile::tempdir().unwrap();
        let nested = dir.path().join("home/sessions");
        create_dir_all(&nested).unwrap();
        for d in [dir.path().join("home"), nested.clone()] {
            let mode = std::fs::metadata(&d).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{}", d.display());
        }
        let f = nested.join("x.jsonl");
        file_options()
            .write(true)
            .create_new(true)
            .open(&f)
            .unwrap();
        let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let g = dir.path().join("home/cache/models.json");
        write_atomic(&g, b"{}").unwrap();
        write_atomic(&g, b"[]").unwrap();
        assert_eq!(std::fs::read(&g).unwrap(), b"[]");
        let mode = std::fs::metadata(&g).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let mode = std::fs::metadata(g.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o700);
        let names: Vec<_> = std::fs::read_dir(g.parent().unwrap()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temporary file left");
    }
}
