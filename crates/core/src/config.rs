//! `config.toml` (`docs/config.md`): the user file in `FERRITE_HOME`, narrowed by an optional
//! `<cwd>/.ferrite/config.toml`. Unknown keys and bad values are errors that name the key and the
//! file: ferrite never runs with a config it half understood.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::modes::Mode;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FsDelegation {
    #[default]
    UnsavedOnly,
    Never,
    Always,
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
}

/// `[checkpoints]` (`docs/config.md`, `docs/checkpoints.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointsConfig {
    /// Checkpoints kept per session; older ones are pruned. 0 turns checkpoints off.
    pub max_count: usize,
    /// Files larger than this are listed in a checkpoint but their bytes are not kept.
    pub max_file_bytes: u64,
}

impl Default for CheckpointsConfig {
    fn default() -> Self {
        Self {
            max_count: 50,
            max_file_bytes: 10_485_760,
        }
    }
}

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
    pub tools: ToolsConfig,
    pub compaction_threshold: f64,
    pub checkpoints: CheckpointsConfig,
    pub providers: BTreeMap<String, ProviderConfig>,
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    /// Things the workspace file tried that only the user file may do; shown in logs and `doctor`.
    pub warnings: Vec<String>,
    /// The workspace file that chose `model`, when the workspace (not the user) chose it.
    pub model_set_by: Option<PathBuf>,
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
            tools: ToolsConfig {
                output_max_bytes: 51_200,
                output_max_lines: 2_000,
                bash_timeout_secs: 120,
            },
            compaction_threshold: 0.85,
            checkpoints: CheckpointsConfig::default(),
            providers: BTreeMap::new(),
            model_set_by: None,
            mcp_servers: BTreeMap::new(),
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

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    model: Option<String>,
    max_mode: Option<Mode>,
    max_turn_requests: Option<u32>,
    fs_delegation: Option<FsDelegation>,
    #[serde(default)]
    permissions: RawPermissions,
    #[serde(default)]
    sandbox: RawSandbox,
    #[serde(default)]
    tools: RawTools,
    #[serde(default)]
    compaction: RawCompaction,
    #[serde(default)]
    web_fetch: RawWebFetch,
    #[serde(default)]
    checkpoints: RawCheckpoints,
    #[serde(default)]
    subagent: RawSubagent,
    #[serde(default)]
    providers: BTreeMap<String, ProviderConfig>,
    #[serde(default)]
    mcp_servers: BTreeMap<String, McpServerConfig>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPermissions {
    timeout_secs: Option<u64>,
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    deny: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSandbox {
    network: Option<bool>,
    deny_read: Option<Vec<String>>,
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

/// A `deny_read` entry must be absolute or start with `~/` (or be `~`): a relative path would
/// mean something else in every workspace.
fn check_deny_read(entries: &[String]) -> Result<(), String> {
    match entries
        .iter()
        .find(|e| !(e.starts_with('/') || *e == "~" || e.starts_with("~/")))
    {
        Some(bad) => Err(format!(
            "`sandbox.deny_read` entry {bad:?} must be an absolute path or start with `~/`"
        )),
        None => Ok(()),
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTools {
    output_max_bytes: Option<usize>,
    output_max_lines: Option<usize>,
    bash_timeout_secs: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSubagent {
    model: Option<String>,
    max_parallel: Option<usize>,
}

/// Whether a file may only narrow what is already set (a workspace file) or set it (the user's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Narrow {
    Yes,
    No,
}

/// `[subagent]`: the model `task` subagents use (empty: the turn's) and how many run at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentConfig {
    pub model: Option<String>,
    pub max_parallel: usize,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWebFetch {
    allow_private: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCompaction {
    threshold: Option<f64>,
}

/// A rule that does not parse is a bad value naming the rule and the file (`docs/config.md`): a
/// deny rule silently dropped would be a hole.
fn check_rules(raw: &RawPermissions, path: &Path) -> Result<(), ConfigError> {
    for (key, list) in [("allow", &raw.allow), ("deny", &raw.deny)] {
        for rule in list {
            crate::permissions::Rule::parse(rule).map_err(|e| ConfigError::Invalid {
                path: path.to_owned(),
                message: format!("`permissions.{key}`: {e}"),
            })?;
        }
    }
    Ok(())
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCheckpoints {
    max_count: Option<usize>,
    max_file_bytes: Option<u64>,
}

impl Config {
    /// `sandbox.deny_read` with `~` expanded to `user_home` (entries under `~` are dropped when
    /// there is no home directory: they name nothing).
    pub fn deny_read_paths(&self, user_home: Option<&Path>) -> Vec<PathBuf> {
        self.sandbox_deny_read
            .iter()
            .filter_map(|entry| match entry.strip_prefix('~') {
                Some(rest) => user_home.map(|h| h.join(rest.trim_start_matches('/'))),
                None => Some(PathBuf::from(entry)),
            })
            .collect()
    }

    /// The user file at `home/config.toml` (absent = defaults), narrowed by
    /// `workspace/.ferrite/config.toml` when a workspace is given.
    pub fn load(home: &Path, workspace: Option<&Path>) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        if let Some(raw) = read_raw(&home.join("config.toml"))? {
            config.apply_user(raw.1, &raw.0)?;
        }
        if let Some(ws) = workspace
            && let Some(raw) = read_raw(&ws.join(".ferrite").join("config.toml"))?
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

    fn apply_user(&mut self, raw: RawConfig, path: &Path) -> Result<(), ConfigError> {
        let invalid = |message: String| ConfigError::Invalid {
            path: path.to_owned(),
            message,
        };
        if let Some(m) = raw.model {
            self.model = Some(m);
        }
        if let Some(m) = raw.max_mode {
            self.max_mode = m;
        }
        if let Some(n) = raw.max_turn_requests {
            if n == 0 {
                return Err(invalid("`max_turn_requests` must be at least 1".into()));
            }
            self.max_turn_requests = n;
        }
        if let Some(f) = raw.fs_delegation {
            self.fs_delegation = f;
        }
        if let Some(t) = raw.permissions.timeout_secs {
            if t == 0 {
                return Err(invalid(
                    "`permissions.timeout_secs` must be at least 1".into(),
                ));
            }
            self.permissions.timeout_secs = t;
        }
        check_rules(&raw.permissions, path)?;
        self.permissions.allow.extend(raw.permissions.allow);
        self.permissions.deny.extend(raw.permissions.deny);
        if let Some(p) = raw.web_fetch.allow_private {
            self.web_fetch_allow_private = p;
        }
        self.apply_subagent(raw.subagent, path, Narrow::No)?;
        if let Some(n) = raw.sandbox.network {
            self.sandbox_network = n;
        }
        if let Some(deny) = raw.sandbox.deny_read {
            check_deny_read(&deny).map_err(invalid)?;
            self.sandbox_deny_read = deny;
        }
        self.apply_tools(raw.tools, path)?;
        if let Some(t) = raw.compaction.threshold {
            if !(t > 0.0 && t <= 1.0) {
                return Err(invalid(
                    "`compaction.threshold` accepts a number in (0, 1], e.g. 0.85".into(),
                ));
            }
            self.compaction_threshold = t;
        }
        self.checkpoints = checkpoints(raw.checkpoints, self.checkpoints).map_err(invalid)?;
        for (name, p) in raw.providers {
            validate_provider(&name, &p).map_err(invalid)?;
            self.providers.insert(name, p);
        }
        for (name, s) in raw.mcp_servers {
            validate_mcp(&name, &s).map_err(invalid)?;
            self.mcp_servers.insert(name, s);
        }
        Ok(())
    }

    /// A workspace file may only narrow: lower ceilings, add deny rules, shorten limits, pick a
    /// model. What would widen (allow rules, network, providers, MCP commands, a higher
    /// `max_mode`) is ignored with a warning, because a cloned repository must not be able to
    /// grant itself powers.
    fn apply_workspace(&mut self, raw: RawConfig, path: &Path) -> Result<(), ConfigError> {
        let invalid = |message: String| ConfigError::Invalid {
            path: path.to_owned(),
            message,
        };
        let shown = path.display();
        if let Some(m) = raw.model {
            // Allowed (a project may need a model that can handle it), but never silently: a
            // cloned repository picking the model (and so the provider the code is sent to) is
            // something the user must be able to see.
            self.warnings.push(format!(
                "{shown}: the model `{m}` is chosen by this workspace, not by the user config"
            ));
            self.model_set_by = Some(path.to_owned());
            self.model = Some(m);
        }
        if let Some(m) = raw.max_mode {
            if m > self.max_mode {
                self.warnings.push(format!(
                    "{shown}: `max_mode = \"{m}\"` ignored: a workspace cannot raise the ceiling `{}`",
                    self.max_mode
                ));
            } else {
                self.max_mode = m;
            }
        }
        if let Some(n) = raw.max_turn_requests {
            if n == 0 {
                return Err(invalid("`max_turn_requests` must be at least 1".into()));
            }
            self.max_turn_requests = self.max_turn_requests.min(n);
        }
        if let Some(f) = raw.fs_delegation {
            self.fs_delegation = f;
        }
        if let Some(t) = raw.permissions.timeout_secs {
            if t == 0 {
                return Err(invalid(
                    "`permissions.timeout_secs` must be at least 1".into(),
                ));
            }
            self.permissions.timeout_secs = self.permissions.timeout_secs.min(t);
        }
        check_rules(&raw.permissions, path)?;
        if !raw.permissions.allow.is_empty() {
            self.warnings.push(format!(
                "{shown}: `permissions.allow` ignored: only the user config may allow"
            ));
        }
        self.permissions.deny.extend(raw.permissions.deny);
        self.apply_subagent(raw.subagent, path, Narrow::Yes)?;
        match raw.web_fetch.allow_private {
            Some(true) if !self.web_fetch_allow_private => self.warnings.push(format!(
                "{shown}: `web_fetch.allow_private = true` ignored: only the user config may enable it"
            )),
            Some(p) => self.web_fetch_allow_private = p,
            None => {}
        }
        match raw.sandbox.network {
            Some(true) if !self.sandbox_network => self.warnings.push(format!(
                "{shown}: `sandbox.network = true` ignored: only the user config may enable it"
            )),
            Some(n) => self.sandbox_network = n,
            None => {}
        }
        if let Some(deny) = raw.sandbox.deny_read {
            // The workspace can only narrow: its entries are added to the user's.
            check_deny_read(&deny).map_err(invalid)?;
            self.sandbox_deny_read.extend(deny);
        }
        let user_tools = self.tools.clone();
        self.apply_tools(raw.tools, path)?;
        // Narrowing only: a repository cannot make tool results flood the context or commands
        // run longer than the user allows.
        self.tools.bash_timeout_secs = self
            .tools
            .bash_timeout_secs
            .min(user_tools.bash_timeout_secs);
        self.tools.output_max_bytes = self.tools.output_max_bytes.min(user_tools.output_max_bytes);
        self.tools.output_max_lines = self.tools.output_max_lines.min(user_tools.output_max_lines);
        if let Some(t) = raw.compaction.threshold {
            if !(t > 0.0 && t <= 1.0) {
                return Err(invalid(
                    "`compaction.threshold` accepts a number in (0, 1], e.g. 0.85".into(),
                ));
            }
            self.compaction_threshold = t;
        }
        // Narrowing only, like the tool limits.
        let user = self.checkpoints;
        let ws = checkpoints(raw.checkpoints, user).map_err(invalid)?;
        self.checkpoints = CheckpointsConfig {
            max_count: ws.max_count.min(user.max_count),
            max_file_bytes: ws.max_file_bytes.min(user.max_file_bytes),
        };
        if !raw.providers.is_empty() {
            self.warnings.push(format!(
                "{shown}: `providers` ignored: only the user config may declare providers"
            ));
        }
        if !raw.mcp_servers.is_empty() {
            self.warnings.push(format!(
                "{shown}: `mcp_servers` ignored: only the user config may start MCP servers"
            ));
        }
        Ok(())
    }

    /// `[subagent]`; a workspace file may pick the model and lower `max_parallel` only.
    fn apply_subagent(
        &mut self,
        raw: RawSubagent,
        path: &Path,
        narrow: Narrow,
    ) -> Result<(), ConfigError> {
        if let Some(m) = raw.model {
            self.subagent.model = Some(m);
        }
        if let Some(n) = raw.max_parallel {
            if !(1..=32).contains(&n) {
                return Err(ConfigError::Invalid {
                    path: path.to_owned(),
                    message: "`subagent.max_parallel` accepts 1 to 32".into(),
                });
            }
            self.subagent.max_parallel = match narrow {
                Narrow::Yes => self.subagent.max_parallel.min(n),
                Narrow::No => n,
            };
        }
        Ok(())
    }

    fn apply_tools(&mut self, raw: RawTools, path: &Path) -> Result<(), ConfigError> {
        let invalid = |message: String| ConfigError::Invalid {
            path: path.to_owned(),
            message,
        };
        if let Some(b) = raw.output_max_bytes {
            if b == 0 {
                return Err(invalid(
                    "`tools.output_max_bytes` must be at least 1".into(),
                ));
            }
            self.tools.output_max_bytes = b;
        }
        if let Some(l) = raw.output_max_lines {
            if l == 0 {
                return Err(invalid(
                    "`tools.output_max_lines` must be at least 1".into(),
                ));
            }
            self.tools.output_max_lines = l;
        }
        if let Some(t) = raw.bash_timeout_secs {
            if t == 0 || t > BASH_TIMEOUT_CAP_SECS {
                return Err(invalid(format!(
                    "`tools.bash_timeout_secs` accepts 1 to {BASH_TIMEOUT_CAP_SECS}"
                )));
            }
            self.tools.bash_timeout_secs = t;
        }
        Ok(())
    }
}

fn checkpoints(raw: RawCheckpoints, base: CheckpointsConfig) -> Result<CheckpointsConfig, String> {
    let mut out = base;
    if let Some(n) = raw.max_count {
        if n > 10_000 {
            return Err("`checkpoints.max_count` accepts 0 (off) to 10000".into());
        }
        out.max_count = n;
    }
    if let Some(b) = raw.max_file_bytes {
        if b == 0 {
            return Err("`checkpoints.max_file_bytes` must be at least 1".into());
        }
        out.max_file_bytes = b;
    }
    Ok(out)
}

fn read_raw(path: &Path) -> Result<Option<(PathBuf, RawConfig)>, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some((path.to_owned(), parse_raw(&text, path)?))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ConfigError::Read {
            path: path.to_owned(),
            source,
        }),
    }
}

fn parse_raw(text: &str, path: &Path) -> Result<RawConfig, ConfigError> {
    toml::from_str(text).map_err(|e| ConfigError::Invalid {
        path: path.to_owned(),
        // toml's message names the key and quotes the line; keep it on one line for logs.
        message: e.to_string().trim().replace('\n', " "),
    })
}

fn validate_provider(name: &str, p: &ProviderConfig) -> Result<(), String> {
    if name.is_empty() || name.contains('/') {
        return Err(format!(
            "provider name `{name}` must be non-empty and contain no `/`"
        ));
    }
    let builtin = BUILTIN_PROVIDERS.contains(&name);
    match &p.base_url {
        Some(url) if !(url.starts_with("http://") || url.starts_with("https://")) => {
            return Err(format!(
                "`providers.{name}.base_url` must start with http:// or https://"
            ));
        }
        None if !builtin => {
            return Err(format!("`providers.{name}.base_url` is required"));
        }
        Some(_) | None => {}
    }
    if p.api.is_none() && !builtin {
        return Err(format!(
            "`providers.{name}.api` is required: \"anthropic\", \"openai-responses\" or \"openai-chat\""
        ));
    }
    for m in &p.models {
        if m.id.is_empty() {
            return Err(format!(
                "`providers.{name}.models` has an entry with an empty id"
            ));
        }
        if m.context_window == Some(0) {
            return Err(format!(
                "`providers.{name}.models.{}.context_window` must be > 0",
                m.id
            ));
        }
        if m.max_output_tokens == Some(0) {
            return Err(format!(
                "`providers.{name}.models.{}.max_output_tokens` must be > 0",
                m.id
            ));
        }
        if let Some(price) = &m.price {
            let all = [
                Some(price.input),
                Some(price.output),
                price.cache_read,
                price.cache_write,
            ];
            if all.into_iter().flatten().any(|v| !v.is_finite() || v < 0.0) {
                return Err(format!(
                    "`providers.{name}.models.{}.price` must hold non-negative numbers (USD per 1M tokens)",
                    m.id
                ));
            }
        }
    }
    Ok(())
}

fn validate_mcp(name: &str, s: &McpServerConfig) -> Result<(), String> {
    match (&s.command, &s.url) {
        (Some(_), None) | (None, Some(_)) => Ok(()),
        _ => Err(format!(
            "`mcp_servers.{name}` needs exactly one of `command` or `url`"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, rel: &str, text: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn absent_file_gives_defaults() {
        let home = tempfile::tempdir().unwrap();
        assert_eq!(Config::load(home.path(), None).unwrap(), Config::default());
    }

    #[test]
    fn full_example_parses() {
        let text = r#"
model = "anthropic/claude-sonnet-4-5"
max_mode = "auto"
max_turn_requests = 50
fs_delegation = "never"
[permissions]
timeout_secs = 30
allow = ["bash(cargo test:*)"]
deny = ["read(**/.env)"]
[sandbox]
network = true
[tools]
output_max_bytes = 1000
output_max_lines = 10
bash_timeout_secs = 600
[compaction]
threshold = 0.5
[providers.local]
api = "openai-chat"
base_url = "http://127.0.0.1:8080/v1"
api_key_env = "LOCAL_KEY"
models = [{ id = "qwen3-coder", context_window = 131072 }]
"#;
        let c = Config::from_user_toml(text, Path::new("/h/config.toml")).unwrap();
        assert_eq!(c.max_mode, Mode::Auto);
        assert_eq!(c.max_turn_requests, 50);
        assert_eq!(c.fs_delegation, FsDelegation::Never);
        assert_eq!(c.permissions.deny, vec!["read(**/.env)".to_string()]);
        assert!(c.sandbox_network);
        assert_eq!(c.tools.bash_timeout_secs, 600);
        assert_eq!(c.providers["local"].api, Some(ApiKind::OpenAiChat));
        assert_eq!(c.providers["local"].models[0].context_window, Some(131072));
    }

    #[test]
    fn provider_entries_built_in_names_and_model_facts() {
        // A built-in's name may only add model facts.
        let c = Config::from_user_toml(
            "[providers.anthropic]\nmodels = [{ id = \"claude-x\", max_output_tokens = 4096, reasoning = true, price = { input = 1.0, output = 2.0, cache_read = 0.1 } }]\n",
            Path::new("/c.toml"),
        )
        .unwrap();
        let m = &c.providers["anthropic"].models[0];
        assert_eq!(m.max_output_tokens, Some(4096));
        assert_eq!(m.price.unwrap().cache_read, Some(0.1));
        // Any other name needs its API and URL.
        let err = Config::from_user_toml(
            "[providers.mine]\nbase_url = \"http://127.0.0.1:1/v1\"\n",
            Path::new("/c.toml"),
        )
        .unwrap_err();
        assert!(err.to_string().contains("providers.mine.api"), "{err}");
        let err = Config::from_user_toml(
            "[providers.mine]\napi = \"openai-chat\"\n",
            Path::new("/c.toml"),
        )
        .unwrap_err();
        assert!(err.to_string().contains("providers.mine.base_url"), "{err}");
        let err = Config::from_user_toml(
            "[providers.openai]\nmodels = [{ id = \"m\", price = { input = -1.0, output = 2.0 } }]\n",
            Path::new("/c.toml"),
        )
        .unwrap_err();
        assert!(err.to_string().contains("price"), "{err}");
        let err = Config::from_user_toml(
            "[providers.openai]\nmodels = [{ id = \"m\", window = 5 }]\n",
            Path::new("/c.toml"),
        )
        .unwrap_err();
        assert!(err.to_string().contains("window"), "{err}");
    }

    #[test]
    fn unknown_key_names_key_and_file() {
        let err = Config::from_user_toml("colour = 1\n", Path::new("/h/config.toml")).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("colour") && msg.contains("/h/config.toml"),
            "{msg}"
        );
        let err = Config::from_user_toml("[tools]\nbash_timeout = 3\n", Path::new("/h/c.toml"))
            .unwrap_err();
        assert!(err.to_string().contains("bash_timeout"), "{err}");
    }

    #[test]
    fn bad_values_say_what_is_accepted() {
        let err =
            Config::from_user_toml("max_mode = \"ultra\"\n", Path::new("/c.toml")).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("ultra") && msg.contains("plan"), "{msg}");
        let err =
            Config::from_user_toml("[tools]\nbash_timeout_secs = 601\n", Path::new("/c.toml"))
                .unwrap_err();
        assert!(err.to_string().contains("1 to 600"), "{err}");
    }

    #[test]
    fn workspace_can_only_narrow() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        write(
            home.path(),
            "config.toml",
            "max_mode = \"auto\"\n[permissions]\ndeny = [\"bash(rm:*)\"]\n",
        );
        write(
            ws.path(),
            ".ferrite/config.toml",
            "max_mode = \"full\"\n[permissions]\nallow = [\"bash\"]\ndeny = [\"read(**/.env)\"]\n[sandbox]\nnetwork = true\n",
        );
        let c = Config::load(home.path(), Some(ws.path())).unwrap();
        assert_eq!(c.max_mode, Mode::Auto);
        assert!(c.permissions.allow.is_empty());
        assert_eq!(c.permissions.deny.len(), 2);
        assert!(!c.sandbox_network);
        assert_eq!(c.warnings.len(), 3, "{:?}", c.warnings);

        write(ws.path(), ".ferrite/config.toml", "max_mode = \"plan\"\n");
        let c = Config::load(home.path(), Some(ws.path())).unwrap();
        assert_eq!(c.max_mode, Mode::Plan);
        assert_eq!(c.model_set_by, None);
    }

    #[test]
    fn workspace_cannot_raise_output_caps_and_its_model_choice_is_visible() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        write(
            home.path(),
            "config.toml",
            "[tools]\noutput_max_bytes = 1000\noutput_max_lines = 10\n",
        );
        write(
            ws.path(),
            ".ferrite/config.toml",
            "model = \"openai/gpt-5\"\n[tools]\noutput_max_bytes = 99999999\noutput_max_lines = 5\n",
        );
        let c = Config::load(home.path(), Some(ws.path())).unwrap();
        assert_eq!(c.tools.output_max_bytes, 1000);
        assert_eq!(c.tools.output_max_lines, 5);
        assert_eq!(c.model.as_deref(), Some("openai/gpt-5"));
        assert_eq!(c.model_set_by, Some(ws.path().join(".ferrite/config.toml")));
        assert!(
            c.warnings
                .iter()
                .any(|w| w.contains("chosen by this workspace"))
        );
    }

    #[test]
    fn a_malformed_rule_is_an_error_naming_rule_and_file() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        write(
            home.path(),
            "config.toml",
            "[permissions]\ndeny = [\"bash(rm -rf:*\"]\n",
        );
        let e = Config::load(home.path(), None).unwrap_err().to_string();
        assert!(
            e.contains("bash(rm -rf:*")
                && e.contains(&home.path().join("config.toml").display().to_string()),
            "{e}"
        );
        write(home.path(), "config.toml", "");
        write(
            ws.path(),
            ".ferrite/config.toml",
            "[permissions]\ndeny = [\"raed(**/.env)\"]\n",
        );
        let e = Config::load(home.path(), Some(ws.path()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("raed(**/.env)") && e.contains(".ferrite"), "{e}");
    }

    #[test]
    fn deny_read_defaults_expand_and_workspace_only_adds() {
        let c = Config::default();
        let paths = c.deny_read_paths(Some(Path::new("/home/me")));
        assert!(paths.contains(&PathBuf::from("/home/me/.ssh")));
        assert!(paths.contains(&PathBuf::from("/home/me/.docker/config.json")));
        assert_eq!(paths.len(), DEFAULT_DENY_READ.len());
        assert!(c.deny_read_paths(None).is_empty());

        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join("config.toml"),
            "[sandbox]\ndeny_read = [\"~/secret\", \"/etc/key\"]\n",
        )
        .unwrap();
        std::fs::create_dir_all(ws.path().join(".ferrite")).unwrap();
        std::fs::write(
            ws.path().join(".ferrite/config.toml"),
            "[sandbox]\ndeny_read = [\"/more\"]\n",
        )
        .unwrap();
        let c = Config::load(home.path(), Some(ws.path())).unwrap();
        assert_eq!(
            c.deny_read_paths(Some(Path::new("/h"))),
            vec![
                PathBuf::from("/h/secret"),
                PathBuf::from("/etc/key"),
                PathBuf::from("/more")
            ]
        );
        std::fs::write(
            home.path().join("config.toml"),
            "[sandbox]\ndeny_read = [\"relative\"]\n",
        )
        .unwrap();
        let err = Config::load(home.path(), None).unwrap_err().to_string();
        assert!(err.contains("deny_read"), "{err}");
    }

    #[test]
    fn subagent_section_is_validated_and_a_workspace_only_lowers_parallelism() {
        let p = Path::new("config.toml");
        let c = Config::from_user_toml(
            "[subagent]\nmodel = \"openai/gpt-5-mini\"\nmax_parallel = 8\n",
            p,
        )
        .unwrap();
        assert_eq!(c.subagent.model.as_deref(), Some("openai/gpt-5-mini"));
        assert_eq!(c.subagent.max_parallel, 8);
        assert_eq!(Config::default().subagent.max_parallel, 4);
        for bad in ["[subagent]\nmax_parallel = 0\n", "[subagent]\nbudget = 3\n"] {
            assert!(Config::from_user_toml(bad, p).is_err(), "{bad}");
        }
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        write(home.path(), "config.toml", "[subagent]\nmax_parallel = 2\n");
        write(
            ws.path(),
            ".ferrite/config.toml",
            "[subagent]\nmax_parallel = 9\n",
        );
        let c = Config::load(home.path(), Some(ws.path())).unwrap();
        assert_eq!(c.subagent.max_parallel, 2, "a workspace cannot raise it");
    }

    #[test]
    fn checkpoints_section_is_validated_and_a_workspace_only_narrows_it() {
        let p = Path::new("config.toml");
        let c = Config::from_user_toml("[checkpoints]\nmax_count = 5\nmax_file_bytes = 100\n", p)
            .unwrap();
        assert_eq!(
            c.checkpoints,
            CheckpointsConfig {
                max_count: 5,
                max_file_bytes: 100
            }
        );
        for bad in [
            "[checkpoints]\nmax_file_bytes = 0\n",
            "[checkpoints]\nmax_count = 10001\n",
            "[checkpoints]\nkeep = 3\n",
        ] {
            assert!(Config::from_user_toml(bad, p).is_err(), "{bad}");
        }
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        write(home.path(), "config.toml", "[checkpoints]\nmax_count = 5\n");
        write(
            ws.path(),
            ".ferrite/config.toml",
            "[checkpoints]\nmax_count = 9\nmax_file_bytes = 1000\n",
        );
        let c = Config::load(home.path(), Some(ws.path())).unwrap();
        assert_eq!(c.checkpoints.max_count, 5, "a workspace cannot raise it");
        assert_eq!(c.checkpoints.max_file_bytes, 1000, "but may lower it");
    }
}
