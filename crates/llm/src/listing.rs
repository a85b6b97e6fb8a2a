//! Asking a provider which models it serves: `GET {base}/models` (OpenAI and compatible
//! servers: vLLM, llama.cpp, LM Studio, OpenRouter...), `GET {origin}/v1/models` (Anthropic), and
//! for Ollama its native `GET /api/tags` + `POST /api/show`, which also give the context length.
//! Read-only and cheap: `ferrite doctor` uses it to check that a key is accepted, too.

use std::time::Duration;

use ferrite_core::catalog::{ListedModel, Provider};
use ferrite_core::config::ApiKind;
use ferrite_core::model::{ModelError, ModelErrorKind};
use serde::Deserialize;
use serde_json::Value;

use crate::error;

/// Ollama models asked about with `/api/show` at most (one request each).
const MAX_SHOW_REQUESTS: usize = 64;
/// The most of a listing's body that is read: OpenRouter's, the largest real one, is a few MB.
/// (What is kept of a listing is decided in core: `catalog::sanitize`.)
const MAX_LISTING_BYTES: usize = 16 * 1024 * 1024;

/// The body of a listing, refused past [`MAX_LISTING_BYTES`] rather than read into memory.
async fn capped_body(mut response: reqwest::Response) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
        if body.len() + chunk.len() > MAX_LISTING_BYTES {
            return Err(format!(
                "the model listing is over {MAX_LISTING_BYTES} bytes"
            ));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

pub(crate) async fn list(
    http: reqwest::Client,
    provider: Provider,
    api_key: Option<String>,
    timeout: Duration,
) -> Result<Vec<ListedModel>, ModelError> {
    let work = async {
        if provider.name == "ollama"
            && let Some(models) = ollama_native(&http, &provider.base_url).await
        {
            return Ok(models);
        }
        openai_style(&http, &provider, api_key.as_deref()).await
    };
    match tokio::time::timeout(timeout, work).await {
        Ok(result) => result,
        Err(_) => Err(ModelError::new(
            ModelErrorKind::IdleTimeout,
            format!(
                "{} did not answer within {} s",
                provider.name,
                timeout.as_secs_f64()
            ),
        )),
    }
}

async fn openai_style(
    http: &reqwest::Client,
    provider: &Provider,
    api_key: Option<&str>,
) -> Result<Vec<ListedModel>, ModelError> {
    let base = provider.base_url.trim_end_matches('/');
    let url = match provider.api {
        ApiKind::Anthropic => format!("{base}/v1/models?limit=1000"),
        ApiKind::OpenAiResponses | ApiKind::OpenAiChat => format!("{base}/models"),
    };
    let mut headers = crate::client::headers(provider.api, api_key)?;
    headers.remove(reqwest::header::ACCEPT);
    let response = http.get(&url).headers(headers).send().await.map_err(|e| {
        ModelError::new(
            ModelErrorKind::Connection,
            // With its causes (connection refused, DNS, TLS), as a model call says them.
            format!(
                "could not reach {} at {url}: {}",
                provider.name,
                crate::client::describe(&e)
            ),
        )
    })?;
    let status = response.status().as_u16();
    let bytes = capped_body(response)
        .await
        .map_err(|e| error::invalid(&provider.name, e))?;
    if !(200..300).contains(&status) {
        let text = String::from_utf8_lossy(&bytes);
        return Err(error::from_status(status, &text, &provider.name, api_key));
    }
    let body: Value = serde_json::from_slice(&bytes)
        .map_err(|e| error::invalid(&provider.name, format!("model listing is not JSON: {e}")))?;
    let items = body
        .get("data")
        .or_else(|| body.get("models"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    Ok(items.iter().filter_map(listed_from_openai_item).collect())
}

/// One entry of a `/models` answer. Beyond `id`, compatible servers put the window in
/// different fields: `context_length` (OpenRouter, LM Studio), `max_model_len` (vLLM),
/// `context_window`; OpenRouter has the output limit under `top_provider`.
fn listed_from_openai_item(item: &Value) -> Option<ListedModel> {
    let id = item.get("id").and_then(Value::as_str)?.to_owned();
    let window = [
        "context_length",
        "max_model_len",
        "context_window",
        "max_context_length",
    ]
    .iter()
    .find_map(|k| item.get(*k).and_then(Value::as_u64))
    .filter(|w| *w > 0);
    let max_output = item
        .pointer("/top_provider/max_completion_tokens")
        .or_else(|| item.get("max_output_tokens"))
        .or_else(|| item.get("max_completion_tokens"))
        .and_then(Value::as_u64)
        .and_then(|v| u32::try_from(v).ok())
        .filter(|v| *v > 0);
    Some(ListedModel {
        id,
        context_window: window,
        max_output_tokens: max_output,
        images: input_modalities(item).map(|m| m.iter().any(|x| x == "image")),
    })
}

/// The input modalities a compatible server states: `architecture.input_modalities`
/// (OpenRouter), `input_modalities`, or `modalities` as a list or as `{input: [...]}`.
fn input_modalities(item: &Value) -> Option<Vec<String>> {
    let list = item
        .pointer("/architecture/input_modalities")
        .or_else(|| item.get("input_modalities"))
        .or_else(|| item.pointer("/modalities/input"))
        .or_else(|| item.get("modalities").filter(|m| m.is_array()))?;
    Some(
        list.as_array()?
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_ascii_lowercase)
            .collect(),
    )
}

#[derive(Deserialize)]
struct Tags {
    #[serde(default)]
    models: Vec<Tag>,
}

#[derive(Deserialize)]
struct Tag {
    name: String,
}

/// Ollama's own listing; `None` when the server does not speak it (then the OpenAI-style
/// listing is tried).
async fn ollama_native(http: &reqwest::Client, base_url: &str) -> Option<Vec<ListedModel>> {
    let origin = base_url.trim_end_matches('/').trim_end_matches("/v1");
    let response = http
        .get(format!("{origin}/api/tags"))
        .send()
        .await
        .ok()?
        .error_for_status()
        .ok()?;
    let tags: Tags = serde_json::from_slice(&capped_body(response).await.ok()?).ok()?;
    let shows = tags
        .models
        .iter()
        .take(MAX_SHOW_REQUESTS)
        .map(|t| show(http, origin, &t.name));
    let shown = futures::future::join_all(shows).await;
    Some(
        tags.models
            .into_iter()
            .zip(shown.into_iter().chain(std::iter::repeat(Shown::default())))
            .map(|(t, shown)| ListedModel {
                id: t.name,
                context_window: shown.window,
                max_output_tokens: None,
                images: shown.images,
            })
            .collect(),
    )
}

/// What `/api/show` says of a model.
#[derive(Clone, Default)]
struct Shown {
    window: Option<u64>,
    images: Option<bool>,
}

/// `model_info["<arch>.context_length"]` and `capabilities` (`vision`) of `/api/show`.
async fn show(http: &reqwest::Client, origin: &str, model: &str) -> Shown {
    let Some(show) = show_answer(http, origin, model).await else {
        return Shown::default();
    };
    let window = show
        .get("model_info")
        .and_then(Value::as_object)
        .and_then(|info| {
            info.iter()
                .find(|(k, _)| k.ends_with(".context_length"))
                .and_then(|(_, v)| v.as_u64())
        })
        .filter(|w| *w > 0);
    let images = show
        .get("capabilities")
        .and_then(Value::as_array)
        .map(|caps| caps.iter().any(|c| c.as_str() == Some("vision")));
    Shown { window, images }
}

async fn show_answer(http: &reqwest::Client, origin: &str, model: &str) -> Option<Value> {
    http.post(format!("{origin}/api/show"))
        .json(&serde_json::json!({ "model": model }))
        .send()
        .await
        .ok()?
        .error_for_status()
        .ok()?
        .json()
        .await
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn window_fields_of_compatible_servers() {
        let m = listed_from_openai_item(&json!({"id": "a", "max_model_len": 32768})).unwrap();
        assert_eq!(m.context_window, Some(32768));
        let m = listed_from_openai_item(
            &json!({"id": "b/c:free", "context_length": 200000, "top_provider": {"max_completion_tokens": 8192}}),
        )
        .unwrap();
        assert_eq!(
            (m.id.as_str(), m.context_window, m.max_output_tokens),
            ("b/c:free", Some(200000), Some(8192))
        );
        assert!(listed_from_openai_item(&json!({"object": "model"})).is_none());
    }
}
