//! Providers and models (`docs/models.md`): the built-ins plus `[providers.*]` from config, with where
//! each key comes from. Rebuilt for every new session so a model added to `config.toml` shows up
//! without restarting the agent.

mod builtin;
mod listing;
mod providers;
#[cfg(test)]
mod tests;

pub use builtin::{DEFAULT_ANTHROPIC_MAX_OUTPUT, DEFAULT_CONTEXT_WINDOW};
pub use listing::{
    ListedModel, Listings, MAX_ID_BYTES, MAX_LISTED, ProviderListing, check_listed_id, sanitize,
};

use serde::{Deserialize, Serialize};

use crate::config::{ApiKind, Config};
use crate::credentials::Credentials;
use crate::env::Env;
use crate::usage::Usage;

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
    /// The base URL as `docs/models.md` gives it: bare origin for `anthropic`, ending in `/v1` for
    /// the OpenAI APIs.
    pub base_url: String,
    pub key_source: KeySource,
}

/// How a model takes a reasoning effort.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningStyle {
    /// It takes none: `reasoning_effort` other than `default` is refused.
    None,
    /// Anthropic extended thinking with a token budget.
    Budget,
    /// Anthropic adaptive thinking (`thinking.type = "adaptive"` + `output_config.effort`).
    Adaptive,
    /// OpenAI reasoning models (`reasoning.effort`, `reasoning_effort`).
    Effort,
    /// Nothing is known: an effort the user picks is passed through, and a provider that
    /// rejects it says so.
    Unknown,
}

impl ReasoningStyle {
    /// Whether a `reasoning_effort` other than `default` may be chosen.
    pub fn takes_effort(self) -> bool {
        match self {
            ReasoningStyle::None => false,
            ReasoningStyle::Budget
            | ReasoningStyle::Adaptive
            | ReasoningStyle::Effort
            | ReasoningStyle::Unknown => true,
        }
    }

    /// Known to reason (returns reasoning items that must be sent back).
    pub fn is_reasoner(self) -> bool {
        match self {
            ReasoningStyle::Budget | ReasoningStyle::Adaptive | ReasoningStyle::Effort => true,
            ReasoningStyle::None | ReasoningStyle::Unknown => false,
        }
    }
}

/// USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    #[serde(default)]
    pub cache_read: Option<f64>,
    #[serde(default)]
    pub cache_write: Option<f64>,
}

impl Price {
    /// What one response cost, in USD. Cached reads and writes are billed at their own rates
    /// (the input rate when the rate is unknown); `input_tokens` includes both.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let cached = usage.cached_input_tokens + usage.cache_write_tokens;
        let plain = usage.input_tokens.saturating_sub(cached);
        let per_token = |tokens: u64, rate: f64| tokens as f64 * rate / 1_000_000.0;
        per_token(plain, self.input)
            + per_token(
                usage.cached_input_tokens,
                self.cache_read.unwrap_or(self.input),
            )
            + per_token(
                usage.cache_write_tokens,
                self.cache_write.unwrap_or(self.input),
            )
            + per_token(usage.output_tokens, self.output)
    }
}

/// Where the facts about a model come from (shown by `ferrite models`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FactSource {
    /// The built-in catalog (`catalog/models.toml`).
    Catalog,
    /// `[providers.NAME] models` in config.toml.
    Config,
    /// The provider's own model listing.
    Listing,
    /// Nothing is known: the documented defaults.
    Default,
}

