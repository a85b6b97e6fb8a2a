//! What providers report about their own models (`GET /v1/models`, Ollama's `/api/tags` +
//! `/api/show`), cached in `FERRITE_HOME/cache/models.json` so a new session shows the models
//! found last time without waiting for the network.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Models kept of one provider's listing, in the server's order: a listing of 40,000 entries
/// made every `session/new` take seconds and its answer megabytes. OpenRouter, the largest
/// real listing, has a few hundred.
pub const MAX_LISTED: usize = 1000;
/// The longest model id taken from a listing.
pub const MAX_ID_BYTES: usize = 256;
/// A model cache larger than this is not read: every `session/new` reads it. A provider at
/// [`MAX_LISTED`] takes about 55 KB of it, so this holds dozens.
pub const MAX_CACHE_BYTES: u64 = 2 * 1024 * 1024;

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
    /// Read back at most twice [`MAX_LISTED`] (then [`sanitize`]d): what is past that in a
    /// file is skipped without being kept.
    #[serde(deserialize_with = "first_models")]
    pub models: Vec<ListedModel>,
}

fn first_models<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<ListedModel>, D::Error> {
    struct First;
    impl<'de> serde::de::Visitor<'de> for First {
        type Value = Vec<ListedModel>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list of models")
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let mut models = Vec::new();
            while models.len() < 2 * MAX_LISTED {
                match seq.next_element()? {
                    Some(m) => models.push(m),
                    None => return Ok(models),
                }
            }
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            Ok(models)
        }
    }
    d.deserialize_seq(First)
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
    /// Whether it takes images, when the server says (Ollama's `vision` capability, an
    /// OpenAI-compatible listing's input modalities).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<bool>,
}

pub fn cache_path(home: &Path) -> PathBuf {
    home.join("cache").join("models.json")
}

impl Listings {
    /// The cached listings; nothing when the file is missing, unreadable or larger than
    /// [`MAX_CACHE_BYTES`] (it is only a cache). What it holds is checked like a fresh
    /// listing ([`sanitize`]): the file may have been written by anyone who could write there.
    pub fn load(home: &Path) -> Self {
        let path = cache_path(home);
        if std::fs::metadata(&path).is_ok_and(|m| m.len() > MAX_CACHE_BYTES) {
            tracing::warn!(path = %path.display(), "ignoring a model cache over {MAX_CACHE_BYTES} bytes");
            return Self::default();
        }
        let mut listings: Self = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                tracing::debug!(error = %e, "ignoring an unreadable model cache");
                Self::default()
            }),
            Err(_) => Self::default(),
        };
        for (name, listing) in &mut listings.providers {
            listing.models = sanitize(name, std::mem::take(&mut listing.models));
        }
        listings
    }

    /// Writes the cache atomically (temp file + rename): a concurrent reader sees the old or
    /// the new file, never half of one.
    pub fn save(&self, home: &Path) -> std::io::Result<()> {
        let bytes = serde_json::to_vec(self).map_err(std::io::Error::other)?;
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

/// The models of a listing Ferrite takes: ids [`check_listed_id`] accepts, each once, at most
/// [`MAX_LISTED`]. What is dropped is logged.
pub fn sanitize(provider: &str, models: Vec<ListedModel>) -> Vec<ListedModel> {
    let total = models.len();
    let mut seen = HashSet::new();
    let mut kept = Vec::with_capacity(total.min(MAX_LISTED));
    let mut invalid = 0usize;
    for m in models {
        if let Err(why) = check_listed_id(&m.id) {
            if invalid == 0 {
                tracing::warn!(
                    provider,
                    id = %crate::display::visible(&m.id.chars().take(80).collect::<String>()),
                    "dropping a listed model: its id {why}"
                );
            }
            invalid += 1;
            continue;
        }
        if kept.len() < MAX_LISTED && seen.insert(m.id.clone()) {
            kept.push(m);
        }
    }
    if invalid > 1 {
        tracing::warn!(provider, invalid, "dropped listed models with invalid ids");
    }
    if total - invalid > kept.len() {
        tracing::warn!(
            provider,
            listed = total,
            kept = kept.len(),
            "a model listing past {MAX_LISTED} entries (or with repeats) was cut"
        );
    }
    kept
}

/// Whether `id`, as a server listed it, may be a model id: at most [`MAX_ID_BYTES`], no
/// whitespace, control or invisible characters, and no path tricks (`..`, `.`, an empty
/// segment, a leading `/`, a backslash). A listing is the server's word, and its first model
/// can become the default: `../../../../etc/passwd` must not. The error completes "its id …".
pub fn check_listed_id(id: &str) -> Result<(), &'static str> {
    if id.is_empty() {
        return Err("is empty");
    }
    if id.len() > MAX_ID_BYTES {
        return Err("is longer than 256 bytes");
    }
    if id
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || crate::display::changes_display(c))
    {
        return Err("has whitespace, control or invisible characters");
    }
    if id.contains('\\') || id.split('/').any(|seg| matches!(seg, "" | "." | "..")) {
        return Err("is a path (`..`, `.`, an empty segment, a leading `/` or a backslash)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(id: &str) -> ListedModel {
        ListedModel {
            id: id.into(),
            context_window: None,
            max_output_tokens: None,
            images: None,
        }
    }

    #[test]
    fn listed_ids_that_are_paths_or_hide_characters_are_refused() {
        for good in [
            "llama3.2:latest",
            "qwen3-coder:30b",
            "anthropic/claude-3.5-sonnet",
            "hf.co/bartowski/Qwen2.5-Coder-7B-GGUF:Q4_K_M",
            "gpt-4o-2024-08-06",
            "a..b",
        ] {
            assert_eq!(check_listed_id(good), Ok(()), "{good}");
        }
        let long = "m".repeat(MAX_ID_BYTES + 1);
        for bad in [
            "",
            "../../../../etc/passwd",
            "/etc/passwd",
            "models/../secret",
            "a//b",
            "./x",
            "trailing/",
            "back\\slash",
            "with space",
            "tab\tname",
            "new\nline",
            "bidi\u{202e}txt",
            "zero\u{200b}width",
            "nbsp\u{a0}x",
            "esc\u{1b}[2K",
            long.as_str(),
        ] {
            assert!(check_listed_id(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_cache_too_large_to_read_at_every_session_is_ignored() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join("cache")).unwrap();
        let big = format!(
            "{{\"providers\": {{\"p\": {{\"base_url\": \"u\", \"fetched_at\": 0, \"models\": [{}]}}}}}}",
            vec!["{\"id\": \"m\"}"; 200_000].join(",")
        );
        assert!(big.len() as u64 > MAX_CACHE_BYTES);
        std::fs::write(cache_path(home.path()), big).unwrap();
        assert_eq!(Listings::load(home.path()), Listings::default());
    }

    #[test]
    fn a_listing_is_checked_deduplicated_and_capped() {
        let mut models = vec![listed("../../etc/passwd"), listed("a"), listed("a")];
        models.extend((0..MAX_LISTED + 50).map(|i| listed(&format!("m{i}"))));
        let kept = sanitize("p", models);
        assert_eq!(kept.len(), MAX_LISTED);
        assert_eq!(kept[0].id, "a");
        assert_eq!(kept[1].id, "m0");
    }

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
                    images: None,
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
