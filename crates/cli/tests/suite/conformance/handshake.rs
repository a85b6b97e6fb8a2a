//! `initialize`, ids and errors: what every exchange must get right.

use std::time::Duration;

use serde_json::json;

use super::super::common::World;
use super::Record;
use super::probes::*;

pub(super) const HANDSHAKE: &[&str] = &[
    "ACP-JSONRPC-001",
    "ACP-JSONRPC-003",
    "ACP-JSONRPC-004",
    "ACP-JSONRPC-005",
    "ACP-INIT-001",
    "ACP-INIT-002",
    "ACP-INIT-003",
    "ACP-INIT-004",
    "ACP-AUTH-001",
    "ACP-AUTH-002",
    "ACP-AUTH-005",
    "ACP-SESSION-001",
    "ACP-SESSION-002",
    "ACP-EXT-001",
    "FERRITE-ACP-PARAMS-001",
    "ACP-INFO-PARSE-001",
    "ACP-INFO-INVALIDREQ-001",
    "ACP-INFO-UNKNOWNSESSION-001",
    "ACP-STDERR-001",
    "ACP-SHUTDOWN-001",
];

/// `initialize`, version negotiation, ids, unknown methods, notifications, garbage, shutdown.
pub(super) async fn handshake(r: Record) {
    let mut a = Agent::uninitialized(&r, World::new()).await;
    let s1 = identify(&r, &mut a).await;
    errors(&r, &mut a, &s1).await;
    garbage_and_exit(&r, &mut a).await;
    a.finish();

    // An unsupported version is answered with one the agent supports.
    let mut b = Agent::uninitialized(&r, World::new()).await;
    let v = b.call("initialize", init_params(65535)).await.ok()["protocolVersion"].clone();
    r.check(
        "ACP-INIT-003",
        v.as_u64().is_some_and(|v| v != 65535 && v >= 1),
        format!("answered {v}"),
    );
    b.finish();
}

/// `initialize` under a string id, what it answers, and sessions under integer ids.
async fn identify(r: &Record, a: &mut Agent) -> String {
    // A string id, answered with the same string.
    let id = (a.c)
        .send_request_as(json!("init-☃"), "initialize", init_params(1))
        .await;
    let m =
        a.c.wait_for(Duration::from_secs(20), |m| m["id"] == id)
            .await;
    let init = m.map(|m| m["result"].clone()).unwrap_or_default();
    r.check(
        "ACP-JSONRPC-001",
        !init.is_null(),
        "no answer to the string id",
    );
    r.check(
        "ACP-INIT-001",
        init["protocolVersion"].is_u64(),
        format!("{init:.300}"),
    );
    r.check(
        "ACP-INIT-002",
        init["protocolVersion"] == 1,
        format!("{}", init["protocolVersion"]),
    );
    let info = &init["agentInfo"];
    r.check(
        "ACP-INIT-004",
        info["name"].is_string() && info["version"].is_string(),
        format!("{info}"),
    );
    keys(r, "InitializeResponse", &init);
    let methods = init["authMethods"].as_array().cloned().unwrap_or_default();
    let mut ids: Vec<&str> = methods.iter().filter_map(|m| m["id"].as_str()).collect();
    ids.sort_unstable();
    let unique = ids.windows(2).all(|w| w[0] != w[1]);
    r.check("ACP-AUTH-001", unique, format!("{ids:?}"));
    let terminal = methods
        .iter()
        .any(|m| m["type"] == "terminal" || m["_meta"]["terminal-auth"].is_object());
    r.check("ACP-AUTH-002", !terminal, format!("{methods:?}"));
    if methods.is_empty() {
        r.fail(
            "ACP-AUTH-005",
            "checked in `sessions` only when authMethods is non-empty",
        );
    } else {
        r.skip("ACP-AUTH-005", "not applicable: authMethods is non-empty");
    }
    // Integer ids (the client matches answers by id).
    let s1 = a.session().await;
    let s2 = a.session().await;
    r.check("ACP-SESSION-001", !s1.is_empty(), "empty sessionId");
    r.check("ACP-SESSION-002", s1 != s2, format!("{s1} twice"));
    r.pass("ACP-JSONRPC-001", "integer and string ids");
    s1
}

/// Unknown methods, bad params, an unknown session, notifications.
async fn errors(r: &Record, a: &mut Agent, s1: &str) {
    let unknown = a.call("tck/unknown", json!({})).await;
    r.check(
        "ACP-JSONRPC-004",
        unknown.error.as_ref().is_some_and(|e| e["code"] == -32601),
        format!("{unknown:?}"),
    );
    let ext = a.call("_tck/unknown", json!({})).await;
    r.pass(
        "ACP-EXT-001",
        format!(
            "answered {}",
            ext.error
                .map_or("a result".into(), |e| e["code"].to_string())
        ),
    );
    let bad = a
        .call(
            "session/new",
            json!({"cwd": "relative/dir", "mcpServers": []}),
        )
        .await;
    let missing = a.call("session/prompt", json!({"sessionId": s1})).await;
    let codes = [&bad, &missing].map(|x| x.error.as_ref().map(|e| e["code"].clone()));
    r.check(
        "FERRITE-ACP-PARAMS-001",
        codes.iter().all(|c| *c == Some(json!(-32602))),
        format!("{codes:?}"),
    );
    let ghost = a
        .call(
            "session/prompt",
            json!({"sessionId": "tck-never-created", "prompt": [{"type": "text", "text": "hi"}]}),
        )
        .await;
    r.pass(
        "ACP-INFO-UNKNOWNSESSION-001",
        format!("answered {:?}", ghost.error.map(|e| e["code"].clone())),
    );

    // Notifications get nothing back, known or not.
    a.c.notify("session/cancel", json!({"sessionId": s1})).await;
    a.c.notify("_tck/notice", json!({})).await;
    let after = a.c.drain(QUIET).await;
    let answers: Vec<_> = after.iter().filter(|m| m.get("method").is_none()).collect();
    r.check(
        "ACP-JSONRPC-003",
        answers.is_empty(),
        format!("{answers:?}"),
    );
}

/// Lines that are no JSON-RPC request, then the end of stdin.
async fn garbage_and_exit(r: &Record, a: &mut Agent) {
    for (id, line) in [
        ("ACP-INFO-PARSE-001", "not json\n"),
        ("ACP-INFO-INVALIDREQ-001", "{\"foo\":\"bar\"}\n"),
    ] {
        a.c.send_raw(line.as_bytes()).await;
        let reply =
            a.c.wait_for(Duration::from_secs(2), |m| m.get("method").is_none())
                .await;
        let code = reply.map(|m| m["error"]["code"].clone());
        let usable = !a.session().await.is_empty();
        r.pass(
            id,
            format!("reply {code:?}, connection usable after: {usable}"),
        );
    }
    r.check(
        "ACP-JSONRPC-005",
        !a.session().await.is_empty(),
        "session/new failed after errors",
    );
    r.pass(
        "ACP-STDERR-001",
        format!("{} bytes on stderr", a.c.stderr().len()),
    );
    a.c.close_stdin().await;
    let exited = a.c.wait_exit(Duration::from_secs(5)).await.is_some();
    r.check(
        "ACP-SHUTDOWN-001",
        exited,
        "still running 5 s after stdin closed",
    );
}
