//! Prompt turns: content, tools to a client with no capabilities, cancels.

use std::time::Duration;

use ferrite_test_support::Answer;
use ferrite_test_support::fake_provider::Script;
use serde_json::{Value, json};

use super::Record;
use super::probes::*;

pub(super) const TURNS: &[&str] = &[
    "ACP-PROMPT-001",
    "ACP-PROMPT-002",
    "ACP-PROMPT-003",
    "ACP-META-001",
    "ACP-PROMPTCAP-001",
    "ACP-PROMPTCAP-002",
    "ACP-PROMPTCAP-003",
    "ACP-CLIENTCAP-001",
    "ACP-CLIENTCAP-002",
    "ACP-CLIENTCAP-003",
    "FERRITE-ACP-PERM-001",
];

const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==";

/// Prompt turns: content kinds, `_meta`, and a turn that reads, writes (asking), runs a command
/// and asks the user, to a client that advertised none of fs, terminal and elicitation.
pub(super) async fn turns(r: Record) {
    let mut a = Agent::start(&r).await;
    let sid = a.session().await;
    std::fs::write(a.world.ws().join("a.txt"), "alpha\n").unwrap();
    contents(&r, &mut a, &sid).await;
    tools(&r, &mut a, &sid).await;
    a.finish();
}

/// Each kind of content block, and a prompt with `_meta`.
async fn contents(r: &Record, a: &mut Agent, sid: &str) {
    let ws = a.world.ws();
    let text = json!({"type": "text", "text": "hello"});
    let cases = [
        ("ACP-PROMPT-001", json!([text]), None),
        (
            "ACP-PROMPT-003",
            json!([text, {"type": "resource_link", "uri": format!("file://{}", ws.join("a.txt").display()), "name": "a.txt"}]),
            None,
        ),
        (
            "ACP-PROMPTCAP-001",
            json!([text, {"type": "image", "mimeType": "image/png", "data": PNG}]),
            Some("agentCapabilities.promptCapabilities.image"),
        ),
        (
            "ACP-PROMPTCAP-002",
            json!([text, {"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="}]),
            Some("agentCapabilities.promptCapabilities.audio"),
        ),
        (
            "ACP-PROMPTCAP-003",
            json!([text, {"type": "resource", "resource": {"uri": "file:///notes.md", "mimeType": "text/markdown", "text": "# notes"}}]),
            Some("agentCapabilities.promptCapabilities.embeddedContext"),
        ),
    ];
    for (id, blocks, gate) in cases {
        if gate.is_some_and(|g| !r.advertises(g)) {
            r.skip(id, "not advertised");
            continue;
        }
        a.fake.push(Script::new().text("fine"));
        let (before, answer) = a.prompt(sid, blocks).await;
        let stop = answer
            .result
            .map(|x| x["stopReason"].clone())
            .unwrap_or_default();
        r.check(
            id,
            STOPS.iter().any(|s| stop == *s),
            format!("stopReason {stop}, error {:?}", answer.error),
        );
        let foreign: Vec<_> = (before.iter())
            .filter(|m| m["method"] == "session/update" && m["params"]["sessionId"] != sid)
            .collect();
        r.check("ACP-PROMPT-002", foreign.is_empty(), format!("{foreign:?}"));
    }
    a.fake.push(Script::new().text("traced"));
    let id =
        a.c.send_request(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [text],
        "_meta": {"traceparent": "00-80e1afed08e019fc1110464cfa66635c-7a085853722dc6d2-01"}}),
        )
        .await;
    let (_, meta) = a.c.collect_until_answer(&id).await;
    r.check(
        "ACP-META-001",
        meta.result
            .is_some_and(|x| STOPS.iter().any(|s| x["stopReason"] == *s)),
        "no stopReason",
    );
}

/// A turn that reads, writes (asking), runs a command and asks the user.
async fn tools(r: &Record, a: &mut Agent, sid: &str) {
    let text = json!({"type": "text", "text": "hello"});
    for script in [
        Script::new().tool_call("r1", "read", r#"{"path":"a.txt"}"#),
        Script::new().tool_call(
            "w1",
            "write",
            json!({"path": "b.txt", "content": "beta\n"}).to_string(),
        ),
        Script::new().tool_call("x1", "bash", json!({"command": "echo hi"}).to_string()),
        Script::new().tool_call(
            "q1",
            "ask_user",
            json!({"question": "Which?", "options": ["x", "y"]}).to_string(),
        ),
        Script::new().text("done"),
    ] {
        a.fake.push(script);
    }
    let id =
        a.c.send_request(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [text]}),
        )
        .await;
    let (asked, forbidden) = serve(r, a, sid, &id).await;
    let has = |p: &str| forbidden.iter().any(|f| f.starts_with(p));
    r.check("ACP-CLIENTCAP-001", !has("fs/"), format!("{forbidden:?}"));
    r.check(
        "ACP-CLIENTCAP-002",
        !has("terminal/"),
        format!("{forbidden:?}"),
    );
    r.check(
        "ACP-CLIENTCAP-003",
        !has("elicitation/"),
        format!("{forbidden:?}"),
    );
    let written = std::fs::read_to_string(a.world.ws().join("b.txt")).unwrap_or_default();
    r.check(
        "FERRITE-ACP-PERM-001",
        asked > 0 && written == "beta\n",
        format!("{asked} asked, b.txt {written:?}"),
    );
}

