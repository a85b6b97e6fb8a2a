//! Opening exactly the file the permission policy decided on.
//!
//! The policy decides on a path that [`crate::paths::resolve`] resolved completely (no symlink left
//! in it). Between that decision and the operation, a file can be swapped for a symlink (a command
//! of the same turn, another process), and `std::fs` would follow it out of the workspace. So tools
//! open files by walking the decided path one component at a time from `/`, each directory opened
//! with `O_NOFOLLOW | O_DIRECTORY` relative to the previous one, and the file itself with
//! `O_NOFOLLOW`: a symlink anywhere fails the operation instead of redirecting it. This is
//! stricter than `openat2(RESOLVE_BENEATH)` (which still follows links that stay beneath) and works
//! on every Unix kernel; rustix gives it without `unsafe`.
//!
//! Only regular files are opened: a FIFO fed forever, `/dev/stdin` (the editor's messages), a
//! device or a socket is refused before a byte is read. The agent's own `/proc` entries (its
//! environment holds the provider keys) are refused whatever the mode.

use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Component, Path};

use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags};
use rustix::io::Errno;

/// Opens `path` for reading. `path` must be absolute and resolved.
pub fn open_read(path: &Path) -> io::Result<File> {
    refuse_own_proc(path)?;
    let (dir, name) = walk_to_parent(path, Parents::MustExist)?;
    // A special file is refused before it is opened: opening a device can act.
    refuse_special(&dir, name, path)?;
    let fd = rustix::fs::openat(
        &dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
        Mode::empty(),
    )
    .map_err(|e| explain(e, path))?;
    ensure_regular(&fd, path)?;
    Ok(File::from(fd))
}

/// Opens `path` for writing, replacing its content, creating it (and, with `Parents::Create`, its
/// missing parent directories). `path` must be absolute and resolved.
pub fn open_write(path: &Path, parents: Parents) -> io::Result<File> {
    refuse_own_proc(path)?;
    let (dir, name) = walk_to_parent(path, parents)?;
    // Refuse anything but a regular file before opening it: opening a FIFO or a device can
    // block or act.
    match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile => {
            return Err(not_regular(FileType::from_raw_mode(st.st_mode), path));
        }
        Ok(_) | Err(Errno::NOENT) => {}
        Err(e) => return Err(explain(e, path)),
    }
    let fd = rustix::fs::openat(
        &dir,
        name,
        OFlags::WRONLY
            | OFlags::CREATE
            | OFlags::TRUNC
            | OFlags::NOFOLLOW
            | OFlags::CLOEXEC
            | OFlags::NONBLOCK,
        Mode::from_raw_mode(0o666),
    )
    .map_err(|e| explain(e, path))?;
    ensure_regular(&fd, path)?;
    Ok(File::from(fd))
}

/// What a resolved path names now, reached without following any link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// Nothing there (its folder is).
    Absent,
    /// A regular file, with its permission bits.
    File { mode: u32 },
}

/// What `path` names, when every directory on the way is a real directory (no link) and the
/// name itself is a regular file or nothing; an error otherwise (a link anywhere, a special
/// file). What a write handed to another program (the editor) is checked against, before and
/// after.
pub fn slot(path: &Path) -> io::Result<Slot> {
    refuse_own_proc(path)?;
    let (dir, name) = walk_to_parent(path, Parents::MustExist)?;
    match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => Ok(Slot::File {
                mode: st.st_mode & 0o7777,
            }),
            other => Err(not_regular(other, path)),
        },
        Err(Errno::NOENT) => Ok(Slot::Absent),
        Err(e) => Err(explain(e, path)),
    }
}

/// A name in a directory opened without following any link: what `/undo` changes the workspace
/// through. The directory was reached by the same no-follow walk as [`open_write`]'s, so a
/// symlink planted anywhere on the way makes [`entry`] fail, and every operation acts on the
/// name itself (a link there is removed or replaced, never followed).
pub struct Entry {
    dir: OwnedFd,
    name: std::ffi::OsString,
    path: std::path::PathBuf,
}

/// The entry `path` names (its parent directories created with `Parents::Create`). `path` must
/// be absolute and resolved.
pub fn entry(path: &Path, parents: Parents) -> io::Result<Entry> {
    refuse_own_proc(path)?;
    let (dir, name) = walk_to_parent(path, parents)?;
    let name = name.to_owned();
    Ok(Entry {
        dir,
        name,
        path: path.to_owned(),
    })
}

impl Entry {
    /// Removes a file or a link (the link itself).
    pub fn remove_file(&self) -> io::Result<()> {
        rustix::fs::unlinkat(&self.dir, &self.name, AtFlags::empty())
            .map_err(|e| explain(e, &self.path))
    }

