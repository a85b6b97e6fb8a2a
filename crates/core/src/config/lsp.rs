//! `[lsp]`: the language servers Ferrite runs after edits (`docs/lsp.md`). The user file adds,
//! changes or turns off servers; a workspace file may only turn them off (or shorten the wait): a
//! cloned repository must not choose what program runs.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::{Config, ConfigError};

/// `[lsp]` as written in one file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLsp {
    enabled: Option<bool>,
    wait_ms: Option<u64>,
    restart_ms: Option<u64>,
    #[serde(default)]
    servers: BTreeMap<String, LspServerConfig>,
}

/// `[lsp.servers.NAME]`: a new server, or what changes of a built-in one (`docs/lsp.md`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LspServerConfig {
    /// The program and its arguments (`["pyright-langserver", "--stdio"]`).
    pub command: Option<Vec<String>>,
    /// LSP language ids the server handles (`python`, `typescript`, `rust`, ...).
    pub languages: Option<Vec<String>>,
    /// Files or directories whose presence marks a project root (`pyproject.toml`).
    pub root_markers: Option<Vec<String>>,
    /// `false` turns the server off.
    pub enabled: Option<bool>,
}

/// The merged `[lsp]` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LspConfig {
    pub enabled: bool,
    /// How long an edit waits for its diagnostics.
    pub wait_ms: u64,
    /// The wait before a crashed server's second restart (the first is at once), doubled for
    /// each further one up to [`MAX_BACKOFF_MS`] (or this, if longer).
    pub restart_ms: u64,
    /// The user's servers and changes to the built-in ones, by name; the workspace's only ever
    /// say `enabled = false`.
    pub servers: BTreeMap<String, LspServerConfig>,
}

impl Default for LspConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            wait_ms: DEFAULT_WAIT_MS,
            restart_ms: DEFAULT_RESTART_MS,
            servers: BTreeMap::new(),
        }
    }
}

pub const DEFAULT_WAIT_MS: u64 = 1500;
/// The longest wait accepted: an edit is never held up longer.
pub const MAX_WAIT_MS: u64 = 30_000;
pub const DEFAULT_RESTART_MS: u64 = 2000;
/// The longest wait between restarts of a server that keeps crashing (unless `restart_ms` is
/// longer).
pub const MAX_BACKOFF_MS: u64 = 60_000;
/// The longest `restart_ms` accepted: an hour.
const MAX_RESTART_MS: u64 = 3_600_000;

fn check_wait(wait: u64) -> Result<(), String> {
    if wait > MAX_WAIT_MS {
        return Err(format!("`lsp.wait_ms` accepts 0 to {MAX_WAIT_MS}"));
    }
    Ok(())
}

fn check_server(name: &str, s: &LspServerConfig) -> Result<(), String> {
    if s.command.as_ref().is_some_and(|c| c.is_empty()) {
        return Err(format!(
            "`lsp.servers.{name}.command` must name a program, e.g. [\"{name}\", \"--stdio\"]"
        ));
    }
    if s.languages.as_ref().is_some_and(|l| l.is_empty()) {
        return Err(format!(
            "`lsp.servers.{name}.languages` must list at least one LSP language id"
        ));
    }
    Ok(())
}

impl Config {
    pub(super) fn apply_user_lsp(&mut self, raw: RawLsp, path: &Path) -> Result<(), ConfigError> {
        let invalid = |message: String| ConfigError::Invalid {
            path: path.to_owned(),
            message,
        };
        if let Some(e) = raw.enabled {
            self.lsp.enabled = e;
        }
        if let Some(w) = raw.wait_ms {
            check_wait(w).map_err(invalid)?;
            self.lsp.wait_ms = w;
        }
        if let Some(r) = raw.restart_ms {
            if r > MAX_RESTART_MS {
                return Err(invalid(format!(
                    "`lsp.restart_ms` accepts 0 to {MAX_RESTART_MS}"
                )));
            }
            self.lsp.restart_ms = r;
        }
        for (name, server) in raw.servers {
            check_server(&name, &server).map_err(invalid)?;
            self.lsp.servers.insert(name, server);
        }
        Ok(())
    }

