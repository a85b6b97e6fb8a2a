//! The fake MCP server behind a small but real OAuth 2.1 authorization server, on one loopback
//! origin, as the MCP authorization spec lays it out:
//!
//! - `/mcp` answers 401 with `WWW-Authenticate: Bearer resource_metadata=…` unless the request
//!   carries a live access token;
//! - protected-resource metadata (RFC 9728) and authorization-server metadata (RFC 8414);
//! - dynamic client registration (RFC 7591) at `/register`;
//! - `/authorize` redirects to the registered `redirect_uri` with a code (the "user" consents at
//!   once: whoever GETs the URL plays the user);
//! - `/token` exchanges a code (checking the PKCE S256 verifier, the client and the redirect
//!   URI) or a refresh token (rotated on use).
//!
//! Tests turn the screws through [`OAuthMcp`]: expire the access tokens, revoke the refresh
//! tokens, and count what happened.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine as _;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

/// What the authorization server saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OAuthStats {
    pub registrations: usize,
    pub authorizations: usize,
    /// Codes exchanged for tokens.
    pub code_grants: usize,
    /// Refresh tokens exchanged for new tokens.
    pub refreshes: usize,
    /// Token requests refused (bad code, verifier, refresh token...).
    pub refused: usize,
    /// MCP requests refused for a missing or dead token.
    pub unauthorized: usize,
}

#[derive(Default)]
struct AuthState {
    base: String,
    clients: HashMap<String, Vec<String>>,
    codes: HashMap<String, Grant>,
    access: HashMap<String, bool>,
    refresh: HashMap<String, String>,
    stats: OAuthStats,
    next: u64,
    /// The `authorization_endpoint` the metadata names instead of `/authorize` (a hostile one).
    authorize_at: Option<String>,
}

struct Grant {
    client: String,
    redirect_uri: String,
    challenge: String,
}

impl AuthState {
    /// An unguessable token: random per process (the hasher's keys) and never repeated.
    fn token(&mut self, kind: &str) -> String {
        self.next += 1;
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(self.next);
        format!("{kind}-{:016x}{:04x}", h.finish(), self.next)
    }

    fn issue(&mut self, client: &str) -> Value {
        let access = self.token("at");
        let refresh = self.token("rt");
        self.access.insert(access.clone(), true);
        self.refresh.insert(refresh.clone(), client.to_owned());
        json!({
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": 3600,
            "refresh_token": refresh,
            "scope": "mcp",
        })
    }
}

type Shared = Arc<Mutex<AuthState>>;

/// The OAuth-protected server; stops when dropped.
pub struct OAuthMcp {
    state: Shared,
    _server: super::HttpServer,
}

impl OAuthMcp {
    pub fn stats(&self) -> OAuthStats {
        self.state.lock().unwrap().stats.clone()
    }

    /// Every access token issued so far stops working (as if its time ran out).
    pub fn expire_access_tokens(&self) {
        for live in self.state.lock().unwrap().access.values_mut() {
            *live = false;
        }
    }

    /// The metadata names `endpoint` as its `authorization_endpoint` from now on.
    pub fn authorize_at(&self, endpoint: &str) {
        self.state.lock().unwrap().authorize_at = Some(endpoint.to_owned());
    }

    /// Every refresh token issued so far is refused (`invalid_grant`), as after a revocation.
    pub fn revoke_refresh_tokens(&self) {
        self.state.lock().unwrap().refresh.clear();
    }
}

/// Starts the server on a loopback port; returns the MCP endpoint's URL
/// (`http://127.0.0.1:PORT/mcp`).
pub async fn start_http_oauth() -> (String, OAuthMcp) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let state: Shared = Arc::new(Mutex::new(AuthState {
        base: base.clone(),
        ..AuthState::default()
    }));
    let stop = CancellationToken::new();
    let (service, cancelled) = super::service(&stop);
    let mcp = Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(state.clone(), bearer));
    let router = Router::new()
        .route(
            "/.well-known/oauth-protected-resource",
            get(resource_metadata),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(resource_metadata),
        )
        .route(
            "/.well-known/oauth-authorization-server",
            get(server_metadata),
        )
        .route("/register", post(register))
        .route("/authorize", get(authorize))
        .route("/token", post(token))
        .with_state(state.clone())
        .merge(mcp);
    let shutdown = stop.clone();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(async move { shutdown.cancelled_owned().await })
            .await;
    });
    let server = super::HttpServer { stop, cancelled };
    (
        format!("{base}/mcp"),
        OAuthMcp {
            state,
            _server: server,
        },
    )
}

async fn bearer(State(state): State<Shared>, req: Request, next: Next) -> Response {
    let token = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    let challenge = {
        let mut st = state.lock().unwrap();
        let live = token
            .as_ref()
            .is_some_and(|t| st.access.get(t).copied().unwrap_or(false));
        if live {
            None
        } else {
            st.stats.unauthorized += 1;
            let error = if token.is_some() {
                "error=\"invalid_token\", "
            } else {
                ""
            };
            Some(format!(
                "Bearer {error}resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\", scope=\"mcp\"",
                st.base
            ))
        }
    };
    match challenge {
        None => next.run(req).await,
        Some(challenge) => {
            let mut r = (StatusCode::UNAUTHORIZED, "sign in first").into_response();
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_str(&challenge).unwrap(),
            );
            r
        }
    }
}

