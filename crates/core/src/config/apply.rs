//! Applying one file to the configuration: the user file sets values, a workspace file may only
//! narrow them; every value is checked on the way, naming the key and the file.

use std::path::Path;

use super::file::{RawCheckpoints, RawConfig, RawPermissions, RawSubagent, RawTools};
use super::{
    BASH_TIMEOUT_CAP_SECS, BUILTIN_PROVIDERS, CheckpointsConfig, Config, ConfigError,
    MIN_SPILL_MAX_BYTES, MIN_STORE_BYTES, McpServerConfig, ProviderConfig,
};

/// A `deny_read` entry must be absolute or start with `~/` (or be `~`): a relative path would
/// mean something else in every workspace.
pub(super) fn check_deny_read(entries: &[String]) -> Result<(), String> {
    check_paths("sandbox.deny_read", entries)
}

/// Every entry of the list `key` is absolute or starts with `~/` (or is `~`).
fn check_paths(key: &str, entries: &[String]) -> Result<(), String> {
    match entries
        .iter()
        .find(|e| !(e.starts_with('/') || *e == "~" || e.starts_with("~/")))
    {
        Some(bad) => Err(format!(
            "`{key}` entry {bad:?} must be an absolute path or start with `~/`"
        )),
        None => Ok(()),
    }
}

/// Whether a file may only narrow what is already set (a workspace file) or set it (the user's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Narrow {
    Yes,
    No,
}

