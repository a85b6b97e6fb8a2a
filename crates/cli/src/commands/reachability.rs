//! Whether a provider answers and takes its key, by a cheap, read-only authenticated request
//! (its model listing): for `ferrite doctor`'s providers and default model, and for the key
//! `ferrite login` is given. The cause of a failure is said in words (connection refused, DNS,
//! TLS, a rejected key), with the full error beside it.

use std::io::Write;

use ferrite_core::catalog::{Catalog, DefaultModel, KeySource, Provider};
use ferrite_core::config::Config;
use ferrite_core::env::Env;
use ferrite_core::model::{ModelConnector, ModelError, ModelErrorKind};

/// How long one provider may take to answer the listing request.
const CHECK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(4);

/// What came of contacting a provider.
pub enum Contact {
    /// It answered and took the key (or needs none); how many models it listed.
    Accepted(usize),
    /// It answered, but the listing failed for another reason than the key: the key may be fine.
    Unchecked(ModelError),
    /// It refused the key (HTTP 401/403).
    Rejected(ModelError),
    /// It could not be reached.
    Unreachable(ModelError),
}

impl Contact {
    /// What stops the provider from being used, in words; `None` when nothing does.
    pub fn problem(&self) -> Option<String> {
        match self {
            Contact::Rejected(e) | Contact::Unreachable(e) => Some(cause_in_words(e)),
            Contact::Accepted(_) | Contact::Unchecked(_) => None,
        }
    }
}

/// Lists `provider`'s models with `key`.
pub async fn contact(
    connector: &dyn ModelConnector,
    provider: &Provider,
    key: Option<&str>,
) -> Contact {
    match connector.list_models(provider, key, CHECK_TIMEOUT).await {
        Ok(models) => Contact::Accepted(models.len()),
        Err(e) => match e.kind {
            ModelErrorKind::Auth => Contact::Rejected(e),
            ModelErrorKind::Connection | ModelErrorKind::IdleTimeout => Contact::Unreachable(e),
            _ => Contact::Unchecked(e),
        },
    }
}

/// The cause of a failed contact as a person would name it.
pub fn cause_in_words(e: &ModelError) -> String {
    let text = e.message.to_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| text.contains(w));
    let cause = match e.kind {
        ModelErrorKind::Auth if has(&["http 403"]) => "the key was rejected (HTTP 403)",
        ModelErrorKind::Auth => "the key was rejected (HTTP 401)",
        ModelErrorKind::IdleTimeout => "no answer in time",
        _ if has(&["connection refused"]) => "connection refused (nothing listens there)",
        _ if has(&["dns", "lookup address", "name or service", "no such host"]) => {
            "DNS: the host name does not resolve"
        }
        _ if has(&["certificate", "tls", "ssl", "handshake"]) => {
            "TLS: the secure connection failed (certificate or protocol)"
        }
        _ if has(&["timed out", "timeout"]) => "timed out",
        _ if has(&["connection reset", "broken pipe"]) => "the connection was reset",
        _ => "cannot connect",
    };
    cause.to_owned()
}

/// Contacts every provider that can be called (a key, or none needed), all at once.
fn check_all(catalog: &Catalog, env: &Env) -> anyhow::Result<Vec<Option<Contact>>> {
    let rt = super::runtime()?;
    let connector = super::connector(env);
    let checks = catalog.providers.iter().map(|p| {
        let connector = connector.clone();
        async move {
            let key = catalog.key(&p.name);
            match (&p.key_source, key, connector) {
                (KeySource::Env(_), None, _) | (_, _, None) => None,
                (_, _, Some(c)) => Some(contact(c.as_ref(), p, key).await),
            }
        }
    });
    Ok(rt.block_on(futures::future::join_all(checks)))
}

/// One provider's line of `ferrite doctor`. `implicit`: a built-in provider that needs no key
/// and that the user never named (Ollama on its default port): not running is no news.
fn describe(p: &Provider, has_key: bool, implicit: bool, contact: Option<&Contact>) -> String {
    let key_note = match &p.key_source {
        KeySource::NotNeeded => "no key needed",
        KeySource::Env(vars) if !has_key => {
            return format!(
                "no key, not set up (set {} or run `ferrite login {}`)",
                vars.join(" or "),
                p.name
            );
        }
        KeySource::Env(_) => "key found",
    };
    let accepted = if has_key { ", key accepted" } else { "" };
    match contact {
        None => format!("{key_note}; not contacted (no HTTP client)"),
        Some(Contact::Accepted(n)) => format!("{key_note}; reachable{accepted}, {n} models listed"),
        Some(Contact::Rejected(e)) => format!("{key_note}; reachable, KEY REJECTED: {e}"),
        Some(Contact::Unreachable(_)) if implicit => format!("{key_note}; not running here"),
        Some(Contact::Unreachable(e)) => format!("{key_note}; UNREACHABLE: {e}"),
        Some(Contact::Unchecked(e)) => format!("{key_note}; reachable, but listing failed: {e}"),
    }
}

/// `ferrite doctor`'s providers and default model. Returns the problems found: a default
/// model that cannot be used, for want of a key or because its provider is unreachable or
/// rejects the key. Providers the user never set up are listed, never counted.
pub fn write_providers_and_default(
    out: &mut impl Write,
    catalog: &Catalog,
    config: &Config,
    env: &Env,
) -> anyhow::Result<usize> {
    writeln!(out, "providers:")?;
    let contacts = check_all(catalog, env)?;
    let default = catalog.default_model(config, env);
    let default_provider = match &default {
        DefaultModel::Chosen(m) => ferrite_core::catalog::split_model_id(m).map_or("", |(p, _)| p),
        DefaultModel::NoneConfigured => "",
    };
    for (p, contact) in catalog.providers.iter().zip(&contacts) {
        let implicit = matches!(p.key_source, KeySource::NotNeeded)
            && !config.providers.contains_key(&p.name)
            && p.name != default_provider;
        let line = describe(
            p,
            catalog.key(&p.name).is_some(),
            implicit,
            contact.as_ref(),
        );
        let (name, api, url) = (&p.name, p.api.id(), &p.base_url);
        writeln!(out, "  {name:<12} {api:<17} {url}  [{line}]")?;
    }
    let model = match default.clone() {
        DefaultModel::Chosen(m) => m,
        DefaultModel::NoneConfigured => {
            let why = ferrite_core::catalog::NO_PROVIDER_MESSAGE;
            writeln!(out, "default model: none — {why}")?;
            return Ok(1);
        }
    };
    if let Some(why) = catalog.unusable_reason(&model) {
        writeln!(out, "default model: {model} — NOT USABLE: {why}")?;
        return Ok(1);
    }
    let problem = (catalog.providers.iter().zip(&contacts))
        .find(|(p, _)| p.name == default_provider)
        .and_then(|(p, c)| Some((p, c.as_ref()?.problem()?)));
    match problem {
        None => writeln!(out, "default model: {model}")?,
        Some((p, cause)) => {
            writeln!(
                out,
                "default model: {model} — NOT USABLE: {} at {}: {cause} (see its line above)",
                p.name, p.base_url
            )?;
            return Ok(1);
        }
    }
    Ok(0)
}