    /// Removes an empty directory.
    pub fn remove_dir(&self) -> io::Result<()> {
        rustix::fs::unlinkat(&self.dir, &self.name, AtFlags::REMOVEDIR).map_err(|e| match e {
            Errno::NOTEMPTY | Errno::EXIST => io::Error::other("the directory is not empty"),
            other => explain(other, &self.path),
        })
    }

    /// Creates the directory (if missing) and gives it exactly `mode`.
    pub fn make_dir(&self, mode: u32) -> io::Result<()> {
        match rustix::fs::mkdirat(&self.dir, &self.name, Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(explain(e, &self.path)),
        }
        let fd = rustix::fs::openat(
            &self.dir,
            &self.name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| explain(e, &self.path))?;
        rustix::fs::fchmod(&fd, permission_mode(mode)).map_err(io::Error::from)
    }

    /// Creates a symlink named by this entry, pointing at `target` (which is not followed).
    pub fn symlink(&self, target: &Path) -> io::Result<()> {
        rustix::fs::symlinkat(target, &self.dir, &self.name).map_err(|e| explain(e, &self.path))
    }

    /// Replaces whatever the name holds (a file or a link, not a directory) with a regular file
    /// of `bytes` and exactly `mode`: written to a temporary name in the same directory, then
    /// renamed over, so a reader never sees half a file.
    pub fn replace_with_file(&self, bytes: &[u8], mode: u32) -> io::Result<()> {
        use std::io::Write as _;
        let tmp = format!(".ferrite-undo-{}", uuid::Uuid::now_v7().simple());
        let fd = rustix::fs::openat(
            &self.dir,
            tmp.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|e| explain(e, &self.path))?;
        let mut file = File::from(fd);
        let written = file
            .write_all(bytes)
            .and_then(|()| {
                rustix::fs::fchmod(&file, permission_mode(mode)).map_err(io::Error::from)
            })
            .and_then(|()| {
                rustix::fs::renameat(&self.dir, tmp.as_str(), &self.dir, &self.name)
                    .map_err(|e| explain(e, &self.path))
            });
        if written.is_err() {
            let _ = rustix::fs::unlinkat(&self.dir, tmp.as_str(), AtFlags::empty());
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

/// Opens every directory of `path` but the last component, none of them through a symlink, and
/// returns the parent's handle with the file name.
fn walk_to_parent(path: &Path, parents: Parents) -> io::Result<(OwnedFd, &std::ffi::OsStr)> {
    let mut names = Vec::new();
    for comp in path.components() {
        match comp {
            Component::RootDir => {}
            Component::Normal(n) => names.push(n),
            Component::Prefix(_) | Component::CurDir | Component::ParentDir => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{} is not a resolved absolute path", path.display()),
                ));
            }
        }
    }
    if !path.is_absolute() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not an absolute path", path.display()),
        ));
    }
    let Some(file_name) = names.pop() else {
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "the root directory is not a file",
        ));
    };
    let mut dir =
        rustix::fs::openat(CWD, "/", dir_flags(), Mode::empty()).map_err(io::Error::from)?;
    for name in names {
        dir = match rustix::fs::openat(&dir, name, dir_flags(), Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) if parents == Parents::Create => {
                match rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(0o777)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(explain(e, path)),
                }
                rustix::fs::openat(&dir, name, dir_flags(), Mode::empty())
                    .map_err(|e| explain(e, path))?
            }
            Err(e) => return Err(explain(e, path)),
        };
    }
    Ok((dir, file_name))
}

/// Refuses `name` in `dir` when it is there and is neither a regular file nor a directory (a
/// directory is refused after the open, as before any read; a symlink fails the no-follow open
/// that comes next).
fn refuse_special(dir: &OwnedFd, name: &std::ffi::OsStr, path: &Path) -> io::Result<()> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile | FileType::Directory | FileType::Symlink => Ok(()),
            other => Err(not_regular(other, path)),
        },
        Err(Errno::NOENT) => Ok(()),
        Err(e) => Err(explain(e, path)),
    }
}

fn dir_flags() -> OFlags {
    // O_PATH: a directory we may only traverse (mode --x) can still be walked through.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let access = OFlags::PATH;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let access = OFlags::RDONLY;
    access | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

fn ensure_regular(fd: &OwnedFd, path: &Path) -> io::Result<()> {
    let st = rustix::fs::fstat(fd).map_err(io::Error::from)?;
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => Ok(()),
        FileType::Directory => Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            format!("{} is a directory", path.display()),
        )),
        other => Err(not_regular(other, path)),
    }
}

