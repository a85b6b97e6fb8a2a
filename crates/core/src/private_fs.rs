//! Ferrite's own files hold conversations, keys and rules: only their owner may read them.
//! Directories Ferrite creates are 0700 and its files 0600, whatever the umask.

use std::fs::OpenOptions;
use std::path::Path;

/// Creates `dir` and its missing parents with mode 0700 (existing ones are left as they are).
pub fn create_dir_all(dir: &Path) -> std::io::Result<()> {
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
    let mut opts = OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    opts
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
    }
}