impl FactSource {
    pub fn id(self) -> &'static str {
        match self {
            FactSource::Catalog => "catalog",
            FactSource::Config => "config",
            FactSource::Listing => "listing",
            FactSource::Default => "default",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ModelInfo {
    /// `provider/model`.
    pub id: String,
    pub provider: String,
    /// The model name the provider's API expects.
    pub model: String,
    pub name: String,
    pub context_window: u64,
    /// The most output tokens the model accepts in one response; `None` when unknown (then
    /// none is asked for on the OpenAI APIs).
    pub max_output_tokens: Option<u32>,
    pub reasoning: ReasoningStyle,
    /// Whether the provider offers a hosted web search for this model.
    pub web_search: bool,
    /// Whether the model takes images (prompt attachments, `read` of an image, MCP images).
    pub images: bool,
    pub price: Option<Price>,
    pub source: FactSource,
}

impl ModelInfo {
    /// Whether `reasoning_effort` other than `default` can be sent.
    pub fn takes_effort(&self) -> bool {
        self.reasoning.takes_effort()
    }
}

/// A model id that cannot be used, whatever the keys.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelIdError {
    #[error(
        "`{0}` is not a model id: write it as provider/model (e.g. anthropic/claude-sonnet-4-5)"
    )]
    Malformed(String),
    #[error("unknown provider `{provider}` in model `{id}`; known providers: {}", known.join(", "))]
    UnknownProvider {
        id: String,
        provider: String,
        known: Vec<String>,
    },
}

#[derive(Debug, Clone)]
pub struct Catalog {
    pub providers: Vec<Provider>,
    /// Every model something is known about: the built-in catalog, config, provider listings.
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

/// What the user must do before any model can be used (the -32000 of `docs/acp.md`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthNeeded {
    pub message: String,
    /// The provider the chosen model needs a key for; `None` when no model is chosen at all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Environment variables any one of which would do.
    pub env: Vec<String>,
    /// Providers `ferrite login` / `authenticate` can store a key for.
    pub login_providers: Vec<String>,
}

impl Catalog {
    pub fn build(config: &Config, env: &Env, creds: &Credentials) -> Catalog {
        let mut providers = providers::builtin(env);
        let mut models: Vec<ModelInfo> = builtin::models().to_vec();
        for (name, p) in &config.providers {
            let existing = providers.iter().position(|x| x.name == *name);
            let provider = providers::configured(name, p, existing.map(|i| &providers[i]));
            for m in &p.models {
                let id = format!("{name}/{}", m.id);
                // A model known under another id (`[providers.openai-chat] models = [{ id =
                // "gpt-4o" }]` is OpenAI's gpt-4o) starts from those facts, not the defaults.
                let mut info = match models.iter().position(|x| x.id == id) {
                    Some(i) => models.remove(i),
                    None => known_facts(&models, name, &m.id)
                        .unwrap_or_else(|| builtin::defaults(name, &m.id, provider.api)),
                };
                apply_entry(&mut info, m, provider.api);
                models.push(info);
            }
            match existing {
                Some(i) => providers[i] = provider,
                None => providers.push(provider),
            }
        }
        let keys = providers::keys(&providers, env, creds);
        Catalog {
            providers,
            models,
            keys,
        }
    }

    /// Adds what providers reported about their models: new models, and facts the catalog and
    /// config left open. Linear in the models (an index by id), whatever the listings hold.
    pub fn with_listings(mut self, listings: &Listings) -> Catalog {
        let mut index: std::collections::HashMap<String, usize> = self
            .models
            .iter()
            .enumerate()
            .map(|(i, m)| (m.id.clone(), i))
            .collect();
        for p in &self.providers {
            for listed in listings.models_of(&p.name, &p.base_url) {
                let id = format!("{}/{}", p.name, listed.id);
                match index.get(&id) {
                    Some(&i) => {
                        let known = &mut self.models[i];
                        if known.source == FactSource::Default {
                            known.source = FactSource::Listing;
                            if let Some(images) = listed.images {
                                known.images = images;
                            }
                        }
                        if known.max_output_tokens.is_none() {
                            known.max_output_tokens = listed.max_output_tokens;
                        }
                    }
                    None => {
                        // A model the catalog knows under another id (`openai-chat/gpt-4o` is
                        // `openai/gpt-4o`) keeps those facts; the listing fills the rest.
                        let info = match known_facts(&self.models, &p.name, &listed.id) {
                            Some(info) => info,
                            None => {
                                let mut info = builtin::defaults(&p.name, &listed.id, p.api);
                                if let Some(w) = listed.context_window {
                                    info.context_window = w;
                                }
                                if listed.max_output_tokens.is_some() {
                                    info.max_output_tokens = listed.max_output_tokens;
                                }
                                if let Some(images) = listed.images {
                                    info.images = images;
                                }
                                info.source = FactSource::Listing;
                                info
                            }
                        };
                        index.insert(id, self.models.len());
                        self.models.push(info);
                    }
                }
            }
        }
        self
    }

