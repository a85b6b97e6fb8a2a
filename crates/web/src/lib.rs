//! `web_fetch`'s HTTP side: a GET with redirects (at most [`MAX_REDIRECTS`]), a timeout and a size
//! cap, HTML turned into Markdown, text and JSON as they are, anything else refused.
//!
//! Server-side request forgery is the risk: a prompt-injected model (or a page it read, or a
//! redirect, or a DNS answer) pointing the agent at `127.0.0.1:6379`, the router, or the cloud
//! metadata address. With [`Reach::PublicOnly`] every connection goes through a resolver that
//! drops non-public addresses (so a name that resolves to `10.0.0.5` is never connected to), IP
//! literals are checked before the request and on every redirect, and proxies from the
//! environment are ignored (a proxy would resolve names where we cannot check them).

mod address;
mod charset;
mod html;

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use ferrite_core::web::{FetchedPage, Reach, WebFetch};
use futures::StreamExt;
use futures::future::BoxFuture;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::{Url, redirect};

pub use address::is_public;
pub use html::to_markdown;

/// Redirects followed before giving up.
pub const MAX_REDIRECTS: usize = 5;
/// Bytes of a body read at most; the rest is dropped and the result says so.
pub const MAX_BODY_BYTES: usize = 5 * 1024 * 1024;
const TIMEOUT: Duration = Duration::from_secs(30);

/// Decides whether an address counts as public. Production uses [`is_public`]; tests pass one
/// that also accepts loopback so a local server can stand in for the internet.
pub type PublicCheck = fn(IpAddr) -> bool;

pub struct HttpFetcher {
    is_public: PublicCheck,
    /// Built on first use: most sessions never fetch, and building a TLS client costs startup.
    public_only: OnceLock<Result<reqwest::Client, String>>,
    anywhere: OnceLock<Result<reqwest::Client, String>>,
}

impl Default for HttpFetcher {
    fn default() -> Self {
        Self::with_public_check(is_public)
    }
}

impl HttpFetcher {
    pub fn with_public_check(is_public: PublicCheck) -> Self {
        Self {
            is_public,
            public_only: OnceLock::new(),
            anywhere: OnceLock::new(),
        }
    }

    fn client(&self, reach: Reach) -> Result<&reqwest::Client, String> {
        let cell = match reach {
            Reach::PublicOnly => &self.public_only,
            Reach::Anywhere => &self.anywhere,
        };
        cell.get_or_init(|| build_client(reach, self.is_public))
            .as_ref()
            .map_err(Clone::clone)
    }

    async fn get(&self, url: &str, reach: Reach) -> Result<FetchedPage, String> {
        let parsed = Url::parse(url).map_err(|e| format!("`{url}` is not a valid URL: {e}"))?;
        check_url(&parsed, reach, self.is_public)?;
        let client = self.client(reach)?;
        let resp = client
            .get(parsed)
            .header(
                reqwest::header::ACCEPT,
                "text/html, text/markdown, text/plain, application/json;q=0.9, */*;q=0.1",
            )
            .send()
            .await
            .map_err(|e| describe(&e, url))?;
        let final_url = resp.url().to_string();
        let status = resp.status();
        if !status.is_success() {
            return Err(format!("{final_url} answered HTTP {status}"));
        }
        let declared_type = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("text/plain")
            .to_owned();
        let content_type = declared_type
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        let header_charset = charset::header_charset(&declared_type);
        let kind = Kind::of(&content_type).ok_or_else(|| {
            format!(
                "{final_url} is `{content_type}`; web_fetch reads HTML, text and JSON pages only"
            )
        })?;
        let (body, truncated) = read_capped(resp).await?;
        let has_content = body.iter().any(|b| !b.is_ascii_whitespace());
        let text = match kind {
            Kind::Html => html::convert(body, header_charset).await?,
            Kind::Text => charset::decode_text(&body, header_charset.as_deref()),
        };
        // Nothing readable from a page that had content is a failure the model (and the card)
        // must see, not a successful fetch of 0 bytes (issue 35).
        if has_content && text.trim().is_empty() {
            return Err(format!(
                "{final_url} ({content_type}) was fetched, but no text could be read from it \
                 (its content may be drawn by JavaScript, or be only scripts, styles and \
                 navigation)"
            ));
        }
        Ok(FetchedPage {
            final_url,
            content_type,
            text,
            truncated,
        })
    }
}

