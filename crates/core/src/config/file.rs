//! One config file as written: its TOML shape (unknown keys are errors) and reading it. What the
//! values mean and how a file is merged into the configuration is in `apply`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{ConfigError, FsDelegation, McpServerConfig, ProviderConfig};
use crate::modes::Mode;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
    pub(super) model: Option<String>,
    pub(super) workspace_models: Option<Vec<String>>,
    pub(super) max_mode: Option<Mode>,
    pub(super) max_turn_requests: Option<u32>,
    pub(super) fs_delegation: Option<FsDelegation>,
    pub(super) titles: Option<bool>,
    pub(super) title_model: Option<String>,
    #[serde(default)]
    pub(super) permissions: RawPermissions,
    #[serde(default)]
    pub(super) sandbox: RawSandbox,
    #[serde(default)]
    pub(super) tools: RawTools,
    #[serde(default)]
    pub(super) compaction: RawCompaction,
    #[serde(default)]
    pub(super) web_fetch: RawWebFetch,
    #[serde(default)]
    pub(super) checkpoints: RawCheckpoints,
    #[serde(default)]
    pub(super) subagent: RawSubagent,
    #[serde(default)]
    pub(super) lsp: super::lsp::RawLsp,
    #[serde(default)]
    pub(super) providers: BTreeMap<String, ProviderConfig>,
    #[serde(default)]
    pub(super) mcp_servers: BTreeMap<String, McpServerConfig>,
    pub(super) hooks: Option<crate::hooks::HookTable>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPermissions {
    pub(super) timeout_secs: Option<u64>,
    #[serde(default)]
    pub(super) allow: Vec<String>,
    #[serde(default)]
    pub(super) deny: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSandbox {
    pub(super) network: Option<bool>,
    pub(super) deny_read: Option<Vec<String>>,
    pub(super) allow_unix_sockets: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTools {
    pub(super) output_max_bytes: Option<usize>,
    pub(super) output_max_lines: Option<usize>,
    pub(super) max_background_commands: Option<usize>,
    pub(super) bash_timeout_secs: Option<u64>,
    pub(super) spill_max_bytes: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSubagent {
    pub(super) model: Option<String>,
    pub(super) max_parallel: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWebFetch {
    pub(super) allow_private: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCompaction {
    pub(super) threshold: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCheckpoints {
    pub(super) max_count: Option<usize>,
    pub(super) max_file_bytes: Option<u64>,
    pub(super) max_session_bytes: Option<u64>,
    pub(super) max_total_bytes: Option<u64>,
}

pub(super) fn read_raw(path: &Path) -> Result<Option<(PathBuf, RawConfig)>, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some((path.to_owned(), parse_raw(&text, path)?))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ConfigError::Read {
            path: path.to_owned(),
            source,
        }),
    }
}

/// A workspace config larger than this is refused (a real one is a few hundred bytes).
const MAX_WORKSPACE_CONFIG_BYTES: u64 = 256 * 1024;

/// `<ws>/.ferrite/config.toml`, read as Ferrite reads every file of the repository for itself
/// (`crate::own_files`): a link out of the workspace or into FERRITE_HOME (`home`) is not
/// followed, a FIFO or device is not opened (a FIFO would hang `session/new`), the size is
/// bounded. Such a file is an error that says why, never its content.
pub(super) fn read_workspace_raw(
    ws: &Path,
    home: &Path,
) -> Result<Option<(PathBuf, RawConfig)>, ConfigError> {
    use crate::own_files::{Skip, read_contained};
    let path = ws.join(".ferrite").join("config.toml");
    // An editor opened on `~` has FERRITE_HOME as its `.ferrite`: that file is the user's.
    let resolve = |p: &Path| crate::paths::resolve(Path::new("/"), &p.to_string_lossy());
    if resolve(&ws.join(".ferrite")) == resolve(home) {
        return Ok(None);
    }
    let invalid = |message: String| ConfigError::Invalid {
        path: path.clone(),
        message,
    };
    match read_contained(&path, ws, home, MAX_WORKSPACE_CONFIG_BYTES) {
        Ok(t) if t.cut => Err(invalid(format!(
            "larger than {} KiB; a workspace config is not read past that",
            MAX_WORKSPACE_CONFIG_BYTES / 1024
        ))),
        Ok(t) => Ok(Some((path.clone(), parse_raw(&t.text, &path)?))),
        Err(Skip::Missing) => Ok(None),
        Err(Skip::Refused(why)) => Err(invalid(why)),
    }
}

pub(super) fn parse_raw(text: &str, path: &Path) -> Result<RawConfig, ConfigError> {
    toml::from_str(text).map_err(|e| ConfigError::Invalid {
        path: path.to_owned(),
        // toml's message names the key and draws the line with a caret under the fault: kept
        // on its lines, as toml renders it (a person reads it in `doctor` and `run`).
        message: format!("\n{}", e.to_string().trim_end()),
    })
}
