//! A session log that cannot be written is the agent's failure (-32603), never the client's
//! (-32602 "invalid params"), and the agent keeps serving.

use std::io::Write;
use std::path::Path;

use ferrite_test_support::AcpClient;
use ferrite_test_support::acp_client::Spawn;
use serde_json::json;

use super::common::*;

/// With 64 descriptors the agent keeps 4 session logs open; older idle sessions give theirs back
/// and reopen it on their next write (`core::runtime`, "park").
fn agent_with_few_descriptors(world: &World) -> AcpClient {
    let script = format!("ulimit -n 64 && exec {BIN} acp");
    AcpClient::spawn_with(Spawn {
        bin: Path::new("/bin/sh"),
        home: world.home(),
        args: &["-c", &script],
        env: vec![("FERRITE_MODEL".into(), TEST_DEFAULT_MODEL.into())],
    })
}

#[tokio::test]
async fn a_log_that_cannot_be_written_is_an_internal_error_and_the_agent_goes_on() {
    let world = World::new();
    let mut c = agent_with_few_descriptors(&world);
    c.initialize().await;
    let mut ids = Vec::new();
    for _ in 0..6 {
        ids.push(sid(&c.new_session(&world.ws()).await));
    }
    // The oldest session is parked (its log closed). Another writer appends to its log
    // meanwhile: the session's next write must refuse to interleave with it.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(world.session_file(&ids[0]))
        .unwrap();
    f.write_all(
        b"{\"seq\":99,\"at\":\"2026-01-01T00:00:00Z\",\"type\":\"mode\",\"mode\":\"plan\"}\n",
    )
    .unwrap();
    drop(f);
    let a = c
        .request(
            "session/set_mode",
            json!({"sessionId": ids[0], "modeId": "plan"}),
        )
        .await;
    assert_eq!(a.code(), -32603, "{:?}", a.error);
    assert!(a.message().contains("session log"), "{}", a.message());
    // The agent goes on: other sessions change, new ones open.
    c.request(
        "session/set_mode",
        json!({"sessionId": ids[5], "modeId": "plan"}),
    )
    .await
    .ok();
    sid(&c.new_session(&world.ws()).await);
}