impl WebFetch for HttpFetcher {
    fn fetch<'a>(
        &'a self,
        url: &'a str,
        reach: Reach,
    ) -> BoxFuture<'a, Result<FetchedPage, String>> {
        Box::pin(self.get(url, reach))
    }
}

enum Kind {
    Html,
    Text,
}

impl Kind {
    fn of(content_type: &str) -> Option<Kind> {
        match content_type {
            "text/html" | "application/xhtml+xml" => Some(Kind::Html),
            t if t.starts_with("text/") => Some(Kind::Text),
            "application/json"
            | "application/xml"
            | "application/javascript"
            | "application/x-yaml"
            | "application/yaml"
            | "application/toml" => Some(Kind::Text),
            t if t.ends_with("+json") || t.ends_with("+xml") => Some(Kind::Text),
            _ => None,
        }
    }
}

fn build_client(reach: Reach, is_public: PublicCheck) -> Result<reqwest::Client, String> {
    let builder = reqwest::Client::builder()
        .timeout(TIMEOUT)
        .connect_timeout(Duration::from_secs(10))
        .no_proxy()
        .user_agent(concat!(
            "Ferrite/",
            env!("CARGO_PKG_VERSION"),
            " (web_fetch)"
        ))
        .redirect(redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= MAX_REDIRECTS {
                return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
            }
            match check_url(attempt.url(), reach, is_public) {
                Ok(()) => attempt.follow(),
                Err(why) => attempt.error(why),
            }
        }));
    let builder = match reach {
        Reach::PublicOnly => builder.dns_resolver(Arc::new(PublicResolver { is_public })),
        Reach::Anywhere => builder,
    };
    builder
        .build()
        .map_err(|e| format!("cannot start the HTTP client: {e}"))
}

/// Only http(s), and with [`Reach::PublicOnly`] no literal non-public address (names are checked
/// by the resolver once resolved).
fn check_url(url: &Url, reach: Reach, is_public: PublicCheck) -> Result<(), String> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "refused: `{}` URLs are not fetched (only http and https)",
            url.scheme()
        ));
    }
    let ip = match url.host() {
        Some(url::Host::Ipv4(v4)) => Some(IpAddr::V4(v4)),
        Some(url::Host::Ipv6(v6)) => Some(IpAddr::V6(v6)),
        Some(url::Host::Domain(_)) => None,
        None => return Err(format!("refused: `{url}` has no host")),
    };
    if reach == Reach::PublicOnly
        && let Some(ip) = ip
        && !is_public(ip)
    {
        return Err(private_refusal(url.as_ref()));
    }
    Ok(())
}

fn private_refusal(what: &str) -> String {
    format!(
        "refused: {what} is a loopback, private, link-local or otherwise non-public address \
         (set `web_fetch.allow_private = true` in the user config to allow it)"
    )
}

/// Resolves names and keeps only public addresses: the check happens on what will actually be
/// connected to, so DNS answers (rebinding included) cannot slip a private address through.
struct PublicResolver {
    is_public: PublicCheck,
}

impl Resolve for PublicResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        let is_public = self.is_public;
        Box::pin(async move {
            let all: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let public: Vec<SocketAddr> = all.into_iter().filter(|a| is_public(a.ip())).collect();
            if public.is_empty() {
                let err: Box<dyn std::error::Error + Send + Sync> =
                    private_refusal(&format!("`{host}` resolves only to an address that")).into();
                return Err(err);
            }
            Ok(Box::new(public.into_iter()) as Addrs)
        })
    }
}

/// The body up to [`MAX_BODY_BYTES`], and whether there was more.
async fn read_capped(resp: reqwest::Response) -> Result<(Vec<u8>, bool), String> {
    let mut body = Vec::new();
    let mut stream = resp.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| format!("the download broke off: {e}"))?;
        let room = MAX_BODY_BYTES - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// A transport error as a sentence, with the refusal reason when our own checks caused it.
fn describe(e: &reqwest::Error, url: &str) -> String {
    let mut why = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        why = s.to_string();
        source = s.source();
    }
    if why.starts_with("refused:") {
        why
    } else if e.is_timeout() {
        format!("{url} did not answer within {} s", TIMEOUT.as_secs())
    } else {
        format!("could not fetch {url}: {why}")
    }
}
