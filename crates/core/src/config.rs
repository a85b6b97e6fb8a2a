//! `config.toml` (`docs/config.md`): the user file in `FERRITE_HOME`, narrowed by an optional
//! `<cwd>/.ferrite/config.toml`. Unknown keys and bad values are errors that name the key and the
//! file: ferrite never runs with a config it half understood.

mod apply;
mod file;
mod lsp;
mod narrow;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::modes::Mode;
use file::{parse_raw, read_raw, read_workspace_raw};
pub use lsp::{
    DEFAULT_RESTART_MS, DEFAULT_WAIT_MS, LspConfig, LspServerConfig, MAX_BACKOFF_MS, MAX_WAIT_MS,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FsDelegation {
    /// The default (product.md §7): reads as `review`; every write goes to disk.
    #[default]
    UnsavedOnly,
    Never,
    Always,
    /// Reads as `unsaved_only`, and `write`/`edit` go through the editor's
    /// `fs/write_text_file` where the client writes files, so its review of agent edits (Zed's
    /// Keep/Reject) tracks them (`crate::tools::delegated`).
    Review,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum ApiKind {
    #[serde(rename = "anthropic")]
    Anthropic,
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
    #[serde(rename = "openai-chat")]
    OpenAiChat,
}

impl ApiKind {
    pub fn id(self) -> &'static str {
        match self {
            ApiKind::Anthropic => "anthropic",
            ApiKind::OpenAiResponses => "openai-responses",
            ApiKind::OpenAiChat => "openai-chat",
        }
    }
}

/// A `[providers.NAME] models` entry: facts that add to or override what the built-in catalog
/// (or the provider's own listing) says about a model (`docs/config.md`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelEntry {
    pub id: String,
    #[serde(default)]
    pub context_window: Option<u64>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub max_output_tokens: Option<u32>,
    #[serde(default)]
    pub reasoning: Option<bool>,
    /// Whether the model takes images (default: yes for Anthropic and OpenAI, no for other
    /// OpenAI-compatible servers).
    #[serde(default)]
    pub images: Option<bool>,
    #[serde(default)]
    pub price: Option<PriceEntry>,
}

/// USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceEntry {
    pub input: f64,
    pub output: f64,
    #[serde(default)]
    pub cache_read: Option<f64>,
    #[serde(default)]
    pub cache_write: Option<f64>,
}

