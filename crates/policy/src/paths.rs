//! Turning the paths a model writes into the paths the policy and the file system see.
//!
//! The permission policy decides on what a call *really* touches, so a path is resolved the way
//! the kernel would: relative to the session's cwd, `..` applied after symlinks are followed. Only
//! the part of the path that exists can be canonicalized; a tail that does not exist yet (a file
//! `write` will create) is kept as written, normalized.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

// Windows path syntax as pure functions; the policy uses them on Windows, tests run everywhere.
#[cfg_attr(not(windows), allow(dead_code))]
mod windows;

/// How many symlinks one resolution follows before giving up, as the kernel's `ELOOP` limit.
const MAX_SYMLINK_HOPS: usize = 40;

/// `input` (absolute, relative to `cwd`, or `~/...`) as an absolute path with every symlink
/// resolved, the final component and dangling links included, and `..` applied after the links
/// before it were followed (what the kernel does). A tail that does not exist yet (a file `write`
/// will create) is kept as written, normalized.
///
/// Resolving *dangling* links matters: `canonicalize` fails on them, and a link in the workspace
/// pointing at a file outside it that does not exist yet would otherwise look like a workspace
/// path to the policy while `write` creates the file outside. A symlink loop leaves the rest of the
/// path unresolved; the operation itself then fails, because tools open what was decided without
/// following any link ([`super::fsops`]).
pub fn resolve(cwd: &Path, input: &str) -> PathBuf {
    let joined = match expand_home(input) {
        Some(home) => home,
        None => cwd.join(input),
    };
    resolve_components(&joined)
}

/// One step of the walk: back to a root, up, or into a name.
enum Step {
    Root(PathBuf),
    Parent,
    Name(OsString),
}

fn resolve_components(path: &Path) -> PathBuf {
    // Steps still to walk, in reverse so the next one is `pop()`ed.
    let mut pending: Vec<Step> = Vec::new();
    push_reversed(&mut pending, path);
    let mut out = PathBuf::from(std::path::MAIN_SEPARATOR_STR);
    let mut hops = 0usize;
    while let Some(step) = pending.pop() {
        match step {
            Step::Root(root) => out = root,
            Step::Parent => {
                // `out` holds no symlink, so popping is what the kernel does.
                out.pop();
            }
            Step::Name(name) => {
                let candidate = out.join(&name);
                match std::fs::symlink_metadata(&candidate) {
                    Ok(meta) if meta.file_type().is_symlink() && hops < MAX_SYMLINK_HOPS => {
                        hops += 1;
                        match std::fs::read_link(&candidate) {
                            // The link's target replaces the link: absolute from its root,
                            // relative from the link's directory (`out`).
                            Ok(target) => push_reversed(&mut pending, &target),
                            Err(_) => out = candidate,
                        }
                    }
                    _ => out = candidate,
                }
            }
        }
    }
    out
}

/// Pushes `path`'s steps onto `stack` so that they pop in order; an absolute path starts with
/// its root, which resets the walk. On Windows the root keeps its drive or share, in the plain
/// spelling (`\\?\C:\` → `C:\`), so every spelling of a path resolves to the same one.
fn push_reversed(stack: &mut Vec<Step>, path: &Path) {
    let mut steps: Vec<Step> = Vec::new();
    let mut after_prefix = false;
    for comp in path.components() {
        match comp {
            Component::Prefix(prefix) => {
                let prefix = prefix.as_os_str().to_string_lossy();
                steps.push(Step::Root(PathBuf::from(windows::plain_root(&prefix))));
                after_prefix = true;
                continue;
            }
            // The prefix already stands for its root directory.
            Component::RootDir if after_prefix => {}
            Component::RootDir => {
                steps.push(Step::Root(PathBuf::from(std::path::MAIN_SEPARATOR_STR)))
            }
            Component::CurDir => {}
            Component::ParentDir => steps.push(Step::Parent),
            Component::Normal(n) => steps.push(Step::Name(n.to_owned())),
        }
        after_prefix = false;
    }
    stack.extend(steps.into_iter().rev());
}

/// Whether `path` is `dir` or lies below it, as the file system compares names: component-wise
/// on Unix; on Windows also case-insensitively and whatever the prefix's spelling (see
/// `paths/windows.rs`). Both already resolved.
pub fn is_under(path: &Path, dir: &Path) -> bool {
    #[cfg(windows)]
    let under = windows::is_under(&path.to_string_lossy(), &dir.to_string_lossy());
    #[cfg(not(windows))]
    let under = path.starts_with(dir);
    under
}

/// Whether `path` (already resolved) lies in one of the workspace `roots` (canonical).
pub fn is_inside(path: &Path, roots: &[PathBuf]) -> bool {
    roots.iter().any(|root| is_under(path, root))
}