/// A rule that does not parse is a bad value naming the rule and the file (`docs/config.md`): a
/// deny rule silently dropped would be a hole.
pub(super) fn check_rules(raw: &RawPermissions, path: &Path) -> Result<(), ConfigError> {
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

/// `workspace_models`: each entry a model id `provider/model` or a pattern `provider/*`.
fn workspace_models(list: Vec<String>) -> Result<Vec<String>, String> {
    match list.iter().find(|m| !is_model_pattern(m)) {
        Some(bad) => Err(format!(
            "`workspace_models` entry {bad:?} must be a model id `provider/model` or `provider/*`"
        )),
        None => Ok(list),
    }
}

impl Config {
    pub(super) fn apply_user(&mut self, raw: RawConfig, path: &Path) -> Result<(), ConfigError> {
        self.apply_user_only(&raw, path)?;
        let invalid = |message: String| ConfigError::Invalid {
            path: path.to_owned(),
            message,
        };
        if let Some(m) = raw.model {
            self.model = Some(m);
        }
        if let Some(list) = raw.workspace_models {
            self.workspace_models = workspace_models(list).map_err(invalid)?;
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
        self.titles = raw.titles.unwrap_or(self.titles);
        if let Some(m) = raw.title_model {
            self.title_model = (!m.trim().is_empty()).then_some(m);
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
        self.apply_user_lsp(raw.lsp, path)?;
        for (name, p) in raw.providers {
            validate_provider(&name, &p).map_err(invalid)?;
            self.providers.insert(name, p);
        }
        for (name, s) in raw.mcp_servers {
            validate_mcp(&name, &s).map_err(invalid)?;
            self.mcp_servers.insert(name, s);
        }
        if let Some(table) = raw.hooks {
            self.hooks
                .push((crate::hooks::Origin::User, path.to_owned(), table));
        }
        Ok(())
    }

    /// `[subagent]`; a workspace file may pick the model and lower `max_parallel` only.
    pub(super) fn apply_subagent(
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

    /// The keys only the user file sets (issue 34): which UNIX sockets commands may reach, and
    /// the session's disk budget for command output.
    fn apply_user_only(&mut self, raw: &RawConfig, path: &Path) -> Result<(), ConfigError> {
        let invalid = |message: String| ConfigError::Invalid {
            path: path.to_owned(),
            message,
        };
        if let Some(sockets) = &raw.sandbox.allow_unix_sockets {
            check_paths("sandbox.allow_unix_sockets", sockets).map_err(invalid)?;
            self.sandbox_allow_unix_sockets = sockets.clone();
        }
        if let Some(b) = raw.tools.spill_max_bytes {
            if b < MIN_SPILL_MAX_BYTES {
                return Err(invalid(format!(
                    "`tools.spill_max_bytes` must be at least {MIN_SPILL_MAX_BYTES}"
                )));
            }
            self.tools.spill_max_bytes = b;
        }
        Ok(())
    }

    /// A workspace file's user-only keys: ignored, with a warning.
    pub(super) fn ignore_user_only(&mut self, raw: &RawConfig, path: &Path) {
        let shown = path.display();
        if raw.sandbox.allow_unix_sockets.is_some() {
            self.warnings.push(format!(
                "{shown}: `sandbox.allow_unix_sockets` ignored: only the user config may let \
                 commands reach sockets"
            ));
        }
        if raw.tools.spill_max_bytes.is_some() {
            self.warnings.push(format!(
                "{shown}: `tools.spill_max_bytes` ignored: only the user config sets it"
            ));
        }
    }

    pub(super) fn apply_tools(&mut self, raw: RawTools, path: &Path) -> Result<(), ConfigError> {
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
        if let Some(n) = raw.max_background_commands {
            self.tools.max_background_commands = n;
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

/// The models a workspace file may choose: the user's own `model` and `subagent.model`, and
/// the user's `workspace_models` (ids, or `provider/*` for every model of a provider).
impl Config {
    /// Whether something a repository brings (a workspace file, a project agent) may use
    /// `model`: the models of this configuration and those `workspace_models` lists.
    pub fn workspace_may_use(&self, model: &str) -> bool {
        WorkspaceModels::of(self).allows(model)
    }
}

pub(super) struct WorkspaceModels {
    own: Vec<String>,
    listed: Vec<String>,
}

impl WorkspaceModels {
    pub(super) fn of(user: &Config) -> Self {
        Self {
            own: user
                .model
                .iter()
                .chain(user.subagent.model.iter())
                .filter(|m| !m.trim().is_empty())
                .cloned()
                .collect(),
            listed: user.workspace_models.clone(),
        }
    }

    pub(super) fn allows(&self, model: &str) -> bool {
        // An empty `subagent.model` means "the turn's model": nothing is chosen.
        model.trim().is_empty()
            || self.own.iter().any(|m| m == model)
            || self.listed.iter().any(|p| match p.strip_suffix("/*") {
                Some(provider) => model
                    .split_once('/')
                    .is_some_and(|(prov, rest)| prov == provider && !rest.is_empty()),
                None => p == model,
            })
    }

    pub(super) fn refusal(&self, shown: &std::path::Display<'_>, key: &str, model: &str) -> String {
        let allowed: Vec<&str> = self
            .own
            .iter()
            .chain(&self.listed)
            .map(String::as_str)
            .collect();
        let allowed = if allowed.is_empty() {
            "none".to_owned()
        } else {
            allowed.join(", ")
        };
        format!(
            "{shown}: `{key} = \"{model}\"` ignored: a workspace may only choose a model the \
             user config allows (its `model`, `subagent.model` or `workspace_models`: {allowed})"
        )
    }
}

/// `provider/model` or `provider/*`.
fn is_model_pattern(m: &str) -> bool {
    m.split_once('/')
        .is_some_and(|(provider, model)| !provider.is_empty() && !model.is_empty())
}

pub(super) fn checkpoints(
    raw: RawCheckpoints,
    base: CheckpointsConfig,
) -> Result<CheckpointsConfig, String> {
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
    for (key, raw, field) in [
        (
            "max_session_bytes",
            raw.max_session_bytes,
            &mut out.max_session_bytes,
        ),
        (
            "max_total_bytes",
            raw.max_total_bytes,
            &mut out.max_total_bytes,
        ),
    ] {
        if let Some(b) = raw {
            if b < MIN_STORE_BYTES {
                return Err(format!(
                    "`checkpoints.{key}` must be at least {MIN_STORE_BYTES} (1 MiB)"
                ));
            }
            *field = b;
        }
    }
    Ok(out)
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