fn not_regular(kind: FileType, path: &Path) -> io::Error {
    let what = match kind {
        FileType::Fifo => "a FIFO (named pipe)",
        FileType::Socket => "a socket",
        FileType::CharacterDevice | FileType::BlockDevice => "a device",
        FileType::Directory => "a directory",
        FileType::Symlink => "a symlink",
        FileType::RegularFile | FileType::Unknown => "not a regular file",
    };
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{} is {what}; file tools only open regular files",
            path.display()
        ),
    )
}

/// Turns the errors of a no-follow walk into what happened: `ELOOP`/`ENOTDIR` on a component that
/// was a directory when the policy decided means a symlink took its place.
fn explain(e: Errno, path: &Path) -> io::Error {
    match e {
        Errno::LOOP | Errno::NOTDIR | Errno::MLINK => io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} passes through a symlink or a non-directory; file tools do not follow \
                 links that appear after the permission check",
                path.display()
            ),
        ),
        Errno::NXIO => not_regular(FileType::Fifo, path),
        other => io::Error::from(other),
    }
}

/// The agent's own process entries: `/proc/<our pid>` (reached as `/proc/self` after resolution).
fn refuse_own_proc(path: &Path) -> io::Result<()> {
    let own = Path::new("/proc").join(std::process::id().to_string());
    let own_entry = path.starts_with(&own)
        || path.starts_with("/proc/self")
        || path.starts_with("/proc/thread-self");
    if own_entry {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "the agent's own process files (environment, memory, descriptors) are not readable \
             by tools",
        ));
    }
    Ok(())
}

/// Permission bits as this platform's `mode_t`: `u32` on Linux, `u16` on macOS. Only the low
/// twelve bits (permissions, setuid/setgid, sticky) are ever set, so nothing is lost either way.
#[allow(clippy::unnecessary_cast)]
fn permission_mode(mode: u32) -> Mode {
    Mode::from_raw_mode((mode & 0o7777) as rustix::fs::RawMode)
}

/// A named pipe at `path`, for tests of special-file handling (`mkfifo` exists on every Unix;
/// rustix has no `mknodat` on macOS).
#[cfg(test)]
pub(crate) fn make_fifo(path: &Path) {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .is_ok_and(|status| status.success());
    assert!(made, "mkfifo {}", path.display());
}

#[cfg(test)]
mod tests {
    use std::io::{Read as _, Write as _};

    use super::*;

    fn canon(p: &Path) -> std::path::PathBuf {
        std::fs::canonicalize(p).unwrap()
    }

    #[test]
    fn reads_and_writes_regular_files_creating_parents() {
        let dir = tempfile::tempdir().unwrap();
        let root = canon(dir.path());
        let target = root.join("a/b/c.txt");
        assert!(open_write(&target, Parents::MustExist).is_err());
        open_write(&target, Parents::Create)
            .unwrap()
            .write_all(b"hi")
            .unwrap();
        let mut s = String::new();
        open_read(&target).unwrap().read_to_string(&mut s).unwrap();
        assert_eq!(s, "hi");
    }

    #[test]
    fn a_symlink_anywhere_in_the_path_fails_the_operation() {
        let dir = tempfile::tempdir().unwrap();
        let root = canon(dir.path());
        let outside = tempfile::tempdir().unwrap();
        let out = canon(outside.path());
        std::fs::write(out.join("victim.txt"), "keep").unwrap();
        // The final component swapped for a link after the decision.
        std::os::unix::fs::symlink(out.join("victim.txt"), root.join("f.txt")).unwrap();
        let err = open_write(&root.join("f.txt"), Parents::Create).unwrap_err();
        assert!(err.to_string().contains("symlink"), "{err}");
        assert!(open_read(&root.join("f.txt")).is_err());
        // A directory swapped for a link.
        std::os::unix::fs::symlink(&out, root.join("d")).unwrap();
        assert!(open_write(&root.join("d/victim.txt"), Parents::Create).is_err());
        assert!(open_read(&root.join("d/victim.txt")).is_err());
        assert_eq!(
            std::fs::read_to_string(out.join("victim.txt")).unwrap(),
            "keep"
        );
    }

    #[test]
    fn special_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = canon(dir.path());
        let fifo = root.join("pipe");
        make_fifo(&fifo);
        let err = open_read(&fifo).unwrap_err();
        assert!(err.to_string().contains("FIFO"), "{err}");
        let err = open_write(&fifo, Parents::MustExist).unwrap_err();
        assert!(err.to_string().contains("FIFO"), "{err}");
        assert!(open_read(Path::new("/dev/null")).is_err());
        assert!(open_read(Path::new("/proc/self/environ")).is_err());
        let own = format!("/proc/{}/environ", std::process::id());
        assert!(open_read(Path::new(&own)).is_err());
    }
}
