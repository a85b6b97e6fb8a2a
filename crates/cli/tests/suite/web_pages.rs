//! `web_fetch` of pages shaped like real ones, through the binary, from a loopback server:
//! charsets declared in the header, in `<meta>` (any case, any place, past the first KB), by a
//! byte order mark; Latin-1 and Shift_JIS; scripts, styles and page furniture; a 2 MB page; and a
//! page with no text at all, which is a failed call, never a completed one of 0 bytes.

use std::net::SocketAddr;

use axum::Router;
use axum::http::header;
use axum::routing::get;
use ferrite_test_support::fake_provider::Script;
use ferrite_test_support::updates;
use serde_json::{Value, json};

use super::common::*;
use super::permissions::{Rig, start};

const PROSE: &str = "Café crème, naïve résumé: déjà vu.";
const JAPANESE: &str = "日本語のページです。";

/// A page: `head` inside `<head>`, then furniture around a `<main>` holding `words`.
fn page(head: &str, words: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head>{head}<title>A page</title>\
         <style>body {{ color: red }} .STYLE-RULE {{}}</style>\
         <script>window.SCRIPT_TEXT = 1;</script></head>\
         <body><nav><a href=\"/\">NAV-LINK</a></nav><header>HEADER-TEXT</header>\
         <main><h1>Heading</h1><p>{words}</p><script>document.write('INLINE-SCRIPT')</script>\
         </main><footer>FOOTER-TEXT</footer></body></html>"
    )
}

/// Markup a real head carries before its charset: pushes the `<meta>` past the first KB.
fn long_head() -> String {
    (0..30)
        .map(|i| format!("<link rel=\"preload\" href=\"/assets/font-{i}.woff2\" as=\"font\">"))
        .collect()
}

fn encoded(text: &str, encoding: &'static encoding_rs::Encoding) -> Vec<u8> {
    let (bytes, _, unmappable) = encoding.encode(text);
    assert!(!unmappable, "{text} in {}", encoding.name());
    bytes.into_owned()
}

/// Every page: path, Content-Type, body, and the words the model must get.
fn pages() -> Vec<(&'static str, &'static str, Vec<u8>, &'static str)> {
    let late_meta = format!("{}<META CharSet=\"UTF-8\">", long_head());
    let late_equiv = format!(
        "{}<meta content=\"text/html; charset=ISO-8859-1\" HTTP-EQUIV=\"content-type\">",
        long_head()
    );
    let mut bom = vec![0xEF, 0xBB, 0xBF];
    bom.extend(page("<meta charset=\"utf-8\">", PROSE).into_bytes());
    vec![
        (
            "/meta-utf8",
            "text/html",
            page("<meta charset=\"utf-8\">", PROSE).into_bytes(),
            PROSE,
        ),
        (
            "/meta-utf8-and-header",
            "text/html; charset=utf-8",
            page("<meta charset=utf-8>", PROSE).into_bytes(),
            PROSE,
        ),
        (
            "/meta-late-upper",
            "text/html",
            page(&late_meta, PROSE).into_bytes(),
            PROSE,
        ),
        (
            "/http-equiv",
            "text/html",
            page(
                "<meta http-equiv=\"Content-Type\" content=\"text/html; charset=utf-8\">",
                PROSE,
            )
            .into_bytes(),
            PROSE,
        ),
        ("/bom", "text/html", bom, PROSE),
        (
            "/latin1-header",
            "text/html; charset=ISO-8859-1",
            encoded(&page("", PROSE), encoding_rs::WINDOWS_1252),
            PROSE,
        ),
        (
            "/latin1-markup-late",
            "text/html",
            encoded(&page(&late_equiv, PROSE), encoding_rs::WINDOWS_1252),
            PROSE,
        ),
        (
            "/sjis-header",
            "text/html; charset=Shift_JIS",
            encoded(&page("", JAPANESE), encoding_rs::SHIFT_JIS),
            JAPANESE,
        ),
        (
            "/sjis-markup",
            "text/html",
            encoded(
                &page("<meta charset=\"Shift_JIS\">", JAPANESE),
                encoding_rs::SHIFT_JIS,
            ),
            JAPANESE,
        ),
    ]
}

/// A 2 MB page with `<meta charset="utf-8">`: its first words reach the model.
fn big_page() -> Vec<u8> {
    let paragraphs: String = (0..40_000)
        .map(|i| format!("<p>Paragraph {i} of the big page, déjà lu.</p>\n"))
        .collect();
    let html = page(
        "<meta charset=\"utf-8\">",
        &format!("BIG-START</p>{paragraphs}<p>"),
    );
    assert!(html.len() > 2_000_000, "{}", html.len());
    html.into_bytes()
}

