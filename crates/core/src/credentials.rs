//! `FERRITE_HOME/credentials.json`: API keys stored by `ferrite login` or ACP `authenticate`.
//! Written atomically (temp file + rename) with mode 0600 from the moment it exists.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credentials {
    #[serde(default)]
    pub providers: BTreeMap<String, StoredKey>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredKey {
    pub api_key: String,
}

#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not valid credentials JSON: {source}")]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

pub fn credentials_path(home: &Path) -> PathBuf {
    home.join("credentials.json")
}

impl Credentials {
    pub fn load(home: &Path) -> Result<Self, CredentialsError> {
        let path = credentials_path(home);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|source| CredentialsError::Parse { path, source }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(source) => Err(CredentialsError::Read { path, source }),
        }
    }

    pub fn key(&self, provider: &str) -> Option<&str> {
        self.providers
            .get(provider)
            .map(|k| k.api_key.as_str())
            .filter(|k| !k.is_empty())
    }

    pub fn save(&self, home: &Path) -> Result<(), CredentialsError> {
        let path = credentials_path(home);
        let err = |source| CredentialsError::Write {
            path: path.clone(),
            source,
        };
        crate::private_fs::create_dir_all(home).map_err(err)?;
        let tmp = home.join(format!(".credentials.json.{}.tmp", std::process::id()));
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        let mut file = opts.open(&tmp).map_err(err)?;
        let body = serde_json::to_vec_pretty(self).map_err(|e| err(std::io::Error::other(e)))?;
        file.write_all(&body).map_err(err)?;
        file.sync_all().map_err(err)?;
        drop(file);
        std::fs::rename(&tmp, &path).map_err(err)?;
        Ok(())
    }

    /// Stores `key` for `provider` and saves.
    pub fn store(home: &Path, provider: &str, key: &str) -> Result<(), CredentialsError> {
        let mut creds = Self::load(home)?;
        creds.providers.insert(
            provider.to_owned(),
            StoredKey {
                api_key: key.to_owned(),
            },
        );
        creds.save(home)
    }

    /// Removes `provider` (or every provider when `None`) and saves. Returns what was removed.
    pub fn remove(home: &Path, provider: Option<&str>) -> Result<Vec<String>, CredentialsError> {
        let mut creds = Self::load(home)?;
        let removed: Vec<String> = match provider {
            Some(p) => creds
                .providers
                .remove(p)
                .map(|_| vec![p.to_owned()])
                .unwrap_or_default(),
            None => std::mem::take(&mut creds.providers).into_keys().collect(),
        };
        if !removed.is_empty() {
            creds.save(home)?;
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_load_remove_with_private_mode() {
        let home = tempfile::tempdir().unwrap();
        Credentials::store(home.path(), "anthropic", "sk-1").unwrap();
        Credentials::store(home.path(), "openai", "sk-2").unwrap();
        let c = Credentials::load(home.path()).unwrap();
        assert_eq!(c.key("anthropic"), Some("sk-1"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(credentials_path(home.path()))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert_eq!(
            Credentials::remove(home.path(), Some("openai")).unwrap(),
            vec!["openai"]
        );
        assert_eq!(Credentials::load(home.path()).unwrap().key("openai"), None);
        assert_eq!(
            Credentials::remove(home.path(), None).unwrap(),
            vec!["anthropic"]
        );
    }
}