/// How a resolved path is shown to people and the model: relative to `cwd` when inside it,
/// absolute otherwise.
pub fn display(path: &Path, cwd: &Path) -> String {
    let canonical_cwd = std::fs::canonicalize(cwd).ok();
    let rel = path.strip_prefix(cwd).ok().or_else(|| {
        canonical_cwd
            .as_deref()
            .and_then(|c| path.strip_prefix(c).ok())
    });
    match rel {
        Some(r) if r.as_os_str().is_empty() => ".".to_owned(),
        Some(r) => r.display().to_string(),
        None => path.display().to_string(),
    }
}

/// `~` and `~/x` name the user's home, as in a shell; models write them often.
fn expand_home(input: &str) -> Option<PathBuf> {
    let rest = if input == "~" {
        ""
    } else {
        input.strip_prefix("~/")?
    };
    // HOME, else the passwd entry (an editor may start the agent without HOME).
    let home = std::env::home_dir()?;
    Some(home.join(rest))
}

/// The directories from the repository root down to `cwd`, root first.
pub fn chain(cwd: &Path) -> Vec<PathBuf> {
    let root = cwd
        .ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(cwd);
    let mut dirs: Vec<PathBuf> = cwd
        .ancestors()
        .take_while(|d| d.starts_with(root))
        .map(Path::to_path_buf)
        .collect();
    dirs.reverse();
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(p: &Path) -> PathBuf {
        std::fs::canonicalize(p).unwrap()
    }

    #[test]
    fn relative_paths_join_cwd_and_dotdot_is_applied() {
        let dir = tempfile::tempdir().unwrap();
        let root = canon(dir.path());
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        assert_eq!(resolve(&root, "a/b/../c.txt"), root.join("a/c.txt"));
        assert_eq!(resolve(&root, "./a/./b"), root.join("a/b"));
        assert_eq!(resolve(&root.join("a"), "../x"), root.join("x"));
        assert_eq!(resolve(&root, "/etc/../tmp"), canon(Path::new("/tmp")));
    }

    #[test]
    fn missing_tail_is_kept_and_normalized() {
        let dir = tempfile::tempdir().unwrap();
        let root = canon(dir.path());
        assert_eq!(
            resolve(&root, "new/dir/../file.rs"),
            root.join("new/file.rs")
        );
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_followed_before_dotdot() {
        let dir = tempfile::tempdir().unwrap();
        let root = canon(dir.path());
        let outside = tempfile::tempdir().unwrap();
        let outside_root = canon(outside.path());
        std::fs::create_dir_all(outside_root.join("deep/inner")).unwrap();
        std::os::unix::fs::symlink(outside_root.join("deep/inner"), root.join("link")).unwrap();
        // The kernel resolves `link/..` to the link target's parent, not to `root`.
        assert_eq!(resolve(&root, "link/../x"), outside_root.join("deep/x"));
        assert_eq!(
            resolve(&root, "link/new.txt"),
            outside_root.join("deep/inner/new.txt")
        );
        assert!(!is_inside(
            &resolve(&root, "link/f"),
            std::slice::from_ref(&root)
        ));
        assert!(is_inside(&resolve(&root, "f"), &[root]));
    }

    #[cfg(unix)]
    #[test]
    fn dangling_links_are_resolved_to_where_they_point() {
        let dir = tempfile::tempdir().unwrap();
        let root = canon(dir.path());
        let outside = tempfile::tempdir().unwrap();
        let outside_root = canon(outside.path());
        // A cloned repository can ship a link to a file that does not exist yet.
        std::os::unix::fs::symlink(outside_root.join("victim.txt"), root.join("innocent.txt"))
            .unwrap();
        assert_eq!(
            resolve(&root, "innocent.txt"),
            outside_root.join("victim.txt")
        );
        // Relative targets, chains of links and a dangling directory link.
        std::os::unix::fs::symlink("innocent.txt", root.join("second")).unwrap();
        assert_eq!(resolve(&root, "second"), outside_root.join("victim.txt"));
        std::os::unix::fs::symlink(outside_root.join("nodir"), root.join("d")).unwrap();
        assert_eq!(resolve(&root, "d/f.txt"), outside_root.join("nodir/f.txt"));
        // A loop stops without hanging.
        std::os::unix::fs::symlink("loop2", root.join("loop1")).unwrap();
        std::os::unix::fs::symlink("loop1", root.join("loop2")).unwrap();
        let _ = resolve(&root, "loop1/x");
    }

    #[test]
    fn display_is_relative_inside_cwd() {
        let dir = tempfile::tempdir().unwrap();
        let root = canon(dir.path());
        assert_eq!(display(&root.join("a/b.rs"), &root), "a/b.rs");
        assert_eq!(display(&root, &root), ".");
        assert_eq!(display(Path::new("/elsewhere/x"), &root), "/elsewhere/x");
    }
}
