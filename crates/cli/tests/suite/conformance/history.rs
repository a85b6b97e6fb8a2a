//! A prompted session loaded and resumed by later processes.

use std::time::Duration;

use ferrite_test_support::fake_provider::Script;
use serde_json::{Value, json};

use super::Record;
use super::probes::*;

pub(super) const HISTORY: &[&str] = &[
    "ACP-LOAD-001",
    "ACP-LOAD-002",
    "ACP-LOAD-003",
    "ACP-RESUME-001",
    "ACP-RESUME-002",
];

/// A prompted session loaded, then resumed, each by a later process.
pub(super) async fn history(r: Record) {
    let mut a = Agent::start(&r).await;
    let sid = a.session().await;
    a.fake
        .push(Script::new().thinking("hmm", "sig").text("hello back"));
    a.prompt(&sid, json!([{"type": "text", "text": "hello"}]))
        .await;
    a.c.close_stdin().await;
    a.c.wait_exit(Duration::from_secs(5)).await;
    let world = a.finish();
    let ws = world.ws();

    let mut b = Agent::uninitialized(&r, world).await.initialized().await;
    let id =
        b.c.send_request(
            "session/load",
            json!({"sessionId": sid, "cwd": ws, "mcpServers": []}),
        )
        .await;
    let (before, load) = b.c.collect_until_answer(&id).await;
    answer_shape(&r, &load);
    let result = load.result.clone().unwrap_or_default();
    r.check("ACP-LOAD-001", load.result.is_some(), format!("{load:?}"));
    r.check("ACP-LOAD-003", result.is_object(), format!("{result}"));
    keys(&r, "LoadSessionResponse", &result);
    let replayed = updates_for(&before, &sid).len();
    let after = updates_for(&b.c.drain(QUIET).await, &sid);
    let (late, state): (Vec<_>, Vec<_>) = after
        .iter()
        .partition(|(k, _)| REPLAY.contains(&k.as_str()));
    let state: Vec<&String> = state.iter().map(|(k, _)| k).collect();
    r.check(
        "ACP-LOAD-002",
        replayed > 0 && late.is_empty(),
        format!("{replayed} replayed before, {late:?} after"),
    );
    // acp-tck's own test also counts these state updates (sent after the answer on purpose).
    r.pass(
        "ACP-LOAD-002",
        format!("{replayed} replayed before the answer; after it only state updates {state:?}"),
    );
    b.c.close_stdin().await;
    b.c.wait_exit(Duration::from_secs(5)).await;
    let world = b.finish();

    let mut c = Agent::uninitialized(&r, world).await.initialized().await;
    let id =
        c.c.send_request("session/resume", json!({"sessionId": sid, "cwd": ws}))
            .await;
    let (before, resume) = c.c.collect_until_answer(&id).await;
    answer_shape(&r, &resume);
    r.check(
        "ACP-RESUME-001",
        resume.result.as_ref().is_some_and(Value::is_object),
        format!("{resume:?}"),
    );
    let history: Vec<_> = (updates_for(&before, &sid).into_iter())
        .filter(|(k, _)| {
            [
                "user_message_chunk",
                "agent_message_chunk",
                "agent_thought_chunk",
            ]
            .contains(&k.as_str())
        })
        .collect();
    r.check("ACP-RESUME-002", history.is_empty(), format!("{history:?}"));
    c.finish();
}