/// Plays the client until prompt `id` is answered: allows what it is asked, refuses what
/// the client did not advertise. Returns how many questions came and the refused methods.
async fn serve(r: &Record, a: &mut Agent, sid: &str, id: &Value) -> (usize, Vec<String>) {
    let (mut announced, mut asked, mut forbidden) = (vec![], 0, vec![]);
    loop {
        let Some(m) = a.c.next_message(Duration::from_secs(20)).await else {
            r.fail("FERRITE-ACP-PERM-001", "the turn did not end");
            break;
        };
        let method = m["method"].as_str().unwrap_or_default().to_owned();
        if m["id"] == *id && method.is_empty() {
            break;
        }
        if m["params"]["update"]["sessionUpdate"] == "tool_call" {
            announced.push(m["params"]["update"]["toolCallId"].clone());
        }
        if method.starts_with("fs/")
            || method.starts_with("terminal/")
            || method == "elicitation/create"
        {
            forbidden.push(method.clone());
            a.c.respond_error(&m["id"], -32601, "not advertised").await;
        } else if method == "session/request_permission" {
            asked += 1;
            permission_shape(r, &m, sid, &announced);
            let allow = (m["params"]["options"].as_array().into_iter().flatten())
                .find(|o| o["kind"] == "allow_once")
                .map(|o| o["optionId"].clone())
                .unwrap_or_default();
            a.c.respond(
                &m["id"],
                json!({"outcome": {"outcome": "selected", "optionId": allow}}),
            )
            .await;
        }
    }
    (asked, forbidden)
}

/// A permission request: for the prompted session, about a call already announced, with
/// options of the defined kinds.
fn permission_shape(r: &Record, m: &Value, sid: &str, announced: &[Value]) {
    let p = &m["params"];
    let kinds = ["allow_once", "allow_always", "reject_once", "reject_always"];
    let options = p["options"].as_array().cloned().unwrap_or_default();
    let ok = p["sessionId"] == sid
        && announced.contains(&p["toolCall"]["toolCallId"])
        && !options.is_empty()
        && options
            .iter()
            .all(|o| kinds.iter().any(|k| o["kind"] == *k));
    r.check("FERRITE-ACP-PERM-001", ok, format!("{p}"));
}

pub(super) const CANCELS: &[&str] = &[
    "ACP-CANCEL-001",
    "ACP-CANCEL-002",
    "ACP-CLOSE-002",
    "FERRITE-ACP-PERM-002",
];

/// A turn stopped by `session/cancel`, by `session/close`, and while a permission is pending.
pub(super) async fn cancels(r: Record) {
    let mut a = Agent::start(&r).await;
    let long = || {
        Script::new()
            .text("first words")
            .stall(Duration::from_secs(30))
            .text(" never")
    };
    let text = json!([{"type": "text", "text": "long task"}]);
    let streaming = |m: &Value| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk";

    let sid = a.session().await;
    a.fake.push(long());
    let id =
        a.c.send_request("session/prompt", json!({"sessionId": sid, "prompt": text}))
            .await;
    a.c.wait_for(Duration::from_secs(20), streaming).await;
    a.c.notify("session/cancel", json!({"sessionId": sid}))
        .await;
    let (_, answer) = a.c.collect_until_answer(&id).await;
    let cancelled = answer
        .result
        .as_ref()
        .is_some_and(|x| x["stopReason"] == "cancelled");
    r.check("ACP-CANCEL-001", cancelled, format!("{answer:?}"));
    let late = updates_for(&a.c.drain(QUIET).await, &sid);
    r.check(
        "ACP-CANCEL-002",
        late.is_empty(),
        format!("after the answer: {late:?}"),
    );

    let sid = a.session().await;
    a.fake.push(long());
    let id =
        a.c.send_request("session/prompt", json!({"sessionId": sid, "prompt": text}))
            .await;
    a.c.wait_for(Duration::from_secs(20), streaming).await;
    let close =
        a.c.send_request("session/close", json!({"sessionId": sid}))
            .await;
    // The two answers may come in either order: the close's can be written first.
    let (before, answer) = a.c.collect_until_answer(&id).await;
    let closed = match before.iter().find(|m| m["id"] == close) {
        Some(m) => Answer::from_message(m),
        None => a.c.wait_answer(&close).await,
    };
    r.check(
        "ACP-CLOSE-002",
        answer
            .result
            .is_some_and(|x| x["stopReason"] == "cancelled")
            && closed.result.is_some(),
        format!("{closed:?}"),
    );

    cancel_while_asking(&r, &mut a).await;
    a.finish();
}

/// A cancel while a write waits for permission.
async fn cancel_while_asking(r: &Record, a: &mut Agent) {
    let text = json!([{"type": "text", "text": "long task"}]);
    let sid = a.session().await;
    a.fake.push(Script::new().tool_call(
        "w9",
        "write",
        json!({"path": "never.txt", "content": "x"}).to_string(),
    ));
    let id =
        a.c.send_request("session/prompt", json!({"sessionId": sid, "prompt": text}))
            .await;
    let ask =
        a.c.wait_for(Duration::from_secs(20), |m| {
            m["method"] == "session/request_permission"
        })
        .await;
    a.c.notify("session/cancel", json!({"sessionId": sid}))
        .await;
    if let Some(ask) = &ask {
        a.c.respond(&ask["id"], json!({"outcome": {"outcome": "cancelled"}}))
            .await;
    }
    let answer = a.c.wait_answer(&id).await;
    let untouched = !a.world.ws().join("never.txt").exists();
    let cancelled = answer
        .result
        .is_some_and(|x| x["stopReason"] == "cancelled");
    r.check(
        "FERRITE-ACP-PERM-002",
        ask.is_some() && cancelled && untouched,
        format!(
            "asked {}, cancelled {cancelled}, untouched {untouched}",
            ask.is_some()
        ),
    );
}
