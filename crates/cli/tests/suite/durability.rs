//! Sessions survive crashes: SIGKILL mid-write, torn lines, a second process, EOF.

use std::time::Duration;

use ferrite_test_support::updates;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::*;

fn user_texts(messages: &[Value]) -> Vec<String> {
    updates(messages)
        .into_iter()
        .filter(|(k, _)| k == "user_message_chunk")
        .map(|(_, u)| u["content"]["text"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn sigkill_while_appending_loses_nothing_before_the_last_complete_entry() {
    let w = World::new();
    let mut c = w.client().await;
    let s = sid(&c.new_session(&w.ws()).await);
    // Prompts one after another (a second one while a turn runs would be refused), and the
    // process killed at an arbitrary moment in the middle of them.
    // The clock starts after three answers, so a loaded machine still has some turns logged
    // before the kill.
    let mut answered = 0;
    let killer = tokio::time::sleep(Duration::from_secs(3600));
    tokio::pin!(killer);
    loop {
        let prompt = text_prompt(&s, &format!("prompt {answered}"));
        tokio::select! {
            () = &mut killer => break,
            a = c.request("session/prompt", prompt) => {
                a.ok();
                answered += 1;
                if answered == 3 {
                    killer
                        .as_mut()
                        .reset(tokio::time::Instant::now() + Duration::from_millis(150));
                }
            }
        }
    }
    c.kill().await;
    drop(c);

    // Simulate the torn tail a crash mid-`write` leaves behind.
    let path = w.session_file(&s);
    let mut bytes = std::fs::read(&path).unwrap();
    let complete = String::from_utf8(bytes.clone()).unwrap().lines().count();
    bytes.extend_from_slice(b"{\"seq\":999999,\"at\":\"2026-01-01T00:00:00Z\",\"type\":\"user_mes");
    std::fs::write(&path, &bytes).unwrap();

    let mut c = w.client().await;
    let id = c
        .send_request(
            "session/load",
            json!({"sessionId": s, "cwd": w.ws(), "mcpServers": []}),
        )
        .await;
    let (before, answer) = c.collect_until_answer(&id).await;
    answer.ok();
    let texts = user_texts(&before);
    assert!(
        texts.len() >= answered,
        "every answered prompt survives: {texts:?}"
    );
    let expected: Vec<String> = (0..texts.len()).map(|i| format!("prompt {i}")).collect();
    assert_eq!(texts, expected, "a prefix, in order, nothing invented");
    // The next entry goes on a fresh line: the log stays readable after more writes.
    c.request("session/prompt", text_prompt(&s, "after the crash"))
        .await
        .ok();
    c.close_stdin().await;
    c.wait_exit(Duration::from_secs(5)).await.unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.lines().count() > complete - 1);
    for (i, line) in text.lines().enumerate() {
        serde_json::from_str::<Value>(line)
            .unwrap_or_else(|e| panic!("line {i} is not JSON ({e}): {line}"));
    }
    let seqs: Vec<u64> = text
        .lines()
        .skip(1)
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["seq"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert!(
        seqs.windows(2).all(|p| p[1] == p[0] + 1),
        "seq stays monotonic: {seqs:?}"
    );
}

#[tokio::test]
async fn one_writer_per_session_across_processes() {
    let w = World::new();
    let mut a = w.client().await;
    let s = sid(&a.new_session(&w.ws()).await);
    // Prompted, so that it is listed (`session/list` leaves out sessions nobody prompted).
    a.request("session/prompt", text_prompt(&s, "hello"))
        .await
        .ok();
    let mut b = w.client().await;
    let r = b
        .request(
            "session/load",
            json!({"sessionId": s, "cwd": w.ws(), "mcpServers": []}),
        )
        .await;
    assert_eq!(r.code(), -32602);
    assert!(
        r.message().contains("another ferrite process"),
        "{}",
        r.message()
    );
    // Listing reads without locking.
    let list = b.request("session/list", json!({})).await.ok();
    assert_eq!(list["sessions"].as_array().unwrap().len(), 1);
    // The lock dies with the process.
    a.kill().await;
    a.wait_exit(Duration::from_secs(5)).await;
    assert!(
        b.request(
            "session/load",
            json!({"sessionId": s, "cwd": w.ws(), "mcpServers": []})
        )
        .await
        .result
        .is_some()
    );
}

#[tokio::test]
async fn eof_flushes_every_session() {
    let w = World::new();
    let mut c = w.client().await;
    let mut ids = vec![];
    for i in 0..3 {
        let s = sid(&c.new_session(&w.ws()).await);
        c.request("session/prompt", text_prompt(&s, &format!("hello {i}")))
            .await
            .ok();
        ids.push(s);
    }
    c.close_stdin().await;
    let status = c.wait_exit(Duration::from_secs(5)).await.expect("exit");
    assert!(status.success());
    for (i, s) in ids.iter().enumerate() {
        let text = std::fs::read_to_string(w.session_file(s)).unwrap();
        assert!(
            text.contains(&format!("hello {i}")) && text.contains("turn_end"),
            "{text}"
        );
    }
}

/// A subagent's log is synced off its parent's path, but the parent records the task's result
/// only once the child's log holds (durably) everything it says: when the editor sees the
/// task's card complete, the child's log already ends with its answer and its turn's end.
#[tokio::test]
async fn a_task_s_result_comes_after_the_child_s_whole_log() {
    use super::turns::{Api, provider_env};
    use ferrite_test_support::fake_provider::{FakeProvider, Script};

    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    let mut c = world.spawn_acp(provider_env(&fake, Api::Anthropic));
    let caps = json!({"fs": {"readTextFile": false, "writeTextFile": false}, "subagents": {}});
    c.request(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": caps}),
    )
    .await
    .ok();
    let parent = sid(&c.new_session(&world.ws()).await);
    let task = json!({"description": "look", "prompt": "Say done."}).to_string();
    fake.push(Script::new().tool_call("t1", "task", task));
    fake.push(Script::new().text("The child is done."));
    fake.push(Script::new().text("All done."));
    let id = c
        .send_request("session/prompt", text_prompt(&parent, "delegate it"))
        .await;
    let announce = c
        .wait_for(Duration::from_secs(10), |m| {
            m["params"]["update"]["sessionUpdate"] == "subagent_update"
        })
        .await
        .expect("the child announced");
    let child = announce["params"]["update"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    c.wait_for(Duration::from_secs(10), |m| {
        m["params"]["sessionId"] == parent.as_str()
            && m["params"]["update"]["toolCallId"] == "t1"
            && m["params"]["update"]["status"] == "completed"
    })
    .await
    .expect("the task's card completes");
    // Read at once, before the parent's turn ends.
    let log = std::fs::read_to_string(world.session_file(&child)).unwrap();
    let kinds: Vec<String> = log
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["type"].to_string())
        .collect();
    assert_eq!(
        kinds.last().map(String::as_str),
        Some("\"turn_end\""),
        "{log}"
    );
    assert!(log.contains("The child is done."), "{log}");
    let (_, answer) = c.collect_until_answer(&id).await;
    assert_eq!(answer.ok()["stopReason"], "end_turn");
}
