//! `web_fetch` through the real binary: a local HTTP server stands in for the web.

use std::net::SocketAddr;

use axum::Router;
use axum::http::header;
use axum::routing::get;
use ferrite_test_support::fake_provider::Script;
use serde_json::json;

use super::common::*;
use super::permissions::{Rig, start};

async fn site() -> SocketAddr {
    let app = Router::new().route(
        "/guide",
        get(|| async {
            (
                [(header::CONTENT_TYPE, "text/html")],
                "<html><head><title>Guide</title></head><body><nav>NAV</nav><main>\
                 <h2>Install</h2><p>Run <code>cargo add x</code>.</p>\
                 <p>Set FROBNICATOR_az0u2q, see https://ex.com/a_b_c #42 [x]</p></main></body></html>",
            )
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

fn fetch_call(url: &str) -> Script {
    Script::new().tool_call("f1", "web_fetch", json!({ "url": url }).to_string())
}

/// One prompt whose model fetches `url`; returns the permission request, if one was made (it is
/// answered `allow_once`), and the tool result the model got.
async fn fetch(r: &mut Rig, url: &str) -> (Option<serde_json::Value>, (String, bool)) {
    r.fake.push(fetch_call(url));
    r.fake.push(Script::new().text("read it"));
    let prompt = r.send_prompt_id().await;
    let mut asked = None;
    loop {
        let msg = r
            .client
            .wait_for(std::time::Duration::from_secs(20), |m| {
                m["method"] == "session/request_permission" || m["id"] == prompt
            })
            .await
            .unwrap();
        if msg["method"] == "session/request_permission" {
            r.answer(&msg, "allow_once").await;
            asked = Some(msg);
        } else {
            break;
        }
    }
    (asked, r.last_tool_results().remove(0))
}

#[tokio::test]
async fn html_becomes_markdown_and_auto_mode_asks_first() {
    let addr = site().await;
    let world = World::new();
    world.write_config("[web_fetch]\nallow_private = true\n");
    let mut r = start(world, None, &[]).await;
    r.set_mode("auto").await;
    let url = format!("http://{addr}/guide");
    let (asked, (text, is_error)) = fetch(&mut r, &url).await;
    let req = asked.expect("auto mode asks before a fetch");
    assert_eq!(req["params"]["toolCall"]["title"], url.as_str());
    assert_eq!(
        req["params"]["options"][1]["name"],
        "Always allow fetching pages from 127.0.0.1 in this workspace"
    );
    assert!(!is_error, "{text}");
    assert!(
        text.contains("## Install") && text.contains("`cargo add x`"),
        "{text}"
    );
    assert!(!text.contains("NAV"), "{text}");
    // The page's text as written: no backslash the model would copy into code (issue 23).
    assert!(
        text.contains("Set FROBNICATOR_az0u2q, see https://ex.com/a_b_c #42 [x]"),
        "{text}"
    );
}

#[tokio::test]
async fn a_domain_rule_allows_without_asking() {
    let addr = site().await;
    let world = World::new();
    world.write_config(
        "[web_fetch]\nallow_private = true\n[permissions]\nallow = [\"web_fetch(domain:127.0.0.1)\"]\n",
    );
    let mut r = start(world, None, &[]).await;
    let (asked, (text, is_error)) = fetch(&mut r, &format!("http://{addr}/guide")).await;
    assert!(asked.is_none());
    assert!(!is_error && text.contains("Install"), "{text}");
}

#[tokio::test]
async fn private_addresses_are_refused_by_default_and_unattended_never_asks() {
    let addr = site().await;
    let world = World::new();
    world.write_config("[permissions]\nallow = [\"web_fetch(domain:127.0.0.1)\"]\n");
    let mut r = start(world, None, &[]).await;
    let (_, (text, is_error)) = fetch(&mut r, &format!("http://{addr}/guide")).await;
    assert!(is_error && text.contains("refused"), "{text}");
    assert!(!text.contains("Install"));

    let mut r = start(World::new(), Some("unattended"), &[]).await;
    let (asked, (text, is_error)) = fetch(&mut r, "https://docs.rs/").await;
    assert!(asked.is_none());
    assert!(is_error && text.contains("Permission denied"), "{text}");
}

/// A page nested `depth` deep: `open` repeated, the words, `close` repeated.
fn nested(open: &str, close: &str, depth: usize) -> String {
    format!(
        "<html><head><title>Deep</title></head><body><main><p>before the nest</p>{}deep words{}\
         <p>after the nest</p></main></body></html>",
        open.repeat(depth),
        close.repeat(depth)
    )
}

/// Unclosed formatting tags, then `paragraphs` paragraphs: the HTML standard's parser copies
/// the formatting into each one.
fn copied_formatting(paragraphs: usize) -> String {
    let tags = [
        "b", "i", "u", "s", "em", "strong", "code", "small", "big", "tt", "font",
    ];
    let head: String = tags.iter().map(|t| format!("<{t}><{t}><{t}>")).collect();
    format!(
        "<html><body><main><p>before the nest</p><p>{head}deep words</p>{}<p>after the nest</p>\
         </main></body></html>",
        "<p>y</p>".repeat(paragraphs)
    )
}

async fn deep_site() -> SocketAddr {
    let page = |html: String| async move { ([(header::CONTENT_TYPE, "text/html")], html) };
    let app = Router::new()
        .route(
            "/divs3000",
            get(move || page(nested("<div>", "</div>", 3_000))),
        )
        .route(
            "/divs100000",
            get(move || page(nested("<div>", "</div>", 100_000))),
        )
        .route("/bold", get(move || page(nested("<b>", "</b>", 20_000))))
        .route(
            "/lists",
            get(move || page(nested("<ul><li>", "</li></ul>", 20_000))),
        )
        .route(
            "/tables",
            get(move || page(nested("<table><tr><td>", "</td></tr></table>", 5_000))),
        )
        .route("/paragraphs", get(move || page(copied_formatting(130_000))))
        .route(
            "/quotes",
            get(move || page(nested("<blockquote>", "</blockquote>", 20_000))),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

/// Regression (issue 28): 3,000 nested `<div>` overflowed the stack of the HTML → Markdown
/// conversion and aborted the whole agent. Every nestable element, however deep, now gives the
/// model the page's text, and the agent goes on serving.
#[tokio::test]
async fn a_deeply_nested_page_gives_the_model_its_text_and_the_agent_lives_on() {
    let addr = deep_site().await;
    let world = World::new();
    world.write_config(
        "[web_fetch]\nallow_private = true\n[permissions]\nallow = [\"web_fetch(domain:127.0.0.1)\"]\n",
    );
    let mut r = start(world, None, &[]).await;
    for page in [
        "divs3000",
        "divs100000",
        "bold",
        "lists",
        "tables",
        "quotes",
        "paragraphs",
    ] {
        let started = std::time::Instant::now();
        let (_, (text, is_error)) = fetch(&mut r, &format!("http://{addr}/{page}")).await;
        assert!(!is_error, "{page}: {text}");
        // The paragraphs page is past the result cap: its end is in the spill file.
        let words: &[&str] = match page {
            "paragraphs" => &["before the nest", "deep words"],
            _ => &["before the nest", "deep words", "after the nest"],
        };
        for words in words {
            assert!(text.contains(words), "{page}: no `{words}` in {text:.2000}");
        }
        assert!(
            started.elapsed() < HANG_GUARD,
            "{page} took {:?}",
            started.elapsed()
        );
    }
    // 1 MB of paragraphs took the standard's parser about 1 GB before its elements were counted.
    let peak = peak_rss_kb(r.client.pid().unwrap());
    assert!(peak < 256 * 1024, "peak RSS {peak} kB");
}
