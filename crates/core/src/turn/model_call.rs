//! What a turn needs around each model call: how many output tokens to ask for, where the model
//! id came from (for errors the user can act on), and the usage and cost of each response.

use crate::catalog::ModelInfo;
use crate::config::Config;
use crate::env::Env;
use crate::events::Event;
use crate::log::StoreError;
use crate::model::{ModelError, ModelErrorKind, Usage};
use crate::modes::Effort;
use crate::session::Recorder;

/// The most output tokens one call asks for, whatever the model allows: what a coding turn
/// needs, and a bound on what a runaway answer can cost.
pub(crate) const OUTPUT_TOKENS_CAP: u32 = 32_000;

/// `max_tokens` for the next call: the model's own limit (none when unknown), at most
/// [`OUTPUT_TOKENS_CAP`], and never more than the context window leaves after `used` tokens.
pub(crate) fn output_limit(info: &ModelInfo, used: u64) -> Option<u32> {
    let limit = info.max_output_tokens?.min(OUTPUT_TOKENS_CAP);
    let left = info.context_window.saturating_sub(used);
    let left = u32::try_from(left).unwrap_or(u32::MAX);
    Some(limit.min(left).max(1))
}

/// Where the model of a turn was chosen, to name it in a configuration error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ModelOrigin {
    /// `_meta.model` of the prompt.
    Prompt,
    FerriteModel,
    ConfigModel,
    /// `model` in the workspace's `.ferrite/config.toml` (among those the user allows).
    WorkspaceModel,
    /// Chosen in the session (`set_config_option model`, `session/set_model`).
    Session,
    /// A subagent's (`subagent.model`, an agent's `model`, else the session's).
    Subagent,
}

impl ModelOrigin {
    /// The session's model is recorded when the session opens, from `FERRITE_MODEL` or config;
    /// a model equal to one of those was most likely set there.
    pub(crate) fn of_session_model(model: &str, config: &Config, env: &Env) -> Self {
        if env.get("FERRITE_MODEL") == Some(model) {
            ModelOrigin::FerriteModel
        } else if config.model.as_deref() == Some(model) {
            if config.model_set_by.is_some() {
                ModelOrigin::WorkspaceModel
            } else {
                ModelOrigin::ConfigModel
            }
        } else {
            ModelOrigin::Session
        }
    }

    pub(crate) fn describe(self) -> &'static str {
        match self {
            ModelOrigin::Prompt => "`_meta.model` of this prompt",
            ModelOrigin::FerriteModel => "the FERRITE_MODEL environment variable",
            ModelOrigin::ConfigModel => "`model` in FERRITE_HOME/config.toml",
            ModelOrigin::WorkspaceModel => "`model` in the workspace's .ferrite/config.toml",
            ModelOrigin::Session => {
                "the session's model setting (the editor's model picker or session/set_model)"
            }
            ModelOrigin::Subagent => {
                "the subagent's model (`subagent.model`, the agent's `model`, else the session's)"
            }
        }
    }
}

/// A provider error in terms the user can act on: a model the provider does not know names
/// the model and where it was set; a rejected request that carried a reasoning effort the
/// model may not take says so.
pub(crate) fn explain_model_error(
    e: ModelError,
    info: &ModelInfo,
    origin: ModelOrigin,
    effort: Effort,
) -> ModelError {
    match e.kind {
        ModelErrorKind::ModelNotFound => ModelError::new(
            ModelErrorKind::ModelNotFound,
            format!(
                "provider `{}` does not know the model `{}` (model id `{}`, set by {}). Pick a model it serves (`ferrite models` lists them) or fix the name. The provider said: {}",
                info.provider,
                info.model,
                info.id,
                origin.describe(),
                e.message
            ),
        ),
        ModelErrorKind::Http { status: 400 | 422 } if effort != Effort::Default => {
            let message = format!(
                "{} (the request asked for reasoning effort `{}`; if this model takes none, set the reasoning effort to default)",
                e.message,
                effort.id()
            );
            ModelError::new(e.kind, message)
        }
        ModelErrorKind::Http { .. }
        | ModelErrorKind::Auth
        | ModelErrorKind::Quota
        | ModelErrorKind::ContextLength
        | ModelErrorKind::StreamCut
        | ModelErrorKind::IdleTimeout
        | ModelErrorKind::Connection
        | ModelErrorKind::Provider { .. }
        | ModelErrorKind::InvalidResponse
        | ModelErrorKind::Configuration
        | ModelErrorKind::Cancelled => e,
    }
}

/// Records a response's usage and cost, and tells the editor the context occupancy and the
/// session's running cost.
pub(crate) async fn record_usage(
    rec: &Recorder,
    info: &ModelInfo,
    usage: &Usage,
    context_tokens: u64,
) -> Result<(), StoreError> {
    let cost_usd = info.price.map(|p| p.cost(usage));
    let cost = rec.record_usage(&info.id, *usage, context_tokens, cost_usd)?;
    rec.emit(Event::Usage {
        used: context_tokens,
        size: info.context_window,
        cost,
    })
    .await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{FactSource, ReasoningStyle};

    fn info(window: u64, max: Option<u32>) -> ModelInfo {
        ModelInfo {
            id: "p/m".into(),
            provider: "p".into(),
            model: "m".into(),
            name: "m".into(),
            context_window: window,
            max_output_tokens: max,
            reasoning: ReasoningStyle::None,
            web_search: false,
            images: false,
            price: None,
            source: FactSource::Default,
        }
    }

    #[test]
    fn output_limit_respects_the_model_and_the_window() {
        assert_eq!(output_limit(&info(128_000, None), 0), None);
        assert_eq!(output_limit(&info(200_000, Some(8_192)), 0), Some(8_192));
        assert_eq!(
            output_limit(&info(1_000_000, Some(128_000)), 0),
            Some(32_000)
        );
        assert_eq!(output_limit(&info(10_000, Some(8_192)), 6_000), Some(4_000));
        assert_eq!(output_limit(&info(10_000, Some(8_192)), 20_000), Some(1));
    }
}
