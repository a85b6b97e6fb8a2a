//! The providers of a catalog: the built-in four (their addresses from the environment), a
//! config's `[providers.NAME]` over them, and the key each one has.

use super::{KeySource, Provider};
use crate::config::{ApiKind, ProviderConfig};
use crate::credentials::Credentials;
use crate::env::Env;

/// Anthropic, OpenAI (Responses and Chat Completions) and a local Ollama.
pub(super) fn builtin(env: &Env) -> Vec<Provider> {
    let openai_base = env
        .get("OPENAI_BASE_URL")
        .unwrap_or("https://api.openai.com/v1")
        .trim_end_matches('/');
    vec![
        Provider {
            name: "anthropic".into(),
            api: ApiKind::Anthropic,
            base_url: env
                .get("ANTHROPIC_BASE_URL")
                .unwrap_or("https://api.anthropic.com")
                .trim_end_matches('/')
                .to_owned(),
            key_source: KeySource::Env(vec!["ANTHROPIC_API_KEY".into()]),
        },
        Provider {
            name: "openai".into(),
            api: ApiKind::OpenAiResponses,
            base_url: openai_base.to_owned(),
            key_source: KeySource::Env(vec!["OPENAI_API_KEY".into()]),
        },
        Provider {
            name: "openai-chat".into(),
            api: ApiKind::OpenAiChat,
            base_url: openai_base.to_owned(),
            key_source: KeySource::Env(vec!["OPENAI_API_KEY".into()]),
        },
        Provider {
            name: "ollama".into(),
            api: ApiKind::OpenAiChat,
            base_url: ollama_base(env.get("OLLAMA_HOST")),
            key_source: KeySource::NotNeeded,
        },
    ]
}

/// `[providers.NAME]`. Over a built-in of that name, what is given replaces the built-in's (e.g.
/// a proxy for openai) and what is left out stays; a new one speaks Chat Completions unless it
/// says otherwise.
pub(super) fn configured(name: &str, p: &ProviderConfig, builtin: Option<&Provider>) -> Provider {
    let base_url = p
        .base_url
        .as_deref()
        .map(|u| u.trim_end_matches('/').to_owned());
    let key_source = p
        .api_key_env
        .as_ref()
        .map(|var| KeySource::Env(vec![var.clone()]));
    match builtin {
        Some(b) => Provider {
            name: name.to_owned(),
            api: p.api.unwrap_or(b.api),
            base_url: base_url.unwrap_or_else(|| b.base_url.clone()),
            key_source: key_source.unwrap_or_else(|| b.key_source.clone()),
        },
        None => Provider {
            name: name.to_owned(),
            api: p.api.unwrap_or(ApiKind::OpenAiChat),
            base_url: base_url.unwrap_or_default(),
            key_source: key_source.unwrap_or(KeySource::NotNeeded),
        },
    }
}

/// Each provider's key: from its environment variables, else the stored credentials
/// (`openai-chat` shares OpenAI's stored key).
pub(super) fn keys(
    providers: &[Provider],
    env: &Env,
    creds: &Credentials,
) -> Vec<(String, String)> {
    providers
        .iter()
        .filter_map(|p| match &p.key_source {
            KeySource::NotNeeded => None,
            KeySource::Env(vars) => vars
                .iter()
                .find_map(|v| env.get(v))
                .or_else(|| creds.key(&p.name))
                .or_else(|| {
                    (p.name == "openai-chat")
                        .then(|| creds.key("openai"))
                        .flatten()
                })
                .map(|k| (p.name.clone(), k.to_owned())),
        })
        .collect()
}

/// Ollama's OpenAI-compatible endpoint from `OLLAMA_HOST` (a host, with or without scheme).
fn ollama_base(host: Option<&str>) -> String {
    match host {
        None => "http://127.0.0.1:11434/v1".into(),
        Some(h) => {
            let h = h.trim_end_matches('/');
            let with_scheme = if h.starts_with("http://") || h.starts_with("https://") {
                h.to_owned()
            } else {
                format!("http://{h}")
            };
            format!("{with_scheme}/v1")
        }
    }
}
