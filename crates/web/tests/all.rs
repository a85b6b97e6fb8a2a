//! `web_fetch` against a real HTTP server on loopback.

// clippy.toml allows these in #[test] functions only; the server helper here is test code too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use axum::Router;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect};
use axum::routing::get;
use ferrite_core::web::{Reach, WebFetch};
use ferrite_web::{HttpFetcher, MAX_BODY_BYTES, is_public};

async fn serve() -> SocketAddr {
    let app = Router::new()
        .route(
            "/page",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
                    "<html><head><title>Guide</title></head><body><nav>menu</nav>\
                     <article><h2>Setup</h2><p>See <a href=\"https://example.org/x\">x</a>.</p>\
                     </article></body></html>",
                )
            }),
        )
        .route(
            "/json",
            get(|| async { ([(header::CONTENT_TYPE, "application/json")], "{\"a\":1}") }),
        )
        .route(
            "/image",
            get(|| async { ([(header::CONTENT_TYPE, "image/png")], vec![0x89u8, b'P']) }),
        )
        .route("/big", get(|| async { "y".repeat(MAX_BODY_BYTES + 1000) }))
        .route("/missing", get(|| async { StatusCode::NOT_FOUND }))
        .route(
            "/to-metadata",
            get(|| async { Redirect::temporary("http://169.254.169.254/latest/meta-data/") }),
        )
        .route(
            "/to-other-loopback",
            get(|headers: HeaderMap| async move {
                let port = headers
                    .get(header::HOST)
                    .and_then(|h| h.to_str().ok())
                    .and_then(|h| h.rsplit(':').next())
                    .unwrap_or("80")
                    .to_owned();
                Redirect::temporary(&format!("http://127.0.0.2:{port}/page")).into_response()
            }),
        )
        .route("/loop", get(|| async { Redirect::temporary("/loop") }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

/// Stands in for the internet: 127.0.0.1 counts as public, every other non-public address
/// (127.0.0.2, 169.254.169.254, …) does not.
fn only_this_loopback_is_public(ip: IpAddr) -> bool {
    ip == IpAddr::V4(Ipv4Addr::LOCALHOST) || is_public(ip)
}

#[tokio::test]
async fn html_becomes_markdown_and_text_stays_text() {
    let addr = serve().await;
    let f = HttpFetcher::default();
    let page = f
        .fetch(&format!("http://{addr}/page"), Reach::Anywhere)
        .await
        .unwrap();
    assert_eq!(page.content_type, "text/html");
    assert!(page.text.starts_with("# Guide"), "{}", page.text);
    assert!(page.text.contains("## Setup"));
    assert!(page.text.contains("[x](https://example.org/x)"));
    assert!(!page.text.contains("menu"));
    let json = f
        .fetch(&format!("http://{addr}/json"), Reach::Anywhere)
        .await
        .unwrap();
    assert_eq!(json.text, "{\"a\":1}");
    let err = f
        .fetch(&format!("http://{addr}/image"), Reach::Anywhere)
        .await
        .unwrap_err();
    assert!(err.contains("image/png"), "{err}");
    let err = f
        .fetch(&format!("http://{addr}/missing"), Reach::Anywhere)
        .await
        .unwrap_err();
    assert!(err.contains("404"), "{err}");
    let big = f
        .fetch(&format!("http://{addr}/big"), Reach::Anywhere)
        .await
        .unwrap();
    assert!(big.truncated);
    assert_eq!(big.text.len(), MAX_BODY_BYTES);
    let err = f
        .fetch(&format!("http://{addr}/loop"), Reach::Anywhere)
        .await
        .unwrap_err();
    assert!(err.contains("redirects"), "{err}");
    let err = f
        .fetch("file:///etc/passwd", Reach::Anywhere)
        .await
        .unwrap_err();
    assert!(err.starts_with("refused"), "{err}");
}

#[tokio::test]
async fn loopback_is_refused_by_address_and_by_name() {
    let addr = serve().await;
    let f = HttpFetcher::default();
    for url in [
        format!("http://{addr}/page"),
        format!("http://localhost:{}/page", addr.port()),
        format!("http://[::ffff:127.0.0.1]:{}/page", addr.port()),
        format!("http://2130706433:{}/page", addr.port()),
    ] {
        let err = f.fetch(&url, Reach::PublicOnly).await.unwrap_err();
        assert!(err.starts_with("refused"), "{url}: {err}");
    }
}

#[tokio::test]
async fn a_redirect_to_a_private_address_is_refused() {
    let addr = serve().await;
    let f = HttpFetcher::with_public_check(only_this_loopback_is_public);
    // The first hop is "public" here, so the check that fires is the redirect's.
    let ok = f
        .fetch(&format!("http://{addr}/page"), Reach::PublicOnly)
        .await;
    assert!(ok.is_ok(), "{ok:?}");
    for path in ["/to-metadata", "/to-other-loopback"] {
        let err = f
            .fetch(&format!("http://{addr}{path}"), Reach::PublicOnly)
            .await
            .unwrap_err();
        assert!(err.starts_with("refused"), "{path}: {err}");
    }
}
