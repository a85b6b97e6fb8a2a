//! The built-in model facts (`models.toml`, compiled in) and the documented defaults for models
//! nothing is known about (`docs/models.md`).

use std::sync::OnceLock;

use serde::Deserialize;

use super::{FactSource, ModelInfo, Price, ReasoningStyle};
use crate::config::ApiKind;

const DATA: &str = include_str!("models.toml");

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Data {
    model: Vec<Entry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    provider: String,
    id: String,
    name: String,
    context_window: u64,
    max_output_tokens: u32,
    reasoning: ReasoningStyle,
    web_search: bool,
    /// Every current model of the built-in providers takes images; `images = false` says otherwise.
    #[serde(default = "yes")]
    images: bool,
    price: Price,
}

fn yes() -> bool {
    true
}

/// The catalog entries, parsed once per process (the data is a constant; a unit test parses
/// it, so a bad edit fails the build's tests rather than the first session).
pub(super) fn models() -> &'static [ModelInfo] {
    static MODELS: OnceLock<Vec<ModelInfo>> = OnceLock::new();
    MODELS.get_or_init(|| match toml::from_str::<Data>(DATA) {
        Ok(data) => data
            .model
            .into_iter()
            .map(|e| ModelInfo {
                id: format!("{}/{}", e.provider, e.id),
                provider: e.provider,
                model: e.id,
                name: e.name,
                context_window: e.context_window,
                max_output_tokens: Some(e.max_output_tokens),
                reasoning: e.reasoning,
                web_search: e.web_search,
                images: e.images,
                price: Some(e.price),
                source: FactSource::Catalog,
            })
            .collect(),
        Err(e) => {
            tracing::error!(error = %e, "the built-in model catalog does not parse");
            Vec::new()
        }
    })
}

/// Context window assumed for a model nothing is known about (OpenAI APIs and local servers).
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;
/// Every Claude model since Claude 3 has at least this window.
pub const DEFAULT_ANTHROPIC_CONTEXT_WINDOW: u64 = 200_000;
/// The Messages API requires `max_tokens`; every current Claude model accepts this much.
pub const DEFAULT_ANTHROPIC_MAX_OUTPUT: u32 = 8_192;

/// What is assumed about `provider/model` when neither the catalog, the config nor the
/// provider's listing says anything (documented in `docs/models.md`).
pub(super) fn defaults(provider: &str, model: &str, api: ApiKind) -> ModelInfo {
    let (window, max_output, reasoning) = match api {
        ApiKind::Anthropic => (
            DEFAULT_ANTHROPIC_CONTEXT_WINDOW,
            Some(DEFAULT_ANTHROPIC_MAX_OUTPUT),
            claude_thinking_style(model),
        ),
        // No known limit: no `max_tokens` / `max_output_tokens` is sent at all, so the server
        // applies its own (sending a guess is what made servers answer 400).
        ApiKind::OpenAiResponses | ApiKind::OpenAiChat => {
            (DEFAULT_CONTEXT_WINDOW, None, ReasoningStyle::Unknown)
        }
    };
    ModelInfo {
        id: format!("{provider}/{model}"),
        provider: provider.to_owned(),
        model: model.to_owned(),
        name: model.to_owned(),
        context_window: window,
        max_output_tokens: max_output,
        reasoning,
        web_search: false,
        // Every Claude model since Claude 3 takes images, and so do the models of OpenAI's own
        // API; a model behind another OpenAI-compatible server may well not (set
        // `images = true` on its `[providers.NAME] models` entry when it does).
        images: provider == "anthropic" || provider == "openai",
        price: None,
        source: FactSource::Default,
    }
}

/// Claude 4.6 and later take adaptive thinking (and the newest refuse the budget form); older
/// ones only the budget form. Read from the version in the id (`claude-sonnet-4-6`,
/// `claude-opus-5`, `claude-3-7-sonnet-20250219`); a trailing date is not a version.
fn claude_thinking_style(model: &str) -> ReasoningStyle {
    let numbers: Vec<u32> = model
        .split(['-', '.', '@', ':'])
        .filter(|p| !p.is_empty() && p.len() < 8)
        .filter_map(|p| p.parse().ok())
        .collect();
    match numbers.as_slice() {
        [major, ..] if *major >= 5 => ReasoningStyle::Adaptive,
        [4, minor, ..] if *minor >= 6 => ReasoningStyle::Adaptive,
        _ => ReasoningStyle::Budget,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_file_parses_and_ids_are_unique() {
        let data: Data = toml::from_str(DATA).unwrap();
        let all = models();
        assert_eq!(all.len(), data.model.len());
        let mut ids: Vec<&str> = all.iter().map(|m| m.id.as_str()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), all.len(), "duplicate ids in models.toml");
        for m in all {
            assert!(
                m.max_output_tokens.unwrap() as u64 <= m.context_window,
                "{}",
                m.id
            );
            assert!(matches!(m.provider.as_str(), "anthropic" | "openai"));
        }
    }

    #[test]
    fn claude_versions_pick_the_thinking_style() {
        assert_eq!(
            claude_thinking_style("claude-sonnet-4-5"),
            ReasoningStyle::Budget
        );
        assert_eq!(
            claude_thinking_style("claude-haiku-4-5-20251001"),
            ReasoningStyle::Budget
        );
        assert_eq!(
            claude_thinking_style("claude-3-7-sonnet-20250219"),
            ReasoningStyle::Budget
        );
        assert_eq!(
            claude_thinking_style("claude-sonnet-4-6"),
            ReasoningStyle::Adaptive
        );
        assert_eq!(
            claude_thinking_style("claude-fable-5-1"),
            ReasoningStyle::Adaptive
        );
        assert_eq!(claude_thinking_style("claude-next"), ReasoningStyle::Budget);
    }
}
