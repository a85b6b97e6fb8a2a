//! ferrite-llm: the model providers. Implements [`ferrite_core::model::ModelConnector`] for the
//! three wire APIs (Anthropic Messages, OpenAI Responses, OpenAI Chat Completions): request
//! mapping, SSE decoding, retries, idle timeouts and cancellation. The one crate that speaks a
//! model vendor's wire format.

mod anthropic;
mod body;
mod client;
mod decode;
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

pub use decode::decode_sse;
pub use options::LlmOptions;

/// How long after a session opens the HTTP client is readied ([`ModelConnector::prepare`]).
const PREPARE_AFTER: std::time::Duration = std::time::Duration::from_millis(200);

/// Builds model clients for catalog providers. Cheap to clone; all clients share one
/// connection pool.
#[derive(Clone)]
pub struct Connector {
    /// Built on first use: loading the system's CA certificates takes several milliseconds,
    /// which `ferrite acp` should not spend before answering `initialize`.
    /// A failure is kept too: it comes from the TLS setup, which a retry does not change.
    http: Arc<std::sync::OnceLock<Result<reqwest::Client, String>>>,
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

    /// The shared HTTP client, built the first time a provider is connected (or by
    /// [`ModelConnector::prepare`]). A caller that comes while another thread builds it waits for
    /// that build instead of loading the certificates a second time.
    fn http(&self) -> Result<reqwest::Client, ModelError> {
        let built = self.http.get_or_init(|| {
            reqwest::Client::builder()
                .connect_timeout(self.options.connect_timeout)
                .user_agent(concat!("ferrite/", env!("CARGO_PKG_VERSION")))
                .build()
                .map_err(|e| e.to_string())
        });
        built.clone().map_err(|e| {
            ModelError::new(
                ModelErrorKind::Configuration,
                format!("could not set up the HTTP client: {e}"),
            )
        })
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
    fn prepare(&self) {
        if self.http.get().is_some() {
            return;
        }
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let this = self.clone();
            rt.spawn(async move {
                // Not at once: what an editor sends right after opening a session (more
                // sessions, settings) should not share the CPU with this; a person takes longer
                // to type a prompt. A prompt sooner builds the client itself.
                tokio::time::sleep(PREPARE_AFTER).await;
                if this.http.get().is_none() {
                    // Reading the system's certificates is file I/O: a blocking thread's work. A
                    // failure is reported by the first call that needs the client.
                    drop(tokio::task::spawn_blocking(move || drop(this.http())));
                }
            });
        }
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn prepare_builds_the_http_client_in_the_background() {
        let connector = Connector::new(LlmOptions::default()).unwrap();
        assert!(connector.http.get().is_none(), "built before anyone asked");
        connector.prepare();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while connector.http.get().is_none() {
            assert!(
                std::time::Instant::now() < deadline,
                "prepare did not build the client"
            );
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        // Clones share it: the first prompt's connect uses the one built here.
        assert!(connector.clone().http.get().is_some());
    }
}