    /// Only turning off: `enabled = false` (all, or one server) and a shorter `wait_ms`.
    pub(super) fn apply_workspace_lsp(
        &mut self,
        raw: RawLsp,
        path: &Path,
    ) -> Result<(), ConfigError> {
        let shown = path.display();
        match raw.enabled {
            Some(true) if !self.lsp.enabled => self.warnings.push(format!(
                "{shown}: `lsp.enabled = true` ignored: only the user config may turn language \
                 servers on"
            )),
            Some(e) => self.lsp.enabled = e,
            None => {}
        }
        if let Some(w) = raw.wait_ms {
            check_wait(w).map_err(|message| ConfigError::Invalid {
                path: path.to_owned(),
                message,
            })?;
            self.lsp.wait_ms = self.lsp.wait_ms.min(w);
        }
        if raw.restart_ms.is_some() {
            self.warnings.push(format!(
                "{shown}: `lsp.restart_ms` ignored: only the user config sets it"
            ));
        }
        for (name, server) in raw.servers {
            let off = LspServerConfig {
                enabled: Some(false),
                ..Default::default()
            };
            if server != off {
                self.warnings.push(format!(
                    "{shown}: `lsp.servers.{name}` ignored except `enabled = false`: only the \
                     user config may say what a language server runs"
                ));
            }
            if server.enabled == Some(false) {
                self.lsp.servers.entry(name).or_default().enabled = Some(false);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str) -> Result<Config, ConfigError> {
        Config::from_user_toml(text, Path::new("/home/u/.ferrite/config.toml"))
    }

    #[test]
    fn the_section_is_read_and_unknown_keys_are_errors() {
        let c = user(
            "[lsp]\nenabled = true\nwait_ms = 900\n[lsp.servers.ruff]\ncommand = [\"ruff\", \
             \"server\"]\nlanguages = [\"python\"]\nroot_markers = [\"pyproject.toml\"]\n",
        )
        .unwrap();
        assert_eq!(c.lsp.wait_ms, 900);
        assert_eq!(c.lsp.restart_ms, DEFAULT_RESTART_MS);
        assert_eq!(user("[lsp]\nrestart_ms = 10\n").unwrap().lsp.restart_ms, 10);
        let err = user("[lsp]\nrestart_ms = 99999999\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("lsp.restart_ms"), "{err}");
        let ruff = &c.lsp.servers["ruff"];
        assert_eq!(ruff.command.as_deref().unwrap()[0], "ruff");
        let err = user("[lsp]\nwait = 3\n").unwrap_err().to_string();
        assert!(err.contains("wait"), "{err}");
        let err = user("[lsp.servers.x]\ncmd = [\"x\"]\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("cmd"), "{err}");
        let err = user("[lsp]\nwait_ms = 999999\n").unwrap_err().to_string();
        assert!(err.contains("lsp.wait_ms"), "{err}");
        let err = user("[lsp.servers.x]\ncommand = []\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("lsp.servers.x.command"), "{err}");
    }

    #[test]
    fn a_workspace_may_only_turn_servers_off() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join(".ferrite")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join("config.toml"), "[lsp]\nwait_ms = 1000\n").unwrap();
        std::fs::write(
            ws.join(".ferrite/config.toml"),
            "[lsp]\nwait_ms = 5000\n[lsp.servers.pyright]\nenabled = false\n\
             [lsp.servers.evil]\ncommand = [\"sh\", \"-c\", \"touch /tmp/pwned\"]\n\
             languages = [\"python\"]\n",
        )
        .unwrap();
        let c = Config::load(&home, Some(&ws)).unwrap();
        assert_eq!(c.lsp.wait_ms, 1000, "a workspace only shortens the wait");
        assert_eq!(c.lsp.servers["pyright"].enabled, Some(false));
        assert!(!c.lsp.servers.contains_key("evil"));
        assert!(
            c.warnings.iter().any(|w| w.contains("lsp.servers.evil")),
            "{:?}",
            c.warnings
        );
    }
}
