//! Stage: the turn's settings, resolved once when it starts. Config, credentials, the model
//! catalog and the workspace's permission rules are read here and nowhere else during a turn:
//! a `ferrite login`, a config edit or a rules file changed while the editor is open takes effect
//! with the next turn. The one exception is the user's own "always" answer, which takes effect
//! for the calls after it ([`TurnRules::remember`]).

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use crate::catalog::{Catalog, DefaultModel, ModelInfo, NO_PROVIDER_MESSAGE};
use crate::config::Config;
use crate::events::{TurnOptions, TurnOutcome};
use crate::exec::Shell;
use crate::failure::FailureKind;
use crate::model::{ModelClient, ModelConnector};
use crate::modes::Effort;
use crate::permissions::{OptionKind, Rules, StoredRules};
use crate::services::Services;
use crate::session::TurnStart;
use crate::tools::Access;

use super::model_call::ModelOrigin;

/// Config and the permission rules in force, for one turn.
pub(super) struct Settings {
    pub config: Config,
    pub rules: TurnRules,
}

/// Reads config (narrowed by the workspace) and the stored rules. Either one that cannot be used
/// fails the turn: a dropped deny rule would be a hole.
pub(super) fn settings(home: &Path, cwd: &Path) -> Result<Settings, TurnOutcome> {
    let config = Config::load(home, Some(cwd))
        .map_err(|e| TurnOutcome::failed(FailureKind::Config, e.to_string()))?;
    let rules = TurnRules::load(home, cwd, &config)
        .map_err(|e| TurnOutcome::failed(FailureKind::PermissionRules, e))?;
    Ok(Settings { config, rules })
}

/// The model a turn talks to, and how.
pub(super) struct TurnModel {
    pub client: Arc<dyn ModelClient>,
    pub info: ModelInfo,
    /// Where the model id came from, to name it in errors.
    pub origin: ModelOrigin,
    pub effort: Effort,
    pub web_search: bool,
    /// Shared by the turn's environment and its subagents (a copy of the catalog's models
    /// was most of what starting a subagent cost).
    pub catalog: Arc<Catalog>,
}

/// Picks the turn's model (the prompt's, else the session's, else the default), checks that it
/// can be used and connects to its provider.
pub(super) fn model(
    services: &Services,
    config: &Config,
    start: &TurnStart,
    options: &TurnOptions,
) -> Result<TurnModel, TurnOutcome> {
    let no_provider = || TurnOutcome::failed(FailureKind::NoProvider, NO_PROVIDER_MESSAGE);
    let catalog = services.catalog(config);
    let (model_id, origin) = match (options.model.clone(), start.model.clone()) {
        (Some(m), _) => (m, ModelOrigin::Prompt),
        (None, Some(m)) => {
            let origin = ModelOrigin::of_session_model(&m, config, &services.env);
            (m, origin)
        }
        (None, None) => match catalog.default_model(config, &services.env) {
            DefaultModel::Chosen(m) => {
                let origin = ModelOrigin::of_session_model(&m, config, &services.env);
                (m, origin)
            }
            DefaultModel::NoneConfigured => return Err(no_provider()),
        },
    };
    let info = catalog.resolve(&model_id).map_err(|e| {
        TurnOutcome::failed(
            FailureKind::UnknownProvider,
            format!("{e} (the model was set by {}).", origin.describe()),
        )
    })?;
    if let Some(need) = catalog.auth_needed_for(&model_id) {
        return Err(TurnOutcome::failed(FailureKind::NoApiKey, need.message));
    }
    let connector = services.connector.as_ref().ok_or_else(no_provider)?;
    let provider = catalog.provider(&info.provider).ok_or_else(no_provider)?;
    let client = connector
        .connect(provider, catalog.key(&provider.name))
        .map_err(|e| TurnOutcome::failed(e.failure_kind(), e.message))?;
    Ok(TurnModel {
        client,
        effort: options.effort.unwrap_or(start.effort),
        web_search: options.web_search.unwrap_or(start.web_search) && info.web_search,
        info,
        origin,
        catalog: Arc::new(catalog),
    })
}

/// The model subagents use: `subagent.model` when set and usable, else the turn's own.
pub(super) fn subagent_model(
    config: &Config,
    turn: &TurnModel,
    connector: Option<&Arc<dyn ModelConnector>>,
) -> SubagentModel {
    let own = || SubagentModel {
        client: turn.client.clone(),
        info: turn.info.clone(),
    };
    let Some(id) = config
        .subagent
        .model
        .as_deref()
        .filter(|m| !m.trim().is_empty())
    else {
        return own();
    };
    connect(turn, connector, id).unwrap_or_else(|| {
        tracing::warn!(
            model = id,
            "subagent.model cannot be used; subagents use the turn's model"
        );
        own()
    })
}

/// The model `id` of the turn's catalog, connected; `None` when it cannot be used.
fn connect(
    turn: &TurnModel,
    connector: Option<&Arc<dyn ModelConnector>>,
    id: &str,
) -> Option<SubagentModel> {
    let catalog = &turn.catalog;
    let info = catalog.resolve(id).ok()?;
    let provider = catalog.provider(&info.provider)?;
    let client = connector?
        .connect(provider, catalog.key(&provider.name))
        .ok()?;
    Some(SubagentModel { client, info })
}

