//! Model discovery: asks local and configured OpenAI-compatible servers which models they serve,
//! in the background, and keeps the answers in `FERRITE_HOME/cache/models.json`. A session
//! opens with what the cache knows and never waits for this; open sessions get the refreshed
//! `model` option when the listing changed.

use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::catalog::{Catalog, KeySource, Listings, ProviderListing};
use crate::config::{ApiKind, Config};
use crate::services::Services;

/// How long one provider may take to list its models.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(3);
/// A process asks again at most this often (each new session would otherwise ask).
const MIN_INTERVAL: Duration = Duration::from_secs(60);

/// Whether a discovery runs, and when the last one started.
#[derive(Default)]
pub(crate) struct DiscoveryState {
    last: Mutex<Option<Instant>>,
}

impl DiscoveryState {
    /// Claims the next run: false when one started less than [`MIN_INTERVAL`] ago.
    pub(crate) fn claim(&self) -> bool {
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        match *last {
            Some(t) if t.elapsed() < MIN_INTERVAL => false,
            Some(_) | None => {
                *last = Some(Instant::now());
                true
            }
        }
    }
}

/// Whether discovery is on (`FERRITE_DISCOVERY=off` or `0` turns it off) and its timeout
/// (`FERRITE_DISCOVERY_TIMEOUT_MS`).
pub(crate) fn settings(services: &Services) -> Option<Duration> {
    let env = &services.env;
    if matches!(env.get("FERRITE_DISCOVERY"), Some("0" | "off" | "false")) {
        return None;
    }
    Some(
        env.get("FERRITE_DISCOVERY_TIMEOUT_MS")
            .and_then(|v| v.parse().ok())
            .map_or(DEFAULT_TIMEOUT, Duration::from_millis),
    )
}

/// The providers worth asking: the local Ollama and every configured provider on an OpenAI
/// API (the built-in hosted providers are described by the catalog). A provider that needs a
/// key it does not have is skipped.
fn to_ask(catalog: &Catalog, config: &Config) -> Vec<crate::catalog::Provider> {
    catalog
        .providers
        .iter()
        .filter(|p| p.name == "ollama" || config.providers.contains_key(&p.name))
        .filter(|p| matches!(p.api, ApiKind::OpenAiChat | ApiKind::OpenAiResponses))
        .filter(|p| match &p.key_source {
            KeySource::NotNeeded => true,
            KeySource::Env(_) => catalog.key(&p.name).is_some(),
        })
        .cloned()
        .collect()
}

/// Asks every provider worth asking, at once, each within `timeout`; writes the cache.
/// Returns the new listings and whether they differ from the cached ones. Providers that did
/// not answer have no listing (their models are not reachable now).
pub async fn run(
    services: &Services,
    config: &Config,
    catalog: &Catalog,
    timeout: Duration,
) -> (Listings, bool) {
    let old = Listings::load(&services.home);
    let Some(connector) = services.connector.as_ref() else {
        return (old, false);
    };
    let providers = to_ask(catalog, config);
    let asks = providers.iter().map(|p| {
        let key = catalog.key(&p.name);
        connector.list_models(p, key, timeout)
    });
    let answers = futures::future::join_all(asks).await;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut new = Listings::default();
    for (p, answer) in providers.iter().zip(answers) {
        match answer {
            Ok(models) => {
                new.providers.insert(
                    p.name.clone(),
                    ProviderListing {
                        base_url: p.base_url.clone(),
                        fetched_at: now,
                        models: crate::catalog::sanitize(&p.name, models),
                    },
                );
            }
            Err(e) => tracing::debug!(provider = %p.name, error = %e, "model listing failed"),
        }
    }
    let changed = !same_models(&old, &new);
    if changed && let Err(e) = new.save(&services.home) {
        tracing::warn!(error = %e, "could not write the model cache");
    }
    (new, changed)
}

/// Equal but for when they were fetched.
fn same_models(a: &Listings, b: &Listings) -> bool {
    a.providers.len() == b.providers.len()
        && a.providers.iter().all(|(name, l)| {
            b.providers
                .get(name)
                .is_some_and(|m| m.base_url == l.base_url && m.models == l.models)
        })
}
