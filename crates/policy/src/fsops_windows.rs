//! Opening exactly the file the permission policy decided on: Windows.
//!
//! The Unix version (`fsops.rs`) walks the path one directory handle at a time with `O_NOFOLLOW`,
//! so a link planted after the decision fails the operation. Windows has no `openat`; here every
//! directory on the way is checked not to be a symbolic link or junction (a reparse point) just
//! before the file is opened, and the file itself is opened with `FILE_FLAG_OPEN_REPARSE_POINT`
//! (the link, never its target) and checked to be a regular file. A link swapped in between the
//! check of a directory and the open is not caught: a narrower guarantee than on Unix, stated in
//! `docs/platforms.md`.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::windows::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

/// `FILE_FLAG_OPEN_REPARSE_POINT`: open a link itself instead of what it points to.
const OPEN_REPARSE_POINT: u32 = 0x0020_0000;
/// `FILE_FLAG_BACKUP_SEMANTICS`: needed to open a directory handle at all.
const BACKUP_SEMANTICS: u32 = 0x0200_0000;

/// Opens `path` for reading. `path` must be absolute and resolved.
pub fn open_read(path: &Path) -> io::Result<File> {
    let (parent, _) = split(path)?;
    check_no_link_on_the_way(&parent, path)?;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(OPEN_REPARSE_POINT)
        .open(path)?;
    ensure_regular(&file, path)?;
    Ok(file)
}

/// Opens `path` for writing, replacing its content, creating it (and, with `Parents::Create`, its
/// missing parent directories). `path` must be absolute and resolved.
pub fn open_write(path: &Path, parents: Parents) -> io::Result<File> {
    let (parent, _) = split(path)?;
    if parents == Parents::Create {
        std::fs::create_dir_all(&parent)?;
    }
    check_no_link_on_the_way(&parent, path)?;
    match std::fs::symlink_metadata(path) {
        Ok(meta) if !meta.file_type().is_file() => return Err(not_regular(&meta, path)),
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(OPEN_REPARSE_POINT)
        .open(path)?;
    ensure_regular(&file, path)?;
    Ok(file)
}

/// What a resolved path names now (see the Unix version): a regular file or nothing, with no
/// link on the way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    Absent,
    File { mode: u32 },
}

/// What `path` names, when no directory on the way is a link and the name is a regular file or
/// nothing; an error otherwise.
pub fn slot(path: &Path) -> io::Result<Slot> {
    let (parent, _) = split(path)?;
    check_no_link_on_the_way(&parent, path)?;
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_file() => Ok(Slot::File { mode: 0o644 }),
        Ok(meta) => Err(not_regular(&meta, path)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Slot::Absent),
        Err(e) => Err(e),
    }
}

/// A name in a checked directory: what `/undo` changes the workspace through. Every operation
/// acts on the name itself (a link there is removed or replaced, never followed).
pub struct Entry {
    path: PathBuf,
}

/// The entry `path` names (its parent directories created with `Parents::Create`). `path` must
/// be absolute and resolved.
pub fn entry(path: &Path, parents: Parents) -> io::Result<Entry> {
    let (parent, _) = split(path)?;
    if parents == Parents::Create {
        std::fs::create_dir_all(&parent)?;
    }
    check_no_link_on_the_way(&parent, path)?;
    Ok(Entry {
        path: path.to_owned(),
    })
}

impl Entry {
    /// Removes a file or a link (the link itself).
    pub fn remove_file(&self) -> io::Result<()> {
        std::fs::remove_file(&self.path)
    }

    /// Removes an empty directory (or a directory link, not what it points to).
    pub fn remove_dir(&self) -> io::Result<()> {
        std::fs::remove_dir(&self.path)
    }

    /// Creates the directory (Windows has no mode bits: it inherits its parent's access list).
    pub fn make_dir(&self, _mode: u32) -> io::Result<()> {
        match std::fs::create_dir(&self.path) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && self.path.is_dir() => Ok(()),
            other => other,
        }
    }

    /// Creates a symlink named by this entry, pointing at `target` (which is not followed).
    /// Windows only lets administrators and Developer Mode create them.
    pub fn symlink(&self, target: &Path) -> io::Result<()> {
        let resolved = self
            .path
            .parent()
            .map_or_else(|| target.to_owned(), |dir| dir.join(target));
        if resolved.is_dir() {
            std::os::windows::fs::symlink_dir(target, &self.path)
        } else {
            std::os::windows::fs::symlink_file(target, &self.path)
        }
    }

    /// Replaces whatever the name holds (a file or a link, not a directory) with a regular file
    /// of `bytes`: written to a temporary name in the same directory, then renamed over, so a
    /// reader never sees half a file. Of `mode` only "not writable" exists here (read-only).
    pub fn replace_with_file(&self, bytes: &[u8], mode: u32) -> io::Result<()> {
        use std::io::Write as _;
        let tmp_name = format!(".ferrite-undo-{}", uuid::Uuid::now_v7().simple());
        let tmp = self
            .path
            .parent()
            .map_or_else(|| PathBuf::from(&tmp_name), |dir| dir.join(&tmp_name));
        let written = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .and_then(|mut file| file.write_all(bytes))
            .and_then(|()| {
                let mut perms = std::fs::metadata(&tmp)?.permissions();
                perms.set_readonly(mode & 0o200 == 0);
                std::fs::set_permissions(&tmp, perms)
            })
            .and_then(|()| std::fs::rename(&tmp, &self.path));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }
}

/// Whether missing parent directories are created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parents {
    MustExist,
    Create,
}

/// The parent directory and file name of an absolute, resolved path.
fn split(path: &Path) -> io::Result<(PathBuf, &std::ffi::OsStr)> {
    let resolved = path.is_absolute()
        && !path
            .components()
            .any(|c| matches!(c, Component::CurDir | Component::ParentDir));
    if !resolved {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a resolved absolute path", path.display()),
        ));
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => Ok((parent.to_owned(), name)),
        _ => Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "the root directory is not a file",
        )),
    }
}

/// Refuses when a directory of `dir` (itself included) is a symbolic link or a junction.
fn check_no_link_on_the_way(dir: &Path, path: &Path) -> io::Result<()> {
    for ancestor in dir.ancestors() {
        // The drive or share root itself cannot be a link.
        if ancestor.parent().is_none() {
            break;
        }
        let meta = std::fs::symlink_metadata(ancestor)?;
        if meta.file_type().is_symlink() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} passes through a symlink or junction; file tools do not follow links \
                     that appear after the permission check",
                    path.display()
                ),
            ));
        }
        // A directory handle opened without following links proves the name is a directory.
        let _ = OpenOptions::new()
            .read(true)
            .custom_flags(OPEN_REPARSE_POINT | BACKUP_SEMANTICS)
            .open(ancestor)?;
    }
    Ok(())
}

fn ensure_regular(file: &File, path: &Path) -> io::Result<()> {
    let meta = file.metadata()?;
    if meta.file_type().is_file() {
        Ok(())
    } else {
        Err(not_regular(&meta, path))
    }
}

fn not_regular(meta: &std::fs::Metadata, path: &Path) -> io::Error {
    let what = if meta.is_dir() {
        return io::Error::new(
            io::ErrorKind::IsADirectory,
            format!("{} is a directory", path.display()),
        );
    } else if meta.file_type().is_symlink() {
        "a symlink"
    } else {
        "not a regular file"
    };
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{} is {what}; file tools only open regular files",
            path.display()
        ),
    )
}