/// What a single-page application serves: no text without JavaScript.
const SCRIPT_ONLY: &str = "<!doctype html><html><head><meta charset=\"utf-8\">\
    <script src=\"/app.js\"></script><style>#root{}</style></head>\
    <body><div id=\"root\"></div><script>render(document.getElementById('root'))</script>\
    </body></html>";

async fn site() -> SocketAddr {
    let mut app = Router::new();
    for (path, content_type, body, _) in pages() {
        app = app.route(
            path,
            get(move || async move { ([(header::CONTENT_TYPE, content_type)], body) }),
        );
    }
    let big = big_page();
    let app = app
        .route(
            "/big",
            get(move || async move { ([(header::CONTENT_TYPE, "text/html")], big) }),
        )
        .route(
            "/script-only",
            get(|| async { ([(header::CONTENT_TYPE, "text/html")], SCRIPT_ONLY) }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

async fn rig() -> Rig {
    let world = World::new();
    world.write_config(
        "[web_fetch]\nallow_private = true\n[permissions]\nallow = [\"web_fetch(domain:127.0.0.1)\"]\n",
    );
    start(world, None, &[]).await
}

/// One prompt whose model fetches `url`: the result the model got, whether it was an error,
/// and the card's last update.
async fn fetch(r: &mut Rig, url: &str) -> (String, bool, Value) {
    r.fake
        .push(Script::new().tool_call("f1", "web_fetch", json!({ "url": url }).to_string()));
    r.fake.push(Script::new().text("read it"));
    let id = r.send_prompt_id().await;
    let (messages, answer) = r.client.collect_until_answer(&id).await;
    answer.ok();
    let card = updates(&messages)
        .into_iter()
        .rfind(|(k, u)| k == "tool_call_update" && u["status"].is_string())
        .map(|(_, u)| u)
        .expect("the card's final update");
    let (text, is_error) = r.last_tool_results().remove(0);
    (text, is_error, card)
}

/// Regression (issue 35): every page with `<meta charset="utf-8">` came back empty, as a
/// completed call of 0 bytes. Each page now gives the model its main text, decoded, without
/// scripts, styles or furniture.
#[tokio::test]
async fn pages_in_every_declared_charset_give_the_model_their_text() {
    let addr = site().await;
    let mut r = rig().await;
    for (path, _, _, words) in pages() {
        let (text, is_error, card) = fetch(&mut r, &format!("http://{addr}{path}")).await;
        assert!(!is_error, "{path}: {text}");
        assert_eq!(card["status"], "completed", "{path}");
        assert!(text.contains(words), "{path}: no `{words}` in {text}");
        assert!(text.contains("# Heading"), "{path}: {text}");
        for furniture in [
            "NAV-LINK",
            "HEADER-TEXT",
            "FOOTER-TEXT",
            "SCRIPT_TEXT",
            "INLINE-SCRIPT",
            "STYLE-RULE",
        ] {
            assert!(!text.contains(furniture), "{path}: {furniture} in {text}");
        }
        let shown = card["content"][0]["content"]["text"].as_str().unwrap();
        assert!(!shown.contains("(0 bytes"), "{path}: {shown}");
    }
}

#[tokio::test]
async fn a_two_megabyte_page_with_a_charset_gives_the_model_its_text() {
    let addr = site().await;
    let mut r = rig().await;
    let (text, is_error, card) = fetch(&mut r, &format!("http://{addr}/big")).await;
    assert!(!is_error, "{text:.2000}");
    assert_eq!(card["status"], "completed");
    assert!(text.contains("BIG-START"), "{text:.2000}");
    assert!(
        text.contains("Paragraph 1 of the big page, déjà lu."),
        "{text:.2000}"
    );
}

/// A page that yields no text is a failed call the model and the card say so about.
#[tokio::test]
async fn a_page_without_text_is_a_failed_call() {
    let addr = site().await;
    let mut r = rig().await;
    let (text, is_error, card) = fetch(&mut r, &format!("http://{addr}/script-only")).await;
    assert!(is_error, "{text}");
    assert!(text.contains("no text could be read"), "{text}");
    assert_eq!(card["status"], "failed");
    let shown = card["content"][0]["content"]["text"].as_str().unwrap();
    assert!(shown.contains("no text could be read"), "{shown}");
}
