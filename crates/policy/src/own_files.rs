//! Files Ferrite reads on its own behalf: instructions (`AGENTS.md`, `CLAUDE.md`), prompt files
//! (`commands/*.md`), the workspace's `.ferrite/config.toml`, and the skills, agents and hooks
//! files that come next. No one approves these reads and what they hold goes to the model or the
//! editor, so a cloned repository must not be able to point them at anything else. Each read
//! gets the protections of the `read` tool, and one more, the area:
//!
//! - the path is resolved completely ([`crate::paths::resolve`]) and its target must lie in the
//!   area the file belongs to: the workspace tree it was found in, or, for a file of
//!   FERRITE_HOME, that file or directory there (`FERRITE_HOME/AGENTS.md`,
//!   `FERRITE_HOME/commands/`). A link leaving its area is not followed;
//! - a file of the workspace never leads into FERRITE_HOME (the keys, the config, the logs);
//! - `read(...)` deny rules apply to the path and to its target ([`OwnFiles`]); when the rules
//!   could not be read, nothing is read;
//! - the file is opened without following links ([`crate::fsops::open_read`]): a regular file
//!   only, never a FIFO (which would hang the agent), a device or the agent's own `/proc`;
//! - at most `max_bytes` are read; [`Text::cut`] says whether more followed.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::permissions::Rules;

/// The size bound of instruction and prompt files.
pub const MAX_BYTES: u64 = 64 * 1024;

/// What was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text {
    pub text: String,
    /// The file is longer than what was read.
    pub cut: bool,
}

/// Why a file was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skip {
    /// There is nothing at the path.
    Missing,
    /// Something is there that may not be read; why, in words for a log or a note (never the
    /// file's content).
    Refused(String),
}

impl Skip {
    fn refused(path: &Path, why: &str) -> Self {
        Skip::Refused(format!("{} was not read: {why}", path.display()))
    }
}

/// The policy for the files Ferrite reads for itself in one workspace: FERRITE_HOME, the
/// workspace roots and the deny rules in force.
#[derive(Debug, Clone)]
pub struct OwnFiles {
    home: PathBuf,
    roots: Vec<PathBuf>,
    /// `Err`: the rules could not be read, so nothing is (a dropped deny rule is a hole).
    deny: Result<Arc<Rules>, String>,
    /// The user's home directory, for the files users keep there (`~/.claude/skills`).
    user_home: Option<PathBuf>,
}

impl OwnFiles {
    /// `home` is resolved like every path the policy sees; `roots` are the session's
    /// (canonical) workspace roots.
    pub fn new(home: &Path, roots: &[PathBuf], deny: Result<Arc<Rules>, String>) -> Self {
        Self {
            home: canonical(home),
            roots: roots.iter().map(|r| canonical(r)).collect(),
            deny,
            user_home: None,
        }
    }

    /// The same policy, knowing the user's home directory.
    #[must_use]
    pub fn with_user_home(mut self, home: Option<&Path>) -> Self {
        self.user_home = home.map(canonical);
        self
    }

    /// The user's home directory, resolved, when known.
    pub fn user_home(&self) -> Option<&Path> {
        self.user_home.as_deref()
    }

    /// FERRITE_HOME, resolved.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// Reads `path`, whose target must lie under `area` (a workspace directory, or a file or
    /// directory under FERRITE_HOME), at most `max_bytes` of it.
    pub fn read(&self, path: &Path, area: &Path, max_bytes: u64) -> Result<Text, Skip> {
        let rules = self.deny.as_ref().map_err(|e| {
            Skip::refused(path, &format!("the permission rules are unusable ({e})"))
        })?;
        let target = crate::paths::resolve(Path::new("/"), &path.to_string_lossy());
        for p in [path, target.as_path()] {
            if rules.denies_read("read", p, &self.roots) {
                return Err(Skip::refused(path, "a `read` deny rule covers it"));
            }
        }
        read_contained(path, area, &self.home, max_bytes)
    }
}

/// Reads `path` if its resolved target lies under `area` and, unless `area` is in `home`
/// (FERRITE_HOME), not in `home`; opened without following links, a regular file only, at
/// most `max_bytes`. No deny rules: for the workspace config, which is read before there are
/// any; everything else goes through [`OwnFiles::read`].
pub fn read_contained(path: &Path, area: &Path, home: &Path, max_bytes: u64) -> Result<Text, Skip> {
    match std::fs::symlink_metadata(path) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Skip::Missing),
        Err(e) => return Err(Skip::refused(path, &e.to_string())),
    }
    let target = crate::paths::resolve(Path::new("/"), &path.to_string_lossy());
    let area = canonical_dir_of(area);
    let home = canonical(home);
    if !crate::paths::is_under(&target, &area) {
        return Err(Skip::refused(
            path,
            &format!("it links out of {}", area.display()),
        ));
    }
    if !crate::paths::is_under(&area, &home)
        && (crate::paths::is_under(&target, &home) || crate::paths::is_under(path, &home))
    {
        return Err(Skip::refused(
            path,
            "it leads into FERRITE_HOME (Ferrite's config, keys and sessions)",
        ));
    }
    let file = crate::fsops::open_read(&target).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Skip::Missing,
        _ => Skip::refused(path, &e.to_string()),
    })?;
    let mut bytes = Vec::new();
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| Skip::refused(path, &e.to_string()))?;
    let cut = bytes.len() as u64 > max_bytes;
    bytes.truncate(usize::try_from(max_bytes).unwrap_or(usize::MAX));
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        // A cut may split a character: keep what is whole.
        Err(e) if cut && e.utf8_error().error_len().is_none() => {
            let valid = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).unwrap_or_default()
        }
        Err(_) => return Err(Skip::refused(path, "it is not UTF-8 text")),
    };
    Ok(Text { text, cut })
}

