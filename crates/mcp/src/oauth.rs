//! OAuth for remote MCP servers that answer 401, as the MCP authorization spec describes it,
//! through rmcp's auth support (discovery of the protected-resource and authorization-server
//! metadata, dynamic client registration, PKCE, refresh): Ferrite adds where tokens live
//! ([`store`]), the loopback redirect ([`redirect`]) and the browser step, which goes through
//! the [`Browser`] the session was given (the editor's URL elicitation, or a terminal).
//!
//! A stored token is used from the first request and refreshed by rmcp when it expires; a
//! refresh the authorization server rejects makes the request go out without a token, and the
//! server's 401 leads back here to sign in again.

mod redirect;
pub mod store;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ferrite_core::elicit::{Page, Reply};
use ferrite_core::mcp::Browser;
use rmcp::transport::auth::{
    AuthClient, AuthorizationManager, AuthorizationRequest, AuthorizationSession,
};

use self::redirect::Redirect;
pub use self::store::TokenFile;

/// Where tokens live and how long a sign-in may take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthConfig {
    /// `FERRITE_HOME/mcp-auth`.
    pub dir: PathBuf,
    /// From showing the sign-in page to the browser coming back.
    pub sign_in_timeout: Duration,
}

impl OAuthConfig {
    /// How long the user has to sign in.
    pub const DEFAULT_SIGN_IN_TIMEOUT: Duration = Duration::from_secs(300);

    /// Tokens under `home/mcp-auth`.
    pub fn new(home: &Path) -> Self {
        Self {
            dir: home.join("mcp-auth"),
            sign_in_timeout: Self::DEFAULT_SIGN_IN_TIMEOUT,
        }
    }
}

/// Why a sign-in did not happen.
#[derive(Debug)]
pub enum SignInError {
    /// The server publishes no OAuth metadata: its 401 is about something else (a missing
    /// header), and the original failure stands.
    NotOAuth,
    /// Its metadata could not be fetched or read (the server is down, answers garbage): as
    /// good as none for a session, worth saying for `ferrite mcp login`.
    NoMetadata(String),
    /// Nobody can be sent to the page (the editor cannot open links).
    NoBrowser,
    /// The user declined or dismissed the page.
    Declined,
    /// The page was not finished in time.
    TimedOut,
    Failed(String),
}

impl std::fmt::Display for SignInError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotOAuth => write!(f, "the server does not publish OAuth metadata"),
            Self::NoMetadata(why) => write!(f, "its OAuth metadata could not be read: {why}"),
            Self::NoBrowser => write!(f, "there is no way to show the sign-in page here"),
            Self::Declined => write!(f, "the sign-in was declined"),
            Self::TimedOut => write!(f, "the sign-in was not finished in time"),
            Self::Failed(why) => f.write_str(why),
        }
    }
}

/// rmcp's HTTP client that adds the stored token of the server at `url` (refreshing it when it
/// expired) and reports the server's 401 challenge when there is none or it is refused.
pub(crate) async fn client(
    config: &OAuthConfig,
    url: &str,
) -> Result<AuthClient<reqwest::Client>, String> {
    let manager = stored_manager(config, url).await?;
    Ok(AuthClient::new(reqwest::Client::default(), manager))
}

async fn stored_manager(config: &OAuthConfig, url: &str) -> Result<AuthorizationManager, String> {
    let mut manager = AuthorizationManager::new(url)
        .await
        .map_err(|e| format!("invalid server URL for OAuth: {e}"))?;
    manager.set_credential_store(TokenFile::new(&config.dir, url));
    // With a stored token this reads the server's metadata (for the refresh endpoint); a server
    // that cannot be reached now fails the connection right after, with a better message.
    if let Err(e) = manager.initialize_from_store().await {
        tracing::debug!(%url, error = %e, "stored MCP token not usable");
    }
    Ok(manager)
}

/// Signs in to the server at `url` (named `server` to the user): discovers its authorization
/// server (from `challenge`, the `WWW-Authenticate` of its 401, when there is one), registers
/// Ferrite where the server offers it, sends the user to the authorization page through
/// `browser`, receives the code on the loopback redirect and stores the token.
pub async fn sign_in(
    config: &OAuthConfig,
    url: &str,
    server: &str,
    challenge: Option<&str>,
    browser: Option<Arc<dyn Browser>>,
) -> Result<(), SignInError> {
    let failed =
        |what: &str, e: &dyn std::fmt::Display| SignInError::Failed(format!("{what}: {e}"));
    let mut manager = AuthorizationManager::new(url)
        .await
        .map_err(|e| failed("invalid server URL", &e))?;
    manager.set_credential_store(TokenFile::new(&config.dir, url));
    let resolution = match manager.resolve_metadata_from_challenge(challenge).await {
        Ok(resolution) if resolution.source.is_discovered() => resolution,
        Ok(_) => return Err(SignInError::NotOAuth),
        Err(e) => return Err(SignInError::NoMetadata(with_sources(&e))),
    };
    manager.set_metadata(resolution.metadata);
    let Some(browser) = browser.filter(|b| b.can_open()) else {
        return Err(SignInError::NoBrowser);
    };
    let redirect = Redirect::bind()
        .await
        .map_err(|e| failed("cannot listen for the sign-in redirect on 127.0.0.1", &e))?;
    let mut request = AuthorizationRequest::new(redirect.uri()).with_client_name("Ferrite");
    if let Some(challenge) = challenge {
        request = request.with_challenge(challenge);
    }
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| failed("preparing the sign-in failed", &e))?;
    let state = sign_in_state(&session.auth_url)?;
    // Listening before the page is shown: a browser that comes back at once finds us.
    let waiting = tokio::spawn(redirect.wait(server.to_owned(), state));
    let page = Page {
        id: page_id(),
        message: format!(
            "Sign in to the MCP server `{server}` ({url}) so Ferrite can use its tools."
        ),
        url: session.auth_url.clone(),
    };
    finish(config, &session, &*browser, page, waiting).await
}