/// The models of the custom agents that name one, by agent. A project's agent may use only a
/// model a workspace file could choose (`workspace_models`): trusting a folder is not handing
/// it the bill. An agent whose model cannot be used gets the subagent model.
pub(super) fn agent_models(
    config: &Config,
    turn: &TurnModel,
    connector: Option<&Arc<dyn ModelConnector>>,
    agents: &[crate::agents::AgentDef],
) -> Vec<(String, SubagentModel)> {
    let mut out = Vec::new();
    for a in agents {
        let Some(id) = a.model.as_deref() else {
            continue;
        };
        if a.origin == crate::hooks::Origin::Project && !config.workspace_may_use(id) {
            tracing::warn!(agent = %a.name, model = id, "a project agent's model is not one the user config allows; it uses the subagent model");
            continue;
        }
        match connect(turn, connector, id) {
            Some(m) => out.push((a.name.clone(), m)),
            None => tracing::warn!(agent = %a.name, model = id, "the agent's model cannot be used"),
        }
    }
    out
}

/// The model a subagent talks to (`subagent.model`, else the parent's).
#[derive(Clone)]
pub(crate) struct SubagentModel {
    pub client: Arc<dyn ModelClient>,
    pub info: ModelInfo,
}

/// The permission rules of a turn: config's plus the workspace's stored "always" answers,
/// parsed once. Shared by the turn's calls (and its subagents', which may run at once).
pub(crate) struct TurnRules {
    home: PathBuf,
    cwd: PathBuf,
    config_allow: Vec<String>,
    config_deny: Vec<String>,
    /// A rule that does not parse refuses every call (with the reason) rather than being
    /// skipped.
    in_force: RwLock<Result<Arc<Rules>, String>>,
}

impl TurnRules {
    /// Reads the stored rules once. An unreadable file is an error (the turn fails on it).
    pub fn load(home: &Path, cwd: &Path, config: &Config) -> Result<Self, String> {
        let stored = StoredRules::load(home, cwd).map_err(|e| e.to_string())?;
        let rules = Self {
            home: home.to_owned(),
            cwd: cwd.to_owned(),
            config_allow: config.permissions.allow.clone(),
            config_deny: config.permissions.deny.clone(),
            in_force: RwLock::new(Err(String::new())),
        };
        rules.set(Ok(stored));
        Ok(rules)
    }

    /// The rules for the next call (no I/O).
    pub fn in_force(&self) -> Result<Arc<Rules>, String> {
        self.in_force
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Stores the user's "always" answer about a call as a rule for the workspace, and puts the
    /// stored rules in force again at once: the calls after it are decided by it.
    pub fn remember(
        &self,
        tool: &str,
        access: &Access,
        roots: &[PathBuf],
        shell: Shell,
        allow: bool,
    ) {
        let kind = if allow {
            OptionKind::AllowAlways
        } else {
            OptionKind::RejectAlways
        };
        let Some(rule) = crate::permissions::always_rule(tool, access, roots, shell, kind) else {
            return;
        };
        if let Err(e) = StoredRules::add(&self.home, &self.cwd, rule.clone(), allow) {
            tracing::error!(%rule, error = %e, "could not store a permission rule");
        }
        self.set(StoredRules::load(&self.home, &self.cwd).map_err(|e| e.to_string()));
    }

    fn set(&self, stored: Result<StoredRules, String>) {
        let rules = stored.and_then(|stored| {
            let allow: Vec<String> = self
                .config_allow
                .iter()
                .chain(&stored.allow)
                .cloned()
                .collect();
            let deny: Vec<String> = self
                .config_deny
                .iter()
                .chain(&stored.deny)
                .cloned()
                .collect();
            Rules::from_strings(&allow, &deny)
                .map(Arc::new)
                .map_err(|e| e.to_string())
        });
        *self
            .in_force
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = rules;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes the workspace's rules file (created first through the store, which names it).
    fn rules_file(home: &Path, cwd: &Path, json: &str) {
        let dir = home.join("permissions");
        if !dir.exists() {
            StoredRules::add(home, cwd, "read(**)".into(), true).unwrap();
        }
        let file = std::fs::read_dir(&dir).unwrap().next().unwrap().unwrap();
        std::fs::write(file.path(), json).unwrap();
    }

    #[test]
    fn stored_rules_are_read_once_per_turn_and_again_after_an_always_answer() {
        let home = tempfile::tempdir().unwrap();
        let cwd = Path::new("/ws/a");
        rules_file(
            home.path(),
            cwd,
            r#"{"workspace":"/ws/a","deny":["bash(rm:*)"]}"#,
        );
        let rules = TurnRules::load(home.path(), cwd, &Config::default()).unwrap();
        assert_eq!(rules.in_force().unwrap().deny.len(), 1);
        // Changed on disk during the turn: not read again for each call.
        rules_file(home.path(), cwd, "{not json");
        assert_eq!(rules.in_force().unwrap().deny.len(), 1);
        rules_file(home.path(), cwd, r#"{"workspace":"/ws/a"}"#);
        // The user's "always" answer is stored and in force for the next call.
        let access = Access::Execute {
            command: "make test".into(),
        };
        rules.remember("bash", &access, &[cwd.to_owned()], Shell::Bash, true);
        let now = rules.in_force().unwrap();
        assert_eq!((now.allow.len(), now.deny.len()), (1, 0));
    }

    #[test]
    fn an_unreadable_rules_file_fails_the_turn() {
        let home = tempfile::tempdir().unwrap();
        let cwd = Path::new("/ws/b");
        rules_file(home.path(), cwd, "{not json");
        let Err(outcome) = settings(home.path(), cwd) else {
            panic!("settings resolved from a broken rules file");
        };
        let failure = outcome.failure.unwrap();
        assert_eq!(failure.error_kind, "permission_rules");
    }
}
