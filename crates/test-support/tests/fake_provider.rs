//! The fake provider's benchmark hooks: history-sized bodies, request/answer timings, stamped
//! chunks. Spoken to over a raw socket, as a benchmark client does.

// Helpers here are not #[test] functions, which clippy.toml's allowances cover; allow the same.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{SystemTime, UNIX_EPOCH};

use ferrite_test_support::fake_provider::{FakeProvider, STAMP_MARKER, Script};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn now_ns() -> u64 {
    u64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos(),
    )
    .unwrap()
}

/// One HTTP/1.1 exchange; the whole answer (headers and body) as text.
async fn exchange(fake: &FakeProvider, method: &str, path: &str, body: &str) -> String {
    let mut socket = tokio::net::TcpStream::connect(fake.addr()).await.unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\n\
         connection: close\r\ncontent-length: {}\r\n\r\n",
        fake.addr(),
        body.len()
    );
    socket.write_all(head.as_bytes()).await.unwrap();
    socket.write_all(body.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    socket.read_to_end(&mut answer).await.unwrap();
    String::from_utf8(answer).unwrap()
}

#[tokio::test]
async fn a_history_sized_body_is_accepted_and_its_arrival_and_answer_are_timed() {
    let fake = FakeProvider::start().await.unwrap();
    fake.push(Script::new().text("ok"));
    // 5 MB: over axum's default 2 MB limit, like a 10,000-entry session's request.
    let big = "x".repeat(5 << 20);
    let body = format!(r#"{{"model":"m","messages":[{{"role":"user","content":"{big}"}}]}}"#);
    let before = now_ns();
    let answer = exchange(&fake, "POST", "/v1/messages", &body).await;
    let after = now_ns();
    assert!(answer.starts_with("HTTP/1.1 200"), "{}", &answer[..80]);
    assert!(answer.contains("message_stop"), "the stream ran to its end");
    let recorded = fake.requests();
    assert_eq!(recorded.len(), 1);
    assert_eq!(
        recorded[0].body["messages"][0]["content"]
            .as_str()
            .map(str::len),
        Some(5 << 20)
    );

    let timings = fake.timings();
    assert_eq!(timings.len(), 1);
    let t = &timings[0];
    assert_eq!(t.path, "/v1/messages");
    assert_eq!(t.request_bytes, body.len());
    let end = t.reply_end_ns.expect("the answer's end is recorded");
    assert!(before <= t.request_start_ns, "{before} <= {t:?}");
    assert!(t.request_start_ns <= t.request_end_ns && t.request_end_ns <= end);
    assert!(end <= after, "{t:?} <= {after}");

    // The same, as JSON, for a client in another process; the query is not a model call.
    let served = exchange(&fake, "GET", "/_fake/timings", "").await;
    let json = &served[served.find("\r\n\r\n").unwrap() + 4..];
    let parsed: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(parsed[0]["request_start_ns"], t.request_start_ns);
    assert_eq!(parsed[0]["reply_end_ns"], end);
    assert_eq!(fake.requests().len(), 1);
    assert_eq!(fake.timings().len(), 1);
}

#[tokio::test]
async fn stamped_chunks_carry_their_send_time() {
    let fake = FakeProvider::start().await.unwrap();
    fake.set_stamp(true);
    fake.push(
        Script::new()
            .text(format!("{STAMP_MARKER} "))
            .text(format!("{STAMP_MARKER} ")),
    );
    let before = now_ns();
    let answer = exchange(&fake, "POST", "/v1/messages", "{}").await;
    let after = now_ns();
    assert!(!answer.contains(STAMP_MARKER), "every marker is replaced");
    let stamps: Vec<u64> = answer
        .match_indices("ts=")
        .map(|(i, _)| answer[i + 3..i + 22].parse().unwrap())
        .collect();
    assert_eq!(stamps.len(), 2, "{answer}");
    assert!(
        stamps.iter().all(|&s| before <= s && s <= after),
        "{stamps:?}"
    );
    assert!(stamps[0] <= stamps[1]);
}
