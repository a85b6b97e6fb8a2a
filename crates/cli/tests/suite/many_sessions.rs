//! Many sessions in one process: an editor that opened more sessions than the process has file
//! descriptors for must still be able to use every one of them.

use std::path::Path;

use ferrite_test_support::AcpClient;
use ferrite_test_support::acp_client::Spawn;
use ferrite_test_support::fake_provider::{FakeProvider, Script};
use serde_json::json;

use super::common::*;
use super::turns::{Api, provider_env};

#[tokio::test]
async fn more_sessions_than_file_descriptors_all_stay_usable() {
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    // 64 descriptors in all; 100 sessions each holding its log open would exhaust them.
    let script = format!("ulimit -n 64 && exec {BIN} acp");
    let mut client = AcpClient::spawn_with(Spawn {
        bin: Path::new("/bin/sh"),
        home: world.home(),
        args: &["-c", &script],
        env: provider_env(&fake, Api::Anthropic),
    });
    client.initialize().await;
    let mut ids = Vec::new();
    for _ in 0..100 {
        let res = client
            .request("session/new", json!({"cwd": world.ws(), "mcpServers": []}))
            .await;
        ids.push(sid(&res.ok()));
    }
    // The oldest (parked long ago), one from the middle and the newest all take a turn.
    for id in [&ids[0], &ids[50], &ids[99], &ids[0]] {
        fake.push(Script::new().text("still here"));
        let answer = client
            .request("session/prompt", text_prompt(id, "hi"))
            .await;
        let answer = answer.ok();
        assert_eq!(answer["stopReason"], "end_turn", "{answer}");
        assert!(
            answer["_meta"]["ferrite"]["turnFailure"].is_null(),
            "{answer}"
        );
    }
    // What the parked session wrote is in its log, readable by a fresh load.
    let log = std::fs::read_to_string(world.session_file(&ids[0])).unwrap();
    assert_eq!(log.matches("still here").count(), 2, "{log}");
}
