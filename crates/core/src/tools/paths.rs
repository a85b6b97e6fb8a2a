//! Turning the paths a model writes into the paths the policy and the file system see.
//!
//! The permission policy decides on what a call *really* touches, so a path is resolved the way
//! the kernel would: relative to the session's cwd, `..` applied after symlinks are followed. Only
//! the part of the path that exists can be canonicalized; a tail that does not exist yet (a file
//! `write` will create) is kept as written, normalized.

use std::path::{Component, Path, PathBuf};

/// `input` (absolute, relative to `cwd`, or `~/...`) as an absolute path whose existing prefix is
/// canonical (symlinks resolved) and whose non-existing tail is lexically normalized.
pub fn resolve(cwd: &Path, input: &str) -> PathBuf {
    let joined = match expand_home(input) {
        Some(home) => home,
        None => cwd.join(input),
    };
    let mut out = PathBuf::new();
    for comp in joined.components() {
        match comp {
            Component::Prefix(_) | Component::RootDir => out.push(comp.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                // `out` is canonical as far as it exists, so popping is what the kernel does too.
                out.pop();
            }
            Component::Normal(name) => {
                out.push(name);
                // One syscall per component keeps symlinks in the middle of the path (`link/..`)
                // resolved before any later `..` is applied.
                if let Ok(canonical) = std::fs::canonicalize(&out) {
                    out = canonical;
                }
            }
        }
    }
    out
}

/// Whether `path` (already resolved) lies in one of the workspace `roots` (canonical).
pub fn is_inside(path: &Path, roots: &[PathBuf]) -> bool {
    roots.iter().any(|root| path.starts_with(root))
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
    let home = std::env::var_os("HOME")?;
    Some(PathBuf::from(home).join(rest))
}

/// A call id as a file name: ids come from the model provider, so anything but a conservative
/// character set is replaced rather than trusted in a path.
pub fn file_stem(call_id: &str) -> String {
    let stem: String = call_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(128)
        .collect();
    if stem.is_empty() {
        "call".to_owned()
    } else {
        stem
    }
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

    #[test]
    fn display_is_relative_inside_cwd() {
        let dir = tempfile::tempdir().unwrap();
        let root = canon(dir.path());
        assert_eq!(display(&root.join("a/b.rs"), &root), "a/b.rs");
        assert_eq!(display(&root, &root), ".");
        assert_eq!(display(Path::new("/elsewhere/x"), &root), "/elsewhere/x");
    }

    #[test]
    fn call_ids_become_safe_file_stems() {
        assert_eq!(file_stem("toolu_01-AB"), "toolu_01-AB");
        assert_eq!(file_stem("../../etc/passwd"), "______etc_passwd");
        assert_eq!(file_stem(""), "call");
    }
}
