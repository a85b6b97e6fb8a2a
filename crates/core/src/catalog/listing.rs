//! What providers report about their own models (`GET /v1/models`, Ollama's `/api/tags` +
//! `/api/show`), cached in `FERRITE_HOME/cache/models.json` so a new session shows the models
//! found last time without waiting for the network.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Every provider's last listing, by provider name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Listings {
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderListing>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderListing {
    /// The base URL the listing came from: a listing of another server (the URL changed since)
    /// is not used.
    pub base_url: String,
    /// Unix seconds.
    pub fetched_at: u64,
    pub models: Vec<ListedModel>,
}

/// One model as its server reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListedModel {
    /// The name the provider's API takes.
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
}

pub fn cache_path(home: &Path) -> PathBuf {
    home.join("cache").join("models.json")
}

impl Listings {
    /// The cached listings; nothing when the file is missing or unreadable (it is only a cache).
    pub fn load(home: &Path) -> Self {
        match std::fs::read(cache_path(home)) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                tracing::debug!(error = %e, "ignoring an unreadable model cache");
                Self::default()
            }),
            Err(_) => Self::default(),
        }
    }

    /// Writes the cache atomically (temp file + rename): a concurrent reader sees the old or
    /// the new file, never half of one.
    pub fn save(&self, home: &Path) -> std::io::Result<()> {
        let bytes = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        crate::private_fs::write_atomic(&cache_path(home), &bytes)
    }

    /// The models `provider` reported, if its listing is of `base_url`.
    pub fn models_of(&self, provider: &str, base_url: &str) -> &[ListedModel] {
        match self.providers.get(provider) {
            Some(l) if l.base_url == base_url => &l.models,
            Some(_) | None => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_stale_urls_are_ignored() {
        let home = tempfile::tempdir().unwrap();
        assert_eq!(Listings::load(home.path()), Listings::default());
        let mut l = Listings::default();
        l.providers.insert(
            "ollama".into(),
            ProviderListing {
                base_url: "http://127.0.0.1:1/v1".into(),
                fetched_at: 5,
                models: vec![ListedModel {
                    id: "llama3.2:latest".into(),
                    context_window: Some(131072),
                    max_output_tokens: None,
                }],
            },
        );
        l.save(home.path()).unwrap();
        let back = Listings::load(home.path());
        assert_eq!(back, l);
        assert_eq!(back.models_of("ollama", "http://127.0.0.1:1/v1").len(), 1);
        assert!(back.models_of("ollama", "http://127.0.0.1:2/v1").is_empty());
    }
}
