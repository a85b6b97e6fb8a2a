//! Reading a web page for the model (`web_fetch`). Core knows no HTTP: the fetch itself is a
//! [`WebFetch`] implementation wired in by the binary (`ferrite-web`).

use futures::future::BoxFuture;

/// A page as the model gets it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedPage {
    /// Where the content came from after redirects.
    pub final_url: String,
    /// The media type the server declared (`text/html`, `application/json`, …).
    pub content_type: String,
    /// Markdown for HTML, the text as is for text and JSON.
    pub text: String,
    /// Whether the body was longer than the size cap and cut.
    pub truncated: bool,
}

/// Which addresses a fetch may reach (`web_fetch.allow_private`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Public addresses only: never loopback, link-local, private ranges or cloud metadata,
    /// checked on the resolved address of every request, redirects included.
    PublicOnly,
    Anywhere,
}

pub trait WebFetch: Send + Sync {
    /// GETs `url`. The error is a sentence for the model ("refused: … resolves to a private
    /// address", "HTTP 404", "images are not supported").
    fn fetch<'a>(
        &'a self,
        url: &'a str,
        reach: Reach,
    ) -> BoxFuture<'a, Result<FetchedPage, String>>;
}
