//! A command drawn as a terminal, as Zed shows its own agent's commands: for a client that
//! advertises `_meta.terminal_output`, the `bash` card carries `terminal_info`, its output goes
//! out as `terminal_output` (colours kept) and its end as `terminal_exit`; every other client
//! gets the fenced text; the model's result is the same for both, without escapes.

use ferrite_test_support::fake_provider::{FakeProvider, Script};
use serde_json::{Value, json};

use super::common::*;
use super::turns::{Api, provider_env};

const COMMAND: &str = "printf '\\033[32mgreen\\033[0m\\n'; sleep 0.3; echo second";

/// One prompt whose model runs [`COMMAND`] in full mode; the messages the client saw and the
/// tool result the model got.
async fn run(terminal_client: bool) -> (Vec<Value>, String) {
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    let mut c = world.spawn_acp(provider_env(&fake, Api::Anthropic));
    let mut caps = json!({"fs": {"readTextFile": false, "writeTextFile": false}});
    if terminal_client {
        caps["_meta"] = json!({"terminal_output": true});
    }
    c.request(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": caps,
               "clientInfo": {"name": "zed-shaped", "version": "0"}}),
    )
    .await
    .ok();
    let s = sid(&c.new_session(&world.ws()).await);
    c.request(
        "session/set_mode",
        json!({"sessionId": s, "modeId": "full"}),
    )
    .await
    .ok();
    fake.push(Script::new().tool_call("t1", "bash", json!({"command": COMMAND}).to_string()));
    fake.push(Script::new().text("ran it"));
    let id = c
        .send_request("session/prompt", text_prompt(&s, "run it"))
        .await;
    let (seen, answer) = c.collect_until_answer(&id).await;
    assert_eq!(answer.ok()["stopReason"], "end_turn");
    let body = &fake.requests()[1].body;
    let result =
        body["messages"].as_array().unwrap().last().unwrap()["content"][0]["content"].to_string();
    (seen, result)
}

fn tool_updates(seen: &[Value]) -> Vec<Value> {
    seen.iter()
        .filter(|m| {
            matches!(
                m["params"]["update"]["sessionUpdate"].as_str(),
                Some("tool_call" | "tool_call_update")
            )
        })
        .map(|m| m["params"]["update"].clone())
        .collect()
}

#[tokio::test]
async fn a_terminal_client_gets_the_command_as_a_terminal_with_its_colours() {
    let (seen, result) = run(true).await;
    let updates = tool_updates(&seen);
    let card = &updates[0];
    assert_eq!(card["sessionUpdate"], "tool_call");
    assert_eq!(card["_meta"]["terminal_info"]["terminal_id"], "t1");
    assert_eq!(
        card["content"],
        json!([{"type": "terminal", "terminalId": "t1"}])
    );
    let output: String = updates
        .iter()
        .filter_map(|u| u["_meta"]["terminal_output"]["data"].as_str())
        .collect();
    assert!(
        output.contains("\u{1b}[32mgreen\u{1b}[0m\n") && output.contains("second\n"),
        "{output:?}"
    );
    for u in updates
        .iter()
        .filter(|u| !u["_meta"]["terminal_output"].is_null())
    {
        assert_eq!(u["_meta"]["terminal_output"]["terminal_id"], "t1");
        assert!(
            u["content"].is_null(),
            "the terminal stays the content: {u}"
        );
    }
    let exits: Vec<&Value> = updates
        .iter()
        .filter(|u| !u["_meta"]["terminal_exit"].is_null())
        .collect();
    assert_eq!(exits.len(), 1, "{updates:?}");
    assert_eq!(
        exits[0]["_meta"]["terminal_exit"],
        json!({"terminal_id": "t1", "exit_code": 0, "signal": null})
    );
    let last = updates.last().unwrap();
    assert_eq!(last["status"], "completed");
    assert_eq!(
        last["content"],
        json!([{"type": "terminal", "terminalId": "t1"}])
    );
    assert!(
        last["rawOutput"].is_object() || last["rawOutput"].is_string(),
        "{last}"
    );
    // The model reads the words, not the colours.
    assert!(
        result.contains("green") && result.contains("second"),
        "{result}"
    );
    assert!(
        !result.contains("\\u001b") && !result.contains("[32m"),
        "{result}"
    );
}

#[tokio::test]
async fn any_other_client_gets_the_fenced_text_and_the_same_result() {
    let (seen, result) = run(false).await;
    let text = serde_json::to_string(&seen).unwrap();
    assert!(!text.contains("terminal_"), "no terminal fields: {text}");
    let updates = tool_updates(&seen);
    let last = updates.last().unwrap();
    assert_eq!(last["status"], "completed");
    let shown = last["content"][0]["content"]["text"].as_str().unwrap();
    assert!(shown.contains("```") && shown.contains("second"), "{shown}");
    let (_, terminal_result) = run(true).await;
    assert_eq!(
        result, terminal_result,
        "the model's result does not depend on the client"
    );
}

/// A command's output may hold any escape sequence (the model chose the command, a file it read
/// chose the output). Colours reach the terminal view; sequences that act outside the drawn text
/// (OSC 52 writes the clipboard, OSC 8 hides a link's target, OSC 0 sets the title, DCS, and
/// their one-byte C1 forms; CSI sequences other than colours, cursor moves and erasing) do not.
#[tokio::test]
async fn the_terminal_view_gets_colours_but_no_clipboard_link_or_title_sequences() {
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    let mut c = world.spawn_acp(provider_env(&fake, Api::Anthropic));
    c.request(
        "initialize",
        json!({"protocolVersion": 1,
               "clientCapabilities": {"_meta": {"terminal_output": true}},
               "clientInfo": {"name": "zed-shaped", "version": "0"}}),
    )
    .await
    .ok();
    let s = sid(&c.new_session(&world.ws()).await);
    c.request(
        "session/set_mode",
        json!({"sessionId": s, "modeId": "full"}),
    )
    .await
    .ok();
    let command = "printf '\\033[31mred\\033[0m \\033]52;c;cm0gLXJmIH4=\\a\\033]8;;https://evil.example/\\033\\\\link\\033]8;;\\033\\\\ \\033]0;title\\007\\033Pq#0\\033\\\\ \\302\\2352;x\\a\\033[8;999;999t\\033[?1049h\\033[?1000h\\033[6n\\033[2K end\\n'";
    fake.push(Script::new().tool_call("t1", "bash", json!({"command": command}).to_string()));
    fake.push(Script::new().text("ok"));
    let id = c
        .send_request("session/prompt", text_prompt(&s, "run it"))
        .await;
    let (seen, answer) = c.collect_until_answer(&id).await;
    answer.ok();
    let output: String = tool_updates(&seen)
        .iter()
        .filter_map(|u| {
            u["_meta"]["terminal_output"]["data"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert!(output.contains("\u{1b}[31mred\u{1b}[0m"), "{output:?}");
    // Erasing draws; resizing the window, the alternate screen, mouse reports and status
    // reports (issue 34) act beyond the text.
    assert!(output.contains("\u{1b}[2K end"), "{output:?}");
    assert!(
        output.contains("link") && output.contains(" end"),
        "{output:?}"
    );
    for bad in [
        "\u{1b}]",
        "\u{1b}P",
        "\u{9d}",
        "evil.example",
        "cm0gLXJmIH4=",
        "[8;999",
        "[?1049h",
        "[?1000h",
        "[6n",
    ] {
        assert!(!output.contains(bad), "{bad:?} in {output:?}");
    }
}
