//! What a front end (the ACP server) asks the core instead of reading files itself: stored API
//! keys, and whether a model is usable.

use super::Services;
use crate::catalog::{AuthNeeded, DefaultModel, KeySource};
use crate::config::ConfigError;
use crate::credentials::{Credentials, CredentialsError};

/// Why an API key was not stored.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("provider `{0}` takes no key")]
    TakesNoKey(String),
    #[error("unknown provider `{provider}`; providers that take a key: {known}")]
    UnknownProvider { provider: String, known: String },
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Credentials(#[from] CredentialsError),
}

impl Services {
    /// Stores `key` for `provider` (`credentials.json`, 0600), if the provider takes a key.
    pub fn store_key(&self, provider: &str, key: &str) -> Result<(), KeyError> {
        let (_, catalog) = self.context(None)?;
        match catalog.provider(provider).map(|p| &p.key_source) {
            Some(KeySource::Env(_)) => {}
            Some(KeySource::NotNeeded) => return Err(KeyError::TakesNoKey(provider.to_owned())),
            None => {
                let known: Vec<String> = catalog
                    .keyed_providers()
                    .iter()
                    .map(|p| p.name.clone())
                    .collect();
                return Err(KeyError::UnknownProvider {
                    provider: provider.to_owned(),
                    known: known.join(", "),
                });
            }
        }
        Credentials::store(&self.home, provider, key)?;
        Ok(())
    }

    /// Removes the stored key of `provider`, or every stored key. Returns what was removed.
    pub fn forget_keys(&self, provider: Option<&str>) -> Result<Vec<String>, CredentialsError> {
        Credentials::remove(&self.home, provider)
    }

    /// What the user must set up before a session can open (environment, config and
    /// `credentials.json` read afresh), or `None` when the default model is usable.
    pub fn auth_needed(&self) -> Result<Option<AuthNeeded>, ConfigError> {
        let (config, catalog) = self.context(None)?;
        Ok(match catalog.default_model(&config, &self.env) {
            DefaultModel::Chosen(model) => catalog.auth_needed_for(&model),
            DefaultModel::NoneConfigured => Some(catalog.nothing_configured()),
        })
    }
}