/// `p` resolved as far as it exists.
fn canonical(p: &Path) -> PathBuf {
    crate::paths::resolve(Path::new("/"), &p.to_string_lossy())
}

/// An area is named by the caller (never by the repository): its parent is resolved, its last
/// component kept as written, so `FERRITE_HOME/AGENTS.md` stays that file even when it is a link.
fn canonical_dir_of(area: &Path) -> PathBuf {
    match (area.parent(), area.file_name()) {
        (Some(parent), Some(name)) => canonical(parent).join(name),
        _ => canonical(area),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    struct World {
        _dirs: [tempfile::TempDir; 3],
        home: PathBuf,
        ws: PathBuf,
        outside: PathBuf,
    }

    fn world() -> World {
        let dirs = [(); 3].map(|()| tempfile::tempdir().unwrap());
        let [home, ws, outside] = [0, 1, 2].map(|i| canonical(dirs[i].path()));
        std::fs::write(home.join("credentials.json"), "HOME-KEY").unwrap();
        std::fs::write(outside.join("id_rsa"), "OUTSIDE-KEY").unwrap();
        std::fs::write(ws.join(".env"), "ENV-KEY").unwrap();
        World {
            _dirs: dirs,
            home,
            ws,
            outside,
        }
    }

    fn own(w: &World, deny: &[&str]) -> OwnFiles {
        let deny: Vec<String> = deny.iter().map(|d| (*d).to_owned()).collect();
        let rules = Rules::from_strings(&[], &deny).unwrap();
        OwnFiles::new(&w.home, std::slice::from_ref(&w.ws), Ok(Arc::new(rules)))
    }

    fn refused(r: Result<Text, Skip>) -> String {
        match r {
            Err(Skip::Refused(why)) => why,
            other => panic!("read: {other:?}"),
        }
    }

    #[test]
    fn workspace_files_and_links_inside_are_read() {
        let w = world();
        std::fs::create_dir_all(w.ws.join("docs")).unwrap();
        std::fs::write(w.ws.join("docs/rules.md"), "RULES").unwrap();
        symlink("docs/rules.md", w.ws.join("AGENTS.md")).unwrap();
        let t = own(&w, &[])
            .read(&w.ws.join("AGENTS.md"), &w.ws, MAX_BYTES)
            .unwrap();
        assert_eq!(t.text, "RULES");
        assert_eq!(
            own(&w, &[]).read(&w.ws.join("CLAUDE.md"), &w.ws, MAX_BYTES),
            Err(Skip::Missing)
        );
    }

    #[test]
    fn links_out_of_the_area_into_home_to_denied_files_and_proc_are_refused() {
        let w = world();
        let own = own(&w, &["read(**/.env)"]);
        let cases = [
            ("out.md", w.outside.join("id_rsa"), "links out of"),
            ("home.md", w.home.join("credentials.json"), "links out of"),
            ("env.md", w.ws.join(".env"), "deny rule"),
            (
                "proc.md",
                PathBuf::from("/proc/self/environ"),
                "links out of",
            ),
        ];
        for (name, target, why) in cases {
            symlink(&target, w.ws.join(name)).unwrap();
            let r = refused(own.read(&w.ws.join(name), &w.ws, MAX_BYTES));
            assert!(r.contains(why), "{name}: {r}");
        }
        // A workspace that holds FERRITE_HOME (an editor opened on `~`) still cannot reach it.
        let r = refused(read_contained(
            &w.home.join("credentials.json"),
            w.home.parent().unwrap(),
            &w.home,
            MAX_BYTES,
        ));
        assert!(r.contains("FERRITE_HOME"), "{r}");
    }

    #[test]
    fn home_files_stay_in_their_own_area() {
        let w = world();
        let own = own(&w, &[]);
        symlink(w.home.join("credentials.json"), w.home.join("AGENTS.md")).unwrap();
        let agents = w.home.join("AGENTS.md");
        assert!(refused(own.read(&agents, &agents, MAX_BYTES)).contains("links out of"));
        std::fs::create_dir_all(w.home.join("commands")).unwrap();
        symlink(w.outside.join("id_rsa"), w.home.join("commands/x.md")).unwrap();
        let r = own.read(
            &w.home.join("commands/x.md"),
            &w.home.join("commands"),
            MAX_BYTES,
        );
        assert!(refused(r).contains("links out of"));
        std::fs::write(w.home.join("commands/ok.md"), "OK").unwrap();
        let t = own
            .read(
                &w.home.join("commands/ok.md"),
                &w.home.join("commands"),
                MAX_BYTES,
            )
            .unwrap();
        assert_eq!(t.text, "OK");
    }

    #[test]
    fn special_files_are_never_opened_and_size_is_bounded() {
        let w = world();
        let own = own(&w, &[]);
        let fifo = w.ws.join("AGENTS.md");
        crate::fsops::make_fifo(&fifo);
        assert!(refused(own.read(&fifo, &w.ws, MAX_BYTES)).contains("FIFO"));
        let big = w.ws.join("big.md");
        std::fs::write(&big, "é".repeat(100)).unwrap();
        let t = own.read(&big, &w.ws, 11).unwrap();
        assert_eq!((t.text.as_str(), t.cut), ("ééééé", true));
    }

    #[test]
    fn unusable_rules_read_nothing() {
        let w = world();
        std::fs::write(w.ws.join("AGENTS.md"), "x").unwrap();
        let own = OwnFiles::new(&w.home, std::slice::from_ref(&w.ws), Err("bad rule".into()));
        assert!(refused(own.read(&w.ws.join("AGENTS.md"), &w.ws, MAX_BYTES)).contains("bad rule"));
    }
}