    /// The model the catalog, config or a listing knows by this exact id.
    pub fn model(&self, id: &str) -> Option<&ModelInfo> {
        self.models.iter().find(|m| m.id == id)
    }

    /// What is known about any `provider/model` of a known provider: its entry, else the
    /// entry it is a dated snapshot of (`claude-haiku-4-5-20251001`), else (for
    /// `openai-chat`) the `openai` entry without hosted web search, else the defaults.
    pub fn resolve(&self, id: &str) -> Result<ModelInfo, ModelIdError> {
        let (provider_name, model) = split_model_id(id)?;
        let Some(provider) = self.provider(provider_name) else {
            return Err(ModelIdError::UnknownProvider {
                id: id.to_owned(),
                provider: provider_name.to_owned(),
                known: self.providers.iter().map(|p| p.name.clone()).collect(),
            });
        };
        if let Some(m) = self.model(id) {
            return Ok(m.clone());
        }
        Ok(known_facts(&self.models, provider_name, model)
            .unwrap_or_else(|| builtin::defaults(provider_name, model, provider.api)))
    }

    /// The models a user can pick: [`Catalog::usable_models`], and the default model (what
    /// `FERRITE_MODEL` or `model` in config chose) whether or not anything lists it.
    pub fn pickable_models(&self, default: Option<&str>) -> Vec<ModelInfo> {
        let mut models: Vec<ModelInfo> = self.usable_models().into_iter().cloned().collect();
        if let Some(id) = default
            && !models.iter().any(|m| m.id == id)
            && let Ok(info) = self.resolve(id)
        {
            models.insert(0, info);
        }
        models
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

    /// Providers that take a key (what `ferrite login` offers).
    pub fn keyed_providers(&self) -> Vec<&Provider> {
        self.providers
            .iter()
            .filter(|p| matches!(p.key_source, KeySource::Env(_)))
            .collect()
    }

    /// The models a user can pick now: known models of providers that have a key or need
    /// none. `openai-chat` repeats `openai`'s models on another API, so it lists only models
    /// declared for it.
    pub fn usable_models(&self) -> Vec<&ModelInfo> {
        self.models
            .iter()
            .filter(|m| self.is_usable(&m.provider))
            .collect()
    }

    /// `FERRITE_MODEL`, else `model` in config, else the first model of the first provider
    /// that has a key (`docs/models.md`).
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
        // No key anywhere, but a local server reported models last time (discovery): one of
        // those is a usable model, so the user is not sent to a login they do not need.
        if let Some(m) = self.models.iter().find(|m| {
            m.source == FactSource::Listing
                && matches!(
                    self.provider(&m.provider).map(|p| &p.key_source),
                    Some(KeySource::NotNeeded)
                )
        }) {
            return DefaultModel::Chosen(m.id.clone());
        }
        DefaultModel::NoneConfigured
    }

    /// What the user should do so that `model` can be used, or `None` when it can.
    pub fn unusable_reason(&self, model: &str) -> Option<String> {
        if let Err(e) = self.resolve(model) {
            return Some(format!("{e}."));
        }
        self.auth_needed_for(model).map(|a| a.message)
    }

    /// The key `model`'s provider lacks, if it needs one. `None` for unknown providers too
    /// (that is not something a login fixes).
    pub fn auth_needed_for(&self, model: &str) -> Option<AuthNeeded> {
        let (provider_name, _) = split_model_id(model).ok()?;
        let provider = self.provider(provider_name)?;
        match &provider.key_source {
            KeySource::NotNeeded => None,
            KeySource::Env(_) if self.key(&provider.name).is_some() => None,
            KeySource::Env(vars) => Some(AuthNeeded {
                message: format!(
                    "No API key for provider `{}` (model `{model}`). Set {} or run `ferrite login {}`, or pick a model of another provider.",
                    provider.name,
                    vars.join(" or "),
                    provider.name
                ),
                provider: Some(provider.name.clone()),
                env: vars.clone(),
                login_providers: self.login_names(),
            }),
        }
    }

