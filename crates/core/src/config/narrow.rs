//! Applying a workspace's `.ferrite/config.toml`: it may only narrow. Lower ceilings, add deny
//! rules, shorten limits, pick a model among those the user allows. What would widen (allow
//! rules, network, providers, MCP commands, a higher `max_mode`) is ignored with a warning,
//! because a cloned repository must not be able to grant itself powers.

use std::path::Path;

use super::apply::{Narrow, WorkspaceModels, check_deny_read, check_rules, checkpoints};
use super::file::{RawCheckpoints, RawCompaction, RawConfig, RawSandbox, RawTools, RawWebFetch};
use super::{CheckpointsConfig, Config, ConfigError};

fn invalid(path: &Path) -> impl Fn(String) -> ConfigError + '_ {
    move |message| ConfigError::Invalid {
        path: path.to_owned(),
        message,
    }
}

impl Config {
    pub(super) fn apply_workspace(
        &mut self,
        raw: RawConfig,
        path: &Path,
    ) -> Result<(), ConfigError> {
        self.ignore_user_only(&raw, path);
        let shown = path.display();
        // Read before the workspace changes anything: what the user config allows.
        let allowed = WorkspaceModels::of(self);
        self.workspace_model(raw.model, &allowed, path);
        if raw.workspace_models.is_some() {
            self.warnings.push(format!(
                "{shown}: `workspace_models` ignored: only the user config says which models a \
                 workspace may choose"
            ));
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
                return Err(invalid(path)(
                    "`max_turn_requests` must be at least 1".into(),
                ));
            }
            self.max_turn_requests = self.max_turn_requests.min(n);
        }
        if let Some(f) = raw.fs_delegation {
            self.fs_delegation = f;
        }
        // A workspace may turn titles off; which model writes them (and bills the user) is the
        // user's choice.
        if raw.titles == Some(false) {
            self.titles = false;
        }
        if raw.title_model.is_some() {
            self.warnings.push(format!(
                "{shown}: `title_model` ignored: only the user config chooses it"
            ));
        }
        if let Some(t) = raw.permissions.timeout_secs {
            if t == 0 {
                return Err(invalid(path)(
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
        let mut subagent = raw.subagent;
        subagent.model = subagent
            .model
            .take()
            .and_then(|m| self.workspace_subagent_model(m, &allowed, path));
        self.apply_subagent(subagent, path, Narrow::Yes)?;
        self.workspace_switches(raw.web_fetch, raw.sandbox, path)?;
        self.workspace_limits(raw.tools, raw.compaction, raw.checkpoints, path)?;
        self.apply_workspace_lsp(raw.lsp, path)?;
        self.workspace_ignored(&raw.providers, &raw.mcp_servers, path);
        // Kept, but they run only once the user trusts the workspace (`crate::trust`).
        if let Some(table) = raw.hooks {
            self.hooks
                .push((crate::hooks::Origin::Project, path.to_owned(), table));
        }
        Ok(())
    }

    /// A project may need a particular model, but a cloned repository must not run up the
    /// user's bill or send the code to a provider the user did not pick: it chooses among the
    /// models the user config allows, and never silently.
    fn workspace_model(&mut self, model: Option<String>, allowed: &WorkspaceModels, path: &Path) {
        let Some(m) = model else { return };
        let shown = path.display();
        if allowed.allows(&m) {
            self.warnings.push(format!(
                "{shown}: the model `{m}` is chosen by this workspace, not by the user config"
            ));
            self.model_set_by = Some(path.to_owned());
            self.model = Some(m);
        } else {
            self.warnings.push(allowed.refusal(&shown, "model", &m));
        }
    }

    /// `subagent.model`, under the same rule as `model`: the model kept, if it is allowed.
    fn workspace_subagent_model(
        &mut self,
        m: String,
        allowed: &WorkspaceModels,
        path: &Path,
    ) -> Option<String> {
        let shown = path.display();
        if allowed.allows(&m) {
            self.warnings.push(format!(
                "{shown}: the subagent model `{m}` is chosen by this workspace, not by the \
                 user config"
            ));
            Some(m)
        } else {
            self.warnings
                .push(allowed.refusal(&shown, "subagent.model", &m));
            None
        }
    }

    /// What only the user may switch on stays off; the workspace may switch it off, and add
    /// paths the sandbox hides.
    fn workspace_switches(
        &mut self,
        web_fetch: RawWebFetch,
        sandbox: RawSandbox,
        path: &Path,
    ) -> Result<(), ConfigError> {
        let shown = path.display();
        match web_fetch.allow_private {
            Some(true) if !self.web_fetch_allow_private => self.warnings.push(format!(
                "{shown}: `web_fetch.allow_private = true` ignored: only the user config may enable it"
            )),
            Some(p) => self.web_fetch_allow_private = p,
            None => {}
        }
        match sandbox.network {
            Some(true) if !self.sandbox_network => self.warnings.push(format!(
                "{shown}: `sandbox.network = true` ignored: only the user config may enable it"
            )),
            Some(n) => self.sandbox_network = n,
            None => {}
        }
        if let Some(deny) = sandbox.deny_read {
            // The workspace can only narrow: its entries are added to the user's.
            check_deny_read(&deny).map_err(invalid(path))?;
            self.sandbox_deny_read.extend(deny);
        }
        Ok(())
    }

    /// Narrowing only: a repository cannot make tool results flood the context, commands run
    /// longer, or the checkpoint store grow past what the user allows.
    fn workspace_limits(
        &mut self,
        tools: RawTools,
        compaction: RawCompaction,
        raw_checkpoints: RawCheckpoints,
        path: &Path,
    ) -> Result<(), ConfigError> {
        let user_tools = self.tools.clone();
        self.apply_tools(tools, path)?;
        let t = &mut self.tools;
        t.bash_timeout_secs = t.bash_timeout_secs.min(user_tools.bash_timeout_secs);
        t.output_max_bytes = t.output_max_bytes.min(user_tools.output_max_bytes);
        t.output_max_lines = t.output_max_lines.min(user_tools.output_max_lines);
        t.max_background_commands = t
            .max_background_commands
            .min(user_tools.max_background_commands);
        if let Some(t) = compaction.threshold {
            if !(t > 0.0 && t <= 1.0) {
                return Err(invalid(path)(
                    "`compaction.threshold` accepts a number in (0, 1], e.g. 0.85".into(),
                ));
            }
            self.compaction_threshold = t;
        }
        let user = self.checkpoints;
        let ws = checkpoints(raw_checkpoints, user).map_err(invalid(path))?;
        self.checkpoints = CheckpointsConfig {
            max_count: ws.max_count.min(user.max_count),
            max_file_bytes: ws.max_file_bytes.min(user.max_file_bytes),
            max_session_bytes: ws.max_session_bytes.min(user.max_session_bytes),
            max_total_bytes: ws.max_total_bytes.min(user.max_total_bytes),
        };
        Ok(())
    }

    /// Providers and MCP servers are the user's to declare.
    fn workspace_ignored<P, M>(
        &mut self,
        providers: &std::collections::BTreeMap<String, P>,
        mcp_servers: &std::collections::BTreeMap<String, M>,
        path: &Path,
    ) {
        let shown = path.display();
        if !providers.is_empty() {
            self.warnings.push(format!(
                "{shown}: `providers` ignored: only the user config may declare providers"
            ));
        }
        if !mcp_servers.is_empty() {
            self.warnings.push(format!(
                "{shown}: `mcp_servers` ignored: only the user config may start MCP servers"
            ));
        }
    }
}
