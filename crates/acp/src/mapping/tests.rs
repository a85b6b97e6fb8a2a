use super::*;
use ferrite_core::modes::Mode;
use serde_json::{Value, json};

#[test]
fn text_chunk_shape() {
    let u = updates(&Event::AgentMessageChunk { text: "hi".into() }, Takes::BASE);
    let line = update_line(
        &SessionId::parse("s1").unwrap(),
        u.into_iter().next().unwrap(),
    );
    let v: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(
        v,
        json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}}})
    );
}

#[test]
fn mode_update_uses_current_mode_id() {
    let u = updates(&Event::ModeChanged { mode: Mode::Auto }, Takes::BASE);
    let line = update_line(
        &SessionId::parse("s").unwrap(),
        u.into_iter().next().unwrap(),
    );
    let v: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["params"]["update"]["currentModeId"], "auto");
}

#[test]
fn what_a_call_shows_has_display_changing_characters_escaped() {
    let view = ToolCallView {
        id: "c1".into(),
        title: "rm x\u{202e}gpj".into(),
        kind: ToolKind::Edit,
        status: ToolStatus::Pending,
        locations: vec![Location {
            path: "/w/a\u{200b}b".into(),
            line: None,
        }],
        content: vec![
            ToolContent::Text {
                text: "ok\r\n\u{1b}[2K".into(),
            },
            ToolContent::Diff {
                path: "/w/a\u{200b}b".into(),
                old_text: Some("x\u{feff}".into()),
                new_text: "y\u{2066}".into(),
            },
        ],
        raw_input: Some(json!({"command": "a\u{202e}b", "n": 1})),
    };
    let v = serde_json::to_value(tool_call_as_update(&view)).unwrap();
    assert_eq!(v["title"], "rm x\\u{202e}gpj");
    assert_eq!(v["locations"][0]["path"], "/w/a\\u{200b}b");
    assert_eq!(v["content"][0]["content"]["text"], "ok\r\n\\u{1b}[2K");
    assert_eq!(v["content"][1]["path"], "/w/a\\u{200b}b");
    assert_eq!(v["content"][1]["oldText"], "x\\u{feff}");
    assert_eq!(v["content"][1]["newText"], "y\\u{2066}");
    assert_eq!(v["rawInput"], json!({"command": "a\\u{202e}b", "n": 1}));
    let card = serde_json::to_value(tool_call(&view)).unwrap();
    assert_eq!(card["title"], v["title"]);
}