    /// Why no model at all can be used (no default, no key anywhere).
    pub fn nothing_configured(&self) -> AuthNeeded {
        let mut env: Vec<String> = self
            .keyed_providers()
            .iter()
            .flat_map(|p| match &p.key_source {
                KeySource::Env(vars) => vars.clone(),
                KeySource::NotNeeded => vec![],
            })
            .collect();
        env.dedup();
        env.push("FERRITE_MODEL".into());
        AuthNeeded {
            message: NO_PROVIDER_MESSAGE.to_owned(),
            provider: None,
            env,
            login_providers: self.login_names(),
        }
    }

    fn login_names(&self) -> Vec<String> {
        self.keyed_providers()
            .iter()
            .map(|p| p.name.clone())
            .collect()
    }
}

/// `provider/model`, split at the first `/`: the model part may itself hold `/` and `:`.
/// What the catalog knows about `provider/model` under another id: a dated snapshot of a known
/// model (`claude-haiku-4-5-20251001`), or for `openai-chat` the same OpenAI model of `openai`
/// (without hosted web search, which only the Responses API has).
fn known_facts(models: &[ModelInfo], provider: &str, model: &str) -> Option<ModelInfo> {
    let find = |id: &str| models.iter().find(|m| m.id == id);
    let id = format!("{provider}/{model}");
    if let Some(base) = strip_date_suffix(model)
        && let Some(m) = find(&format!("{provider}/{base}"))
    {
        let mut m = m.clone();
        m.id = id;
        m.model = model.to_owned();
        return Some(m);
    }
    if provider == "openai-chat"
        && let Some(m) = find(&format!("openai/{model}"))
            .or_else(|| strip_date_suffix(model).and_then(|b| find(&format!("openai/{b}"))))
    {
        let mut m = m.clone();
        m.id = id;
        m.model = model.to_owned();
        m.provider = provider.to_owned();
        m.web_search = false;
        return Some(m);
    }
    None
}

pub fn split_model_id(id: &str) -> Result<(&str, &str), ModelIdError> {
    match id.split_once('/') {
        Some((p, m)) if !p.is_empty() && !m.is_empty() => Ok((p, m)),
        Some(_) | None => Err(ModelIdError::Malformed(id.to_owned())),
    }
}

/// `claude-haiku-4-5-20251001` → `claude-haiku-4-5`: a dated snapshot has its alias's facts.
fn strip_date_suffix(model: &str) -> Option<&str> {
    let (base, date) = model.rsplit_once('-')?;
    (date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit())).then_some(base)
}

fn apply_entry(info: &mut ModelInfo, m: &crate::config::ModelEntry, api: ApiKind) {
    info.source = FactSource::Config;
    if let Some(name) = &m.name {
        info.name = name.clone();
    } else if info.name == m.id {
        info.name = format!("{} ({})", m.id, info.provider);
    }
    if let Some(w) = m.context_window {
        info.context_window = w;
    }
    if let Some(out) = m.max_output_tokens {
        info.max_output_tokens = Some(out);
    }
    if let Some(images) = m.images {
        info.images = images;
    }
    match m.reasoning {
        Some(false) => info.reasoning = ReasoningStyle::None,
        Some(true) if !info.reasoning.is_reasoner() => {
            info.reasoning = match info.reasoning {
                ReasoningStyle::None | ReasoningStyle::Unknown => match api {
                    ApiKind::Anthropic => ReasoningStyle::Budget,
                    ApiKind::OpenAiResponses | ApiKind::OpenAiChat => ReasoningStyle::Effort,
                },
                other => other,
            }
        }
        Some(true) | None => {}
    }
    if let Some(p) = m.price {
        info.price = Some(Price {
            input: p.input,
            output: p.output,
            cache_read: p.cache_read,
            cache_write: p.cache_write,
        });
    }
}

/// The message for a turn when no provider is usable at all.
pub const NO_PROVIDER_MESSAGE: &str = "No model provider is configured. Set ANTHROPIC_API_KEY or \
OPENAI_API_KEY (or run `ferrite login anthropic`), set FERRITE_MODEL=ollama/<model> for a local \
Ollama, or declare a provider under [providers.NAME] in FERRITE_HOME/config.toml.";
