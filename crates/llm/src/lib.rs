//! ferrite-llm: the model providers. Implements [`ferrite_core::model::ModelConnector`] for the
//! three wire APIs (Anthropic Messages, OpenAI Responses, OpenAI Chat Completions): request
//! mapping, SSE decoding, retries, idle timeouts and cancellation. The one crate that speaks a
//! model vendor's wire format.

mod anthropic;
mod body;
mod client;
mod decode;
mod encode;
mod error;
#[cfg(test)]
mod golden_tests;
mod grammar;
mod listing;
mod openai_chat;
mod openai_responses;
mod options;
mod retry;
mod sse;
mod think;

use std::sync::Arc;

use ferrite_core::catalog::Provider;
use ferrite_core::config::ApiKind;
use ferrite_core::env::Env;
use ferrite_core::model::{ListingFuture, ModelClient, ModelConnector, ModelError, ModelErrorKind};

pub use body::release_buffers;
pub use decode::decode_sse;
pub use encode::request_body;
pub use options::LlmOptions;

/// Builds model clients for catalog providers. Cheap to clone; all clients share one
/// connection pool.
#[derive(Clone)]
pub struct Connector {
    /// Built on first use: loading the system's CA certificates takes several milliseconds,
    /// which `ferrite acp` should not spend before answering `initialize`.
    http: Arc<std::sync::OnceLock<reqwest::Client>>,
    options: LlmOptions,
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connector")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Connector {
    pub fn new(options: LlmOptions) -> Result<Self, ModelError> {
        Ok(Self {
            http: Arc::new(std::sync::OnceLock::new()),
            options,
        })
    }

    /// The shared HTTP client, built the first time a provider is connected.
    fn http(&self) -> Result<reqwest::Client, ModelError> {
        if let Some(c) = self.http.get() {
            return Ok(c.clone());
        }
        let built = reqwest::Client::builder()
            .connect_timeout(self.options.connect_timeout)
            .user_agent(concat!("ferrite/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| {
                ModelError::new(
                    ModelErrorKind::Configuration,
                    format!("could not set up the HTTP client: {e}"),
                )
            })?;
        Ok(self.http.get_or_init(|| built).clone())
    }

    /// [`LlmOptions::from_env`] applied to `env`.
    pub fn from_env(env: &Env) -> Result<Self, ModelError> {
        Self::new(LlmOptions::from_env(env))
    }

    pub fn options(&self) -> &LlmOptions {
        &self.options
    }
}

impl ModelConnector for Connector {
    fn connect(
        &self,
        provider: &Provider,
        api_key: Option<&str>,
    ) -> Result<Arc<dyn ModelClient>, ModelError> {
        let base = provider.base_url.trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(ModelError::new(
                ModelErrorKind::Configuration,
                format!(
                    "provider {} has base URL {:?}; it must start with http:// or https://",
                    provider.name, provider.base_url
                ),
            ));
        }
        // A bare origin for Anthropic, `.../v1` for the OpenAI APIs (docs/config.md).
        let url = match provider.api {
            ApiKind::Anthropic => format!("{base}/v1/messages"),
            ApiKind::OpenAiResponses => format!("{base}/responses"),
            ApiKind::OpenAiChat => format!("{base}/chat/completions"),
        };
        let api_key = api_key.filter(|k| !k.is_empty());
        let headers = client::headers(provider.api, api_key)?;
        Ok(Arc::new(client::HttpModelClient {
            inner: Arc::new(client::Inner {
                http: self.http()?,
                api: provider.api,
                label: provider.name.clone(),
                url,
                headers,
                api_key: api_key.map(str::to_owned),
                options: self.options.clone(),
            }),
        }))
    }

    fn list_models(
        &self,
        provider: &Provider,
        api_key: Option<&str>,
        timeout: std::time::Duration,
    ) -> ListingFuture {
        let http = self.http();
        let provider = provider.clone();
        let api_key = api_key.filter(|k| !k.is_empty()).map(str::to_owned);
        Box::pin(async move { listing::list(http?, provider, api_key, timeout).await })
    }
}