async fn finish(
    config: &OAuthConfig,
    session: &AuthorizationSession,
    browser: &dyn Browser,
    page: Page,
    waiting: tokio::task::JoinHandle<Result<String, String>>,
) -> Result<(), SignInError> {
    let _abort = AbortOnDrop(waiting.abort_handle());
    let id = page.id.clone();
    let shown = tokio::time::timeout(config.sign_in_timeout, browser.open(page)).await;
    match shown {
        // From here the page is open somewhere: the client hears when its work is over.
        Ok(Ok(Reply::Answered(_))) => {}
        Ok(Ok(Reply::Declined | Reply::Cancelled)) => return Err(SignInError::Declined),
        Ok(Err(why)) => {
            return Err(SignInError::Failed(format!(
                "the sign-in page could not be shown: {why}"
            )));
        }
        Err(_) => return Err(SignInError::TimedOut),
    }
    let outcome = exchange(config, session, waiting).await;
    browser.done(&id);
    outcome
}

/// Waits for the browser to come back, then trades the code for the token.
async fn exchange(
    config: &OAuthConfig,
    session: &AuthorizationSession,
    waiting: tokio::task::JoinHandle<Result<String, String>>,
) -> Result<(), SignInError> {
    let callback = match tokio::time::timeout(config.sign_in_timeout, waiting).await {
        Ok(Ok(Ok(url))) => url,
        Ok(Ok(Err(why))) => return Err(SignInError::Failed(why)),
        Ok(Err(e)) => return Err(SignInError::Failed(e.to_string())),
        Err(_) => return Err(SignInError::TimedOut),
    };
    // Checks `state`, exchanges the code with the PKCE verifier, and saves the token.
    session
        .handle_callback_url(&callback)
        .await
        .map_err(|e| SignInError::Failed(format!("the token exchange failed: {e}")))?;
    tracing::info!("MCP sign-in complete");
    Ok(())
}

/// The `state` of a sign-in page the user may be sent to: an `https` address, or `http` to this
/// machine (a local authorization server). Any other (`file:`, `javascript:`, `http` to another
/// host) is refused and never shown, printed or sent: the page the user opens and trusts is
/// the authorization server's own.
fn sign_in_state(auth_url: &str) -> Result<String, SignInError> {
    let refused = |why: &str| {
        SignInError::Failed(format!(
            "the authorization server's sign-in page {why}; only https pages (or http on this              machine) are opened"
        ))
    };
    let url = url::Url::parse(auth_url).map_err(|_| refused("is not a valid address"))?;
    let loopback = match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    match url.scheme() {
        "https" if url.host().is_some() => {}
        "http" if loopback => {}
        "http" => return Err(refused("is plain http to another machine")),
        _ => return Err(refused("is not an https address")),
    }
    url.query_pairs()
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.into_owned())
        .filter(|s| !s.is_empty())
        .ok_or_else(|| refused("carries no `state`"))
}

/// `e` and what caused it ("discovery failed for …: connection refused").
fn with_sources(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// A fresh id for a sign-in page, unique in the process.
fn page_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("mcp-sign-in-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Whether a sign-in is stored for the server at `url`.
pub(crate) fn has_token(config: &OAuthConfig, url: &str) -> bool {
    TokenFile::new(&config.dir, url).read().is_some()
}

/// Whether `headers` already carry credentials: then they are what the user chose, and OAuth
/// stays out of the way.
pub(crate) fn has_authorization(headers: &std::collections::BTreeMap<String, String>) -> bool {
    headers
        .keys()
        .any(|k| k.eq_ignore_ascii_case("authorization"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_or_local_http_sign_in_pages_are_opened() {
        for ok in [
            "https://auth.example.com/authorize?state=s1&x=1",
            "http://127.0.0.1:8080/authorize?state=s1",
            "http://localhost/authorize?state=s1",
            "http://[::1]:9/authorize?state=s1",
        ] {
            assert_eq!(sign_in_state(ok).ok().as_deref(), Some("s1"), "{ok}");
        }
        for bad in [
            "javascript:alert(1)//?state=s1",
            "file:///etc/passwd?state=s1",
            "http://auth.example.com/authorize?state=s1",
            "http://127.0.0.1.evil.example/authorize?state=s1",
            "data:text/html,hi?state=s1",
            "https://auth.example.com/authorize",
        ] {
            let err = sign_in_state(bad).unwrap_err().to_string();
            assert!(!err.contains(bad), "the address is never repeated: {err}");
        }
    }
}
