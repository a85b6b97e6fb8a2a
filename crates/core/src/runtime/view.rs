//! How a session looks from outside: its settings and usage as the editor sees them, and the
//! checks and defaults applied when one opens.

use std::path::Path;

use super::error::RuntimeError;
use crate::catalog::Catalog;
use crate::config::Config;
use crate::events::{Event, Settings};
use crate::mcp::{McpServerSpec, McpTransport};
use crate::modes::{Harness, Mode};
use crate::state::SessionState;

/// The client's servers, then those of config whose names the client did not use.
pub(super) fn mcp_specs(
    config: &Config,
    mut from_client: Vec<McpServerSpec>,
    cwd: &Path,
) -> Vec<McpServerSpec> {
    for (name, s) in &config.mcp_servers {
        if from_client.iter().any(|c| c.name == *name) {
            continue;
        }
        let transport = match (&s.command, &s.url) {
            (Some(command), _) => McpTransport::Stdio {
                command: command.clone(),
                args: s.args.clone(),
                env: s.env.clone(),
            },
            (None, Some(url)) => McpTransport::Http {
                url: url.clone(),
                headers: s.headers.clone(),
            },
            (None, None) => continue,
        };
        from_client.push(McpServerSpec {
            name: name.clone(),
            transport,
            cwd: None,
            env_remove: vec![],
        });
    }
    let secret = crate::exec::secret_env_names(config);
    for s in &mut from_client {
        s.cwd.get_or_insert_with(|| cwd.to_owned());
        s.env_remove.clone_from(&secret);
    }
    from_client
}

pub(super) fn check_dir(p: &Path, what: &str) -> Result<(), RuntimeError> {
    if !p.is_absolute() {
        return Err(RuntimeError::Invalid(format!(
            "`{what}` must be an absolute path"
        )));
    }
    if !p.is_dir() {
        return Err(RuntimeError::Invalid(format!(
            "`{what}` is not an existing directory: {}",
            p.display()
        )));
    }
    Ok(())
}

pub(crate) fn ceiling(config: &Config, harness: Harness) -> Mode {
    harness.ceiling().min(config.max_mode)
}

/// A session's context occupancy and running cost. The cost is shown (0 at first) as soon as
/// the session's model has a known price.
pub(crate) fn usage_for(state: &SessionState, catalog: &Catalog) -> Event {
    let info = state.model.as_deref().and_then(|m| catalog.resolve(m).ok());
    let size = info
        .as_ref()
        .map_or(crate::catalog::DEFAULT_CONTEXT_WINDOW, |m| m.context_window);
    let cost = state
        .cost_usd
        .or_else(|| info.as_ref().and_then(|m| m.price).map(|_| 0.0));
    Event::Usage {
        used: state.context_tokens,
        size,
        cost,
    }
}

/// A session's settings as the editor sees them.
pub(crate) fn settings_for(state: &SessionState, catalog: &Catalog, ceiling: Mode) -> Settings {
    let mut models: Vec<(String, String)> = catalog
        .usable_models()
        .into_iter()
        .map(|m| (m.id.clone(), m.name.clone()))
        .collect();
    let model = state
        .model
        .clone()
        .or_else(|| models.first().map(|m| m.0.clone()))
        .unwrap_or_default();
    // The current model is always among the choices, listed or not (an open model id).
    if !model.is_empty() && !models.iter().any(|(id, _)| *id == model) {
        let name = catalog
            .resolve(&model)
            .map(|m| m.name)
            .unwrap_or_else(|_| model.clone());
        models.insert(0, (model.clone(), name));
    }
    Settings {
        mode: state.mode,
        available_modes: Mode::ALL.into_iter().filter(|m| *m <= ceiling).collect(),
        model,
        models,
        effort: state.effort,
        web_search: state.web_search,
    }
}
