//! How a session looks from outside: its settings and usage as the editor sees them. Used by the
//! session task (answers, refreshes) and by the turn (a mode change), so it sits below both.

use crate::catalog::Catalog;
use crate::config::Config;
use crate::events::{Event, Settings};
use crate::modes::{Harness, Mode};
use crate::state::SessionState;

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
pub(crate) fn settings_for(
    state: &SessionState,
    catalog: &Catalog,
    ceiling: Mode,
    agents: &[(String, String)],
) -> Settings {
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
        agent: state.agent.clone(),
        agents: agents.to_vec(),
    }
}
