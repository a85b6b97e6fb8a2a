//! The loopback redirect of a sign-in, as command-line OAuth clients do it (RFC 8252 §7.3): a
//! listener on 127.0.0.1 at a port the system picks, to which the authorization server sends
//! the browser back with the code. It reads one request line per connection and answers a
//! small page; nothing else of HTTP is needed for a browser's GET.
//!
//! Any local process can reach the listener, so only a callback that carries the `state` of
//! this sign-in counts (a code, or the authorization server's error): any other is answered
//! with an error page and the wait goes on.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How long one connection may take to send its request head.
const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// A redirect's request head is a few hundred bytes; more is not a browser coming back.
const MAX_HEAD: usize = 16 * 1024;
const PATH: &str = "/callback";

pub(crate) struct Redirect {
    listener: TcpListener,
    uri: String,
}

impl Redirect {
    pub(crate) async fn bind() -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let port = listener.local_addr()?.port();
        Ok(Self {
            listener,
            uri: format!("http://127.0.0.1:{port}{PATH}"),
        })
    }

    /// The `redirect_uri` to register and send.
    pub(crate) fn uri(&self) -> &str {
        &self.uri
    }

    /// Waits for the browser to come back with `state`; the whole callback URL (with `code`
    /// and `state`), or the error the authorization server sent instead. Other requests (a
    /// favicon, a stray connection, a callback of another `state`) are answered and waited past.
    pub(crate) async fn wait(self, server: String, state: String) -> Result<String, String> {
        let expected = Expected {
            base: &self.uri,
            server: &server,
            state: &state,
        };
        loop {
            let Ok((stream, _)) = self.listener.accept().await else {
                continue;
            };
            match tokio::time::timeout(READ_TIMEOUT, answer(stream, &expected)).await {
                Ok(Some(outcome)) => return outcome,
                Ok(None) | Err(_) => continue,
            }
        }
    }
}

/// What the redirect of this sign-in looks like.
struct Expected<'a> {
    /// The `redirect_uri`.
    base: &'a str,
    /// The server's name, for the pages.
    server: &'a str,
    /// The `state` sent with the authorization request.
    state: &'a str,
}

/// Handles one connection: `Some` when it was the redirect.
async fn answer(mut stream: TcpStream, expected: &Expected<'_>) -> Option<Result<String, String>> {
    let server = expected.server;
    let target = read_target(&mut stream).await?;
    let (path, query) = target.split_once('?').unwrap_or((target.as_str(), ""));
    if path != PATH {
        respond(&mut stream, "404 Not Found", "Not found.").await;
        return None;
    }
    let url = format!("{}?{query}", expected.base);
    let parsed = url::Url::parse(&url).ok()?;
    let param = |name: &str| {
        parsed
            .query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    if param("state").as_deref() != Some(expected.state) {
        respond(
            &mut stream,
            "400 Bad Request",
            "This link does not belong to the sign-in Ferrite is waiting for; it was ignored.",
        )
        .await;
        return None;
    }
    if let Some(error) = param("error") {
        let why = match param("error_description") {
            Some(d) => format!("{error}: {d}"),
            None => error,
        };
        let page = format!(
            "Signing in to the MCP server {server} failed ({why}). You can close this tab."
        );
        respond(&mut stream, "200 OK", &page).await;
        return Some(Err(format!("the authorization server refused: {why}")));
    }
    if param("code").is_none() {
        respond(
            &mut stream,
            "400 Bad Request",
            "No authorization code in this request.",
        )
        .await;
        return None;
    }
    let page = format!("Signed in to the MCP server {server}. You can close this tab and go back.");
    respond(&mut stream, "200 OK", &page).await;
    Some(Ok(url))
}

/// The request target of `GET <target> HTTP/1.1`.
async fn read_target(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut chunk = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 || head.len() + n > MAX_HEAD {
            return None;
        }
        head.extend_from_slice(&chunk[..n]);
    }
    let line = head.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?.trim_end();
    let mut words = line.split(' ');
    match (words.next(), words.next()) {
        (Some("GET"), Some(target)) => Some(target.to_owned()),
        _ => None,
    }
}

async fn respond(stream: &mut TcpStream, status: &str, text: &str) {
    // Plain text: nothing the authorization server sent is ever rendered as HTML here.
    let body = format!("{text}\n");
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\n\
         cache-control: no-store\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(uri: &str) -> String {
        let rest = uri.strip_prefix("http://").unwrap();
        let (host, target) = rest.split_at(rest.find('/').unwrap());
        let mut s = TcpStream::connect(host).await.unwrap();
        s.write_all(format!("GET {target} HTTP/1.1\r\nhost: {host}\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn the_code_comes_back_and_strays_are_ignored() {
        let redirect = Redirect::bind().await.unwrap();
        let uri = redirect.uri().to_owned();
        let waiting = tokio::spawn(redirect.wait("s".into(), "xyz".into()));
        let base = uri.trim_end_matches(PATH);
        assert!(
            get(&format!("{base}/favicon.ico"))
                .await
                .starts_with("HTTP/1.1 404")
        );
        let page = get(&format!("{uri}?code=abc&state=xyz")).await;
        assert!(page.contains("Signed in"), "{page}");
        let url = waiting.await.unwrap().unwrap();
        assert_eq!(url, format!("{uri}?code=abc&state=xyz"));
    }

    #[tokio::test]
    async fn an_error_redirect_ends_the_wait() {
        let redirect = Redirect::bind().await.unwrap();
        let uri = redirect.uri().to_owned();
        let waiting = tokio::spawn(redirect.wait("s".into(), "xyz".into()));
        get(&format!("{uri}?error=access_denied&state=xyz")).await;
        let err = waiting.await.unwrap().unwrap_err();
        assert!(err.contains("access_denied"), "{err}");
    }

    /// Any local process can reach the listener: a callback without this sign-in's `state` (a
    /// code or an error) is refused with an error page and ends nothing.
    #[tokio::test]
    async fn a_callback_of_another_state_is_refused_and_the_wait_goes_on() {
        let redirect = Redirect::bind().await.unwrap();
        let uri = redirect.uri().to_owned();
        let waiting = tokio::spawn(redirect.wait("s".into(), "right".into()));
        for stray in [
            format!("{uri}?code=evil"),
            format!("{uri}?code=evil&state=wrong"),
            format!("{uri}?error=access_denied&state=wrong"),
        ] {
            let page = get(&stray).await;
            assert!(page.starts_with("HTTP/1.1 400"), "{page}");
            assert!(page.contains("ignored"), "{page}");
        }
        assert!(!waiting.is_finished());
        let page = get(&format!("{uri}?code=good&state=right")).await;
        assert!(page.contains("Signed in"), "{page}");
        let url = waiting.await.unwrap().unwrap();
        assert!(url.ends_with("code=good&state=right"), "{url}");
    }
}