async fn resource_metadata(State(state): State<Shared>) -> Json<Value> {
    let base = state.lock().unwrap().base.clone();
    Json(json!({
        "resource": format!("{base}/mcp"),
        "authorization_servers": [base],
        "scopes_supported": ["mcp"],
        "bearer_methods_supported": ["header"],
    }))
}

async fn server_metadata(State(state): State<Shared>) -> Json<Value> {
    let (base, authorize_at) = {
        let st = state.lock().unwrap();
        (st.base.clone(), st.authorize_at.clone())
    };
    Json(json!({
        "issuer": base,
        "authorization_endpoint": authorize_at.unwrap_or_else(|| format!("{base}/authorize")),
        "token_endpoint": format!("{base}/token"),
        "registration_endpoint": format!("{base}/register"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "scopes_supported": ["mcp"],
    }))
}

async fn register(State(state): State<Shared>, body: Bytes) -> Response {
    let Ok(req) = serde_json::from_slice::<Value>(&body) else {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_client_metadata");
    };
    let uris: Vec<String> = req["redirect_uris"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|u| u.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if uris.is_empty() {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_redirect_uri");
    }
    let mut st = state.lock().unwrap();
    st.stats.registrations += 1;
    let id = st.token("client");
    st.clients.insert(id.clone(), uris.clone());
    let answer = json!({
        "client_id": id,
        "client_name": req["client_name"],
        "redirect_uris": uris,
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    (StatusCode::CREATED, Json(answer)).into_response()
}

fn params(raw: &[u8]) -> HashMap<String, String> {
    url::form_urlencoded::parse(raw).into_owned().collect()
}

async fn authorize(State(state): State<Shared>, req: Request) -> Response {
    let p = params(req.uri().query().unwrap_or("").as_bytes());
    let get = |k: &str| p.get(k).cloned().unwrap_or_default();
    let mut st = state.lock().unwrap();
    let registered = st
        .clients
        .get(&get("client_id"))
        .is_some_and(|uris| uris.contains(&get("redirect_uri")));
    // Without a known client and redirect URI there is nowhere safe to send an error.
    if !registered {
        return (StatusCode::BAD_REQUEST, "unknown client or redirect_uri").into_response();
    }
    let mut back = url::Url::parse(&get("redirect_uri")).unwrap();
    if get("response_type") != "code"
        || get("code_challenge_method") != "S256"
        || get("code_challenge").is_empty()
    {
        back.query_pairs_mut()
            .append_pair("error", "invalid_request")
            .append_pair("state", &get("state"));
    } else {
        st.stats.authorizations += 1;
        let code = st.token("code");
        st.codes.insert(
            code.clone(),
            Grant {
                client: get("client_id"),
                redirect_uri: get("redirect_uri"),
                challenge: get("code_challenge"),
            },
        );
        back.query_pairs_mut()
            .append_pair("code", &code)
            .append_pair("state", &get("state"));
    }
    (StatusCode::FOUND, [(header::LOCATION, back.to_string())]).into_response()
}

async fn token(State(state): State<Shared>, body: Bytes) -> Response {
    let p = params(&body);
    let get = |k: &str| p.get(k).cloned().unwrap_or_default();
    let mut st = state.lock().unwrap();
    let issued = match get("grant_type").as_str() {
        "authorization_code" => match st.codes.remove(&get("code")) {
            Some(grant)
                if grant.client == get("client_id")
                    && grant.redirect_uri == get("redirect_uri")
                    && s256(&get("code_verifier")) == grant.challenge =>
            {
                st.stats.code_grants += 1;
                Some(st.issue(&grant.client))
            }
            _ => None,
        },
        "refresh_token" => match st.refresh.remove(&get("refresh_token")) {
            Some(client) if client == get("client_id") => {
                st.stats.refreshes += 1;
                Some(st.issue(&client))
            }
            _ => None,
        },
        _ => None,
    };
    match issued {
        Some(tokens) => (
            StatusCode::OK,
            [(header::CACHE_CONTROL, "no-store")],
            Json(tokens),
        )
            .into_response(),
        None => {
            st.stats.refused += 1;
            oauth_error(StatusCode::BAD_REQUEST, "invalid_grant")
        }
    }
}

/// PKCE's S256: base64url(sha256(verifier)), no padding.
fn s256(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

fn oauth_error(status: StatusCode, error: &str) -> Response {
    (status, Json(json!({ "error": error }))).into_response()
}

/// The value of query parameter `name` of `url` (decoded), when it has one.
pub fn query_param(url: &str, name: &str) -> Option<String> {
    reqwest::Url::parse(url)
        .ok()?
        .query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// Plays the user who was sent to `url`: GETs it and follows the redirects (to the client's
/// loopback listener, here); the last page's status and text.
pub async fn visit(url: &str) -> (u16, String) {
    let response = reqwest::get(url).await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    /// The expected value was computed apart (Python's hashlib and base64.urlsafe_b64encode).
    #[test]
    fn s256_is_unpadded_base64url_of_sha256() {
        assert_eq!(
            super::s256("ferrite-pkce-verifier-0123456789-abcdefghijklmnopqrstuvwxyz"),
            "Flw9qGMWykBibMIoIG62ueUVQT9duQYd0YTKZn8KCTI"
        );
    }
}
