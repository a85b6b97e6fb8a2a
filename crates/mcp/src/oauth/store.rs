//! Stored OAuth tokens: one file per server under `FERRITE_HOME/mcp-auth/`, named by a hash of
//! the server's URL (a URL is no file name), holding the URL itself so a hash collision or a
//! renamed file can never hand one server's token to another. Written like every file of
//! Ferrite's own (`ferrite_core::private_fs`): mode 0600 from creation, replaced atomically.

use std::path::{Path, PathBuf};

use rmcp::transport::auth::{
    AuthError, CredentialRefreshGuard, CredentialStore, StoredCredentials,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The token file of one server.
#[derive(Debug, Clone)]
pub struct TokenFile {
    path: PathBuf,
    url: String,
}

#[derive(Serialize, Deserialize)]
struct OnDisk {
    url: String,
    credentials: StoredCredentials,
}

impl TokenFile {
    /// The file for the server at `url` in `dir` (`FERRITE_HOME/mcp-auth`).
    pub fn new(dir: &Path, url: &str) -> Self {
        let digest = Sha256::digest(url.as_bytes());
        let name: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
        Self {
            path: dir.join(format!("{name}.json")),
            url: url.to_owned(),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What is stored for this server; `None` when nothing is (or what is there is unreadable,
    /// or belongs to another URL: signing in again replaces it).
    pub fn read(&self) -> Option<StoredCredentials> {
        let bytes = match std::fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::warn!(file = %self.path.display(), error = %e, "cannot read an MCP token file");
                return None;
            }
        };
        match serde_json::from_slice::<OnDisk>(&bytes) {
            Ok(stored) if stored.url == self.url => Some(stored.credentials),
            Ok(_) => None,
            // Never the error's text: serde quotes what it could not parse, which is a token.
            Err(_) => {
                tracing::warn!(file = %self.path.display(), "ignoring an unreadable MCP token file");
                None
            }
        }
    }

    pub fn write(&self, credentials: StoredCredentials) -> std::io::Result<()> {
        let on_disk = OnDisk {
            url: self.url.clone(),
            credentials,
        };
        let bytes = serde_json::to_vec_pretty(&on_disk).map_err(std::io::Error::other)?;
        ferrite_core::private_fs::write_atomic(&self.path, &bytes)
    }

    /// Removes the file; `false` when there was none.
    pub fn remove(&self) -> std::io::Result<bool> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }
}

fn store_error(e: impl std::fmt::Display) -> AuthError {
    AuthError::CredentialStoreError(e.to_string())
}

#[async_trait::async_trait]
impl CredentialStore for TokenFile {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let file = self.clone();
        tokio::task::spawn_blocking(move || file.read())
            .await
            .map_err(store_error)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let file = self.clone();
        tokio::task::spawn_blocking(move || file.write(credentials))
            .await
            .map_err(store_error)?
            .map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        let file = self.clone();
        tokio::task::spawn_blocking(move || file.remove())
            .await
            .map_err(store_error)?
            .map(|_| ())
            .map_err(store_error)
    }

    /// One refresh at a time per server, across sessions and processes (an OS lock on a file
    /// beside the token's): authorization servers rotate refresh tokens, so a second refresh
    /// with the same one would be refused and send the user back to the browser. The one that
    /// waited loads the token the first stored.
    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let path = self.path.with_extension("lock");
        let locked = tokio::task::spawn_blocking(move || -> std::io::Result<std::fs::File> {
            if let Some(dir) = path.parent() {
                ferrite_core::private_fs::create_dir_all(dir)?;
            }
            let file = ferrite_core::private_fs::file_options()
                .create(true)
                .write(true)
                .truncate(false)
                .open(&path)?;
            file.lock()?;
            Ok(file)
        });
        let file = locked.await.map_err(store_error)?.map_err(store_error)?;
        // Dropping the file (with the guard) releases the lock.
        Ok(Some(CredentialRefreshGuard::new(file)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credentials(client: &str) -> StoredCredentials {
        StoredCredentials::new(client.to_owned(), None, vec!["mcp".into()], Some(1))
    }

    #[test]
    fn one_private_file_per_url() {
        let dir = tempfile::tempdir().unwrap();
        let a = TokenFile::new(dir.path(), "https://a.example/mcp");
        let b = TokenFile::new(dir.path(), "https://b.example/mcp");
        assert_ne!(a.path(), b.path());
        assert!(a.read().is_none());
        a.write(credentials("client-a")).unwrap();
        assert_eq!(a.read().unwrap().client_id, "client-a");
        assert!(b.read().is_none());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(a.path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(a.remove().unwrap());
        assert!(!a.remove().unwrap());
    }

    #[tokio::test]
    async fn refreshes_of_one_server_take_turns() {
        let dir = tempfile::tempdir().unwrap();
        let a = TokenFile::new(dir.path(), "https://a.example/mcp");
        let first = a.acquire_refresh_guard().await.unwrap();
        let waiting = {
            let a = a.clone();
            tokio::spawn(async move { a.acquire_refresh_guard().await.map(|_| ()) })
        };
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        assert!(!waiting.is_finished(), "the second waits for the first");
        drop(first);
        tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        // Another server's refresh does not wait.
        let b = TokenFile::new(dir.path(), "https://b.example/mcp");
        let _a = a.acquire_refresh_guard().await.unwrap();
        let _b = b.acquire_refresh_guard().await.unwrap();
    }

    #[test]
    fn a_file_of_another_url_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let a = TokenFile::new(dir.path(), "https://a.example/mcp");
        a.write(credentials("client-a")).unwrap();
        let impostor = TokenFile {
            path: a.path().to_owned(),
            url: "https://evil.example/mcp".into(),
        };
        assert!(impostor.read().is_none());
    }
}
