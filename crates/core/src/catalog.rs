//! Providers and models (contract §3): the built-ins plus `[providers.*]` from config, with where
//! each key comes from. Rebuilt for every new session so a model added to `config.toml` shows up
//! without restarting the agent.

use crate::config::{ApiKind, Config};
use crate::credentials::Credentials;
use crate::env::Env;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// The provider takes no key (a local server).
    NotNeeded,
    /// Read from the first set variable, else from `credentials.json` under the provider's name.
    Env(Vec<String>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provider {
    pub name: String,
    pub api: ApiKind,
    /// The base URL as contract §3 gives it: bare origin for `anthropic`, ending in `/v1` for
    /// the OpenAI APIs.
    pub base_url: String,
    pub key_source: KeySource,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInfo {
    /// `provider/model`.
    pub id: String,
    pub provider: String,
    /// The model name the provider's API expects.
    pub model: String,
    pub name: String,
    pub context_window: u64,
    /// Whether `reasoning_effort` other than `default` can be sent.
    pub reasoning: bool,
    /// Whether the provider offers a hosted web search for this model.
    pub web_search: bool,
}

#[derive(Debug, Clone)]
pub struct Catalog {
    pub providers: Vec<Provider>,
    pub models: Vec<ModelInfo>,
    keys: Vec<(String, String)>,
}

/// Where the default model came from, or why there is none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DefaultModel {
    Chosen(String),
    /// No `FERRITE_MODEL`, no `model` in config, and no provider has a key.
    NoneConfigured,
}

struct Builtin {
    provider: &'static str,
    model: &'static str,
    name: &'static str,
    window: u64,
    reasoning: bool,
    web_search: bool,
}

const BUILTIN_MODELS: &[Builtin] = &[
    Builtin {
        provider: "anthropic",
        model: "claude-sonnet-4-5",
        name: "Claude Sonnet 4.5",
        window: 200_000,
        reasoning: true,
        web_search: true,
    },
    Builtin {
        provider: "anthropic",
        model: "claude-opus-4-1",
        name: "Claude Opus 4.1",
        window: 200_000,
        reasoning: true,
        web_search: true,
    },
    Builtin {
        provider: "anthropic",
        model: "claude-haiku-4-5",
        name: "Claude Haiku 4.5",
        window: 200_000,
        reasoning: true,
        web_search: true,
    },
    Builtin {
        provider: "openai",
        model: "gpt-5",
        name: "GPT-5",
        window: 400_000,
        reasoning: true,
        web_search: true,
    },
    Builtin {
        provider: "openai",
        model: "gpt-5-mini",
        name: "GPT-5 mini",
        window: 400_000,
        reasoning: true,
        web_search: true,
    },
    Builtin {
        provider: "openai",
        model: "gpt-4.1",
        name: "GPT-4.1",
        window: 1_047_576,
        reasoning: false,
        web_search: true,
    },
    Builtin {
        provider: "openai-chat",
        model: "gpt-4o",
        name: "GPT-4o (Chat Completions)",
        window: 128_000,
        reasoning: false,
        web_search: false,
    },
    Builtin {
        provider: "ollama",
        model: "qwen3-coder",
        name: "Qwen3 Coder (Ollama)",
        window: 262_144,
        reasoning: false,
        web_search: false,
    },
];

/// Context window assumed for a configured model that does not state one.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;

impl Catalog {
    pub fn build(config: &Config, env: &Env, creds: &Credentials) -> Catalog {
        let openai_base = env
            .get("OPENAI_BASE_URL")
            .unwrap_or("https://api.openai.com/v1")
            .trim_end_matches('/');
        let mut providers = vec![
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
        ];
        let mut models: Vec<ModelInfo> = BUILTIN_MODELS
            .iter()
            .map(|b| ModelInfo {
                id: format!("{}/{}", b.provider, b.model),
                provider: b.provider.into(),
                model: b.model.into(),
                name: b.name.into(),
                context_window: b.window,
                reasoning: b.reasoning,
                web_search: b.web_search,
            })
            .collect();
        for (name, p) in &config.providers {
            let provider = Provider {
                name: name.clone(),
                api: p.api,
                base_url: p.base_url.trim_end_matches('/').to_owned(),
                key_source: match &p.api_key_env {
                    Some(var) => KeySource::Env(vec![var.clone()]),
                    None => KeySource::NotNeeded,
                },
            };
            // A configured provider with a built-in's name replaces it (e.g. a proxy for openai).
            providers.retain(|existing| existing.name != *name);
            providers.push(provider);
            for m in &p.models {
                let id = format!("{name}/{}", m.id);
                models.retain(|existing| existing.id != id);
                models.push(ModelInfo {
                    id,
                    provider: name.clone(),
                    model: m.id.clone(),
                    name: m
                        .name
                        .clone()
                        .unwrap_or_else(|| format!("{} ({name})", m.id)),
                    context_window: m.context_window.unwrap_or(DEFAULT_CONTEXT_WINDOW),
                    reasoning: matches!(
                        p.api,
                        ApiKind::OpenAiChat | ApiKind::OpenAiResponses | ApiKind::Anthropic
                    ),
                    web_search: false,
                });
            }
        }
        let keys = providers
            .iter()
            .filter_map(|p| match &p.key_source {
                KeySource::NotNeeded => None,
                KeySource::Env(vars) => vars
                    .iter()
                    .find_map(|v| env.get(v))
                    .or_else(|| creds.key(&p.name))
                    .or_else(|| {
                        // `openai-chat` shares OpenAI's stored key.
                        (p.name == "openai-chat")
                            .then(|| creds.key("openai"))
                            .flatten()
                    })
                    .map(|k| (p.name.clone(), k.to_owned())),
            })
            .collect();
        Catalog {
            providers,
            models,
            keys,
        }
    }

    pub fn model(&self, id: &str) -> Option<&ModelInfo> {
        self.models.iter().find(|m| m.id == id)
    }

    pub fn provider(&self, name: &str) -> Option<&Provider> {
        self.providers.iter().find(|p| p.name == name)
    }

    /// The API key for `provider`, from the environment or `credentials.json`.
    pub fn key(&self, provider: &str) -> Option<&str> {
        self.keys
            .iter()
            .find(|(p, _)| p == provider)
            .map(|(_, k)| k.as_str())
    }

    /// Whether `provider` can be called now: it needs no key, or has one.
    pub fn is_usable(&self, provider: &str) -> bool {
        match self.provider(provider).map(|p| &p.key_source) {
            Some(KeySource::NotNeeded) => true,
            Some(KeySource::Env(_)) => self.key(provider).is_some(),
            None => false,
        }
    }

    /// Providers that have a key (keyless local providers are not "configured").
    pub fn configured_providers(&self) -> Vec<String> {
        self.keys.iter().map(|(p, _)| p.clone()).collect()
    }

    /// `FERRITE_MODEL`, else `model` in config, else the first model of the first provider
    /// that has a key (contract §3).
    pub fn default_model(&self, config: &Config, env: &Env) -> DefaultModel {
        if let Some(m) = env.get("FERRITE_MODEL").or(config.model.as_deref()) {
            return DefaultModel::Chosen(m.to_owned());
        }
        for p in &self.providers {
            if self.key(&p.name).is_some()
                && let Some(m) = self.models.iter().find(|m| m.provider == p.name)
            {
                return DefaultModel::Chosen(m.id.clone());
            }
        }
        DefaultModel::NoneConfigured
    }

    /// What the user should do so that `model` can be used, or `None` when it can.
    pub fn unusable_reason(&self, model: &str) -> Option<String> {
        let Some(info) = self.model(model) else {
            return Some(format!(
                "Unknown model `{model}`. Pick one of the models listed in the `model` option, or \
                 declare it under [providers.NAME] models in FERRITE_HOME/config.toml."
            ));
        };
        let provider = self.provider(&info.provider)?;
        match &provider.key_source {
            KeySource::NotNeeded => None,
            KeySource::Env(vars) if self.key(&provider.name).is_none() => Some(format!(
                "No API key for provider `{}`. Set {} or run `ferrite login {}`.",
                provider.name,
                vars.join(" or "),
                provider.name
            )),
            KeySource::Env(_) => None,
        }
    }
}

/// The message for a turn when no provider is usable at all.
pub const NO_PROVIDER_MESSAGE: &str = "No model provider is configured. Set ANTHROPIC_API_KEY or \
OPENAI_API_KEY (or run `ferrite login anthropic`), set FERRITE_MODEL=ollama/<model> for a local \
Ollama, or declare a provider under [providers.NAME] in FERRITE_HOME/config.toml.";

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn no_keys_means_no_default() {
        let c = Catalog::build(&Config::default(), &Env::default(), &Credentials::default());
        assert_eq!(
            c.default_model(&Config::default(), &Env::default()),
            DefaultModel::NoneConfigured
        );
        assert!(
            c.unusable_reason("anthropic/claude-sonnet-4-5")
                .unwrap()
                .contains("ANTHROPIC_API_KEY")
        );
        assert_eq!(c.unusable_reason("ollama/qwen3-coder"), None);
    }

    #[test]
    fn first_provider_with_a_key_wins_and_env_beats_config() {
        let env = Env::from_pairs([("OPENAI_API_KEY", "k")]);
        let c = Catalog::build(&Config::default(), &env, &Credentials::default());
        assert_eq!(
            c.default_model(&Config::default(), &env),
            DefaultModel::Chosen("openai/gpt-5".into())
        );
        let cfg = Config {
            model: Some("openai/gpt-4.1".into()),
            ..Config::default()
        };
        assert_eq!(
            c.default_model(&cfg, &env),
            DefaultModel::Chosen("openai/gpt-4.1".into())
        );
        let env2 = Env::from_pairs([
            ("OPENAI_API_KEY", "k"),
            ("FERRITE_MODEL", "ollama/qwen3-coder"),
        ]);
        assert_eq!(
            c.default_model(&cfg, &env2),
            DefaultModel::Chosen("ollama/qwen3-coder".into())
        );
    }

    #[test]
    fn configured_providers_and_base_urls() {
        let cfg = Config::from_user_toml(
            "[providers.local]\napi = \"openai-chat\"\nbase_url = \"http://127.0.0.1:9/v1/\"\nmodels = [{ id = \"m\", context_window = 1000 }]\n",
            Path::new("/c.toml"),
        )
        .unwrap();
        let env = Env::from_pairs([
            ("ANTHROPIC_BASE_URL", "http://127.0.0.1:1/"),
            ("OLLAMA_HOST", "127.0.0.1:5"),
        ]);
        let c = Catalog::build(&cfg, &env, &Credentials::default());
        assert_eq!(c.model("local/m").unwrap().context_window, 1000);
        assert_eq!(
            c.provider("local").unwrap().base_url,
            "http://127.0.0.1:9/v1"
        );
        assert_eq!(
            c.provider("anthropic").unwrap().base_url,
            "http://127.0.0.1:1"
        );
        assert_eq!(
            c.provider("ollama").unwrap().base_url,
            "http://127.0.0.1:5/v1"
        );
        assert!(c.is_usable("local"));
    }
}