/// The providers ferrite knows without configuration (`docs/models.md`). A `[providers.NAME]` with
/// one of these names may leave out `api` and `base_url` and only add model facts.
pub const BUILTIN_PROVIDERS: [&str; 4] = ["anthropic", "openai", "openai-chat", "ollama"];

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// Required unless the name is a built-in provider's.
    #[serde(default)]
    pub api: Option<ApiKind>,
    #[serde(default)]
    pub base_url: Option<String>,
    #[serde(default)]
    pub api_key_env: Option<String>,
    #[serde(default)]
    pub models: Vec<ModelEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PermissionsConfig {
    pub timeout_secs: u64,
    pub allow: Vec<String>,
    pub deny: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolsConfig {
    pub output_max_bytes: usize,
    pub output_max_lines: usize,
    pub bash_timeout_secs: u64,
    /// Commands a session may run in the background at once (`bash` with `background`).
    pub max_background_commands: usize,
    /// `tools.spill_max_bytes` (user config only): one budget per session for all the command
    /// output it keeps on disk (`crate::spill_budget`).
    pub spill_max_bytes: u64,
}

/// The smallest `tools.spill_max_bytes`: one read of a command's output.
pub const MIN_SPILL_MAX_BYTES: u64 = 64 * 1024;

// The store's limits are the store's type (read here from `[checkpoints]`).
pub use ferrite_store::checkpoints::CheckpointsConfig;

/// The smallest store cap accepted (`checkpoints.max_session_bytes`, `max_total_bytes`).
pub const MIN_STORE_BYTES: u64 = 1 << 20;

/// The cap on `bash_timeout_secs` and on a model-supplied `timeout_secs` (`docs/config.md`).
pub const BASH_TIMEOUT_CAP_SECS: u64 = 600;

/// The merged, validated configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub model: Option<String>,
    pub max_mode: Mode,
    pub max_turn_requests: u32,
    pub fs_delegation: FsDelegation,
    pub permissions: PermissionsConfig,
    pub sandbox_network: bool,
    /// `web_fetch.allow_private`: let `web_fetch` reach loopback and private addresses.
    pub web_fetch_allow_private: bool,
    pub subagent: SubagentConfig,
    /// `sandbox.deny_read`: paths commands can never read (nor write), as written (`~/` allowed;
    /// see [`Config::deny_read_paths`]). FERRITE_HOME is always added by the sandbox itself.
    pub sandbox_deny_read: Vec<String>,
    /// `sandbox.allow_unix_sockets` (user config only): UNIX sockets outside the writable roots
    /// that commands may connect to, as written (`~/` allowed).
    pub sandbox_allow_unix_sockets: Vec<String>,
    pub tools: ToolsConfig,
    pub compaction_threshold: f64,
    /// `titles`: a short title is generated for each session after its first turn.
    pub titles: bool,
    /// `title_model`: the model that generates them; `None`: the cheapest usable one.
    pub title_model: Option<String>,
    pub checkpoints: CheckpointsConfig,
    /// `[lsp]`: language servers after edits (`docs/lsp.md`).
    pub lsp: LspConfig,
    pub providers: BTreeMap<String, ProviderConfig>,
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    /// `[hooks]` of each file, with whose it is (`crate::hooks::table`): the workspace file's
    /// run only in a trusted workspace.
    pub hooks: Vec<(crate::hooks::Origin, PathBuf, crate::hooks::HookTable)>,
    /// Things the workspace file tried that only the user file may do; shown in logs and `doctor`.
    pub warnings: Vec<String>,
    /// The workspace file that chose `model`, when the workspace (not the user) chose it.
    pub model_set_by: Option<PathBuf>,
    /// `workspace_models` (user config only): the models a workspace file may choose for
    /// `model` and `subagent.model` besides the user's own (`docs/config.md`).
    pub workspace_models: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            model: None,
            max_mode: Mode::Full,
            max_turn_requests: 200,
            fs_delegation: FsDelegation::UnsavedOnly,
            permissions: PermissionsConfig {
                timeout_secs: 300,
                allow: vec![],
                deny: vec![],
            },
            sandbox_network: false,
            web_fetch_allow_private: false,
            subagent: SubagentConfig {
                model: None,
                max_parallel: 4,
            },
            sandbox_deny_read: DEFAULT_DENY_READ.iter().map(|p| (*p).to_owned()).collect(),
            sandbox_allow_unix_sockets: vec![],
            tools: ToolsConfig {
                output_max_bytes: 51_200,
                output_max_lines: 2_000,
                max_background_commands: 8,
                bash_timeout_secs: 120,
                spill_max_bytes: 2 << 30,
            },
            compaction_threshold: 0.85,
            titles: true,
            title_model: None,
            checkpoints: CheckpointsConfig::default(),
            lsp: LspConfig::default(),
            providers: BTreeMap::new(),
            model_set_by: None,
            workspace_models: vec![],
            mcp_servers: BTreeMap::new(),
            hooks: vec![],
            warnings: vec![],
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid config {path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

/// The default `sandbox.deny_read` (`docs/config.md`): where credentials usually live.
pub const DEFAULT_DENY_READ: &[&str] = &[
    "~/.ssh",
    "~/.aws",
    "~/.gnupg",
    "~/.netrc",
    "~/.config/gh",
    "~/.docker/config.json",
    "~/.kube",
    "~/.git-credentials",
];

/// `[subagent]`: the model `task` subagents use (empty: the turn's) and how many run at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentConfig {
    pub model: Option<String>,
    pub max_parallel: usize,
}

/// `entries` with a leading `~` replaced by `user_home` (dropped when there is none: they name
/// nothing).
fn expand_home(entries: &[String], user_home: Option<&Path>) -> Vec<PathBuf> {
    entries
        .iter()
        .filter_map(|entry| match entry.strip_prefix('~') {
            Some(rest) => user_home.map(|h| h.join(rest.trim_start_matches('/'))),
            None => Some(PathBuf::from(entry)),
        })
        .collect()
}

impl Config {
    /// `sandbox.deny_read` with `~` expanded to `user_home` (entries under `~` are dropped when
    /// there is no home directory: they name nothing).
    pub fn deny_read_paths(&self, user_home: Option<&Path>) -> Vec<PathBuf> {
        expand_home(&self.sandbox_deny_read, user_home)
    }

    /// `sandbox.allow_unix_sockets` with `~` expanded, as for `deny_read`.
    pub fn allowed_unix_socket_paths(&self, user_home: Option<&Path>) -> Vec<PathBuf> {
        expand_home(&self.sandbox_allow_unix_sockets, user_home)
    }

    /// The user file at `home/config.toml` (absent = defaults), narrowed by
    /// `workspace/.ferrite/config.toml` when a workspace is given.
    pub fn load(home: &Path, workspace: Option<&Path>) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        if let Some(raw) = read_raw(&home.join("config.toml"))? {
            config.apply_user(raw.1, &raw.0)?;
        }
        if let Some(ws) = workspace
            && let Some(raw) = read_workspace_raw(ws, home)?
        {
            config.apply_workspace(raw.1, &raw.0)?;
        }
        Ok(config)
    }

    /// Parses one file's text as the user config (used by tests and `doctor`).
    pub fn from_user_toml(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let raw = parse_raw(text, path)?;
        let mut config = Config::default();
        config.apply_user(raw, path)?;
        Ok(config)
    }
}
