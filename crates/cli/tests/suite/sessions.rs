//! The session lifecycle: new, prompt without a provider, list, load (replay), resume (none),
//! close, delete, fork, and hostile ids.

use std::time::Duration;

use ferrite_test_support::updates;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::*;

#[tokio::test]
async fn new_session_answers_modes_and_options_then_commands() {
    let w = World::new();
    std::fs::create_dir_all(w.ws().join(".ferrite/commands")).unwrap();
    std::fs::write(
        w.ws().join(".ferrite/commands/review-diff.md"),
        "# Review the diff\nLook at it.",
    )
    .unwrap();
    let mut c = w.client().await;
    let id = c
        .send_request("session/new", json!({"cwd": w.ws(), "mcpServers": []}))
        .await;
    let (before, answer) = c.collect_until_answer(&id).await;
    assert!(
        updates(&before).is_empty(),
        "no update before the session id is known"
    );
    let r = answer.ok();
    let sid = sid(&r);
    assert_eq!(r["_meta"]["ferrite"]["sessionId"], sid.as_str());
    assert_eq!(r["modes"]["currentModeId"], "ask");
    let ids: Vec<&str> = r["configOptions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["mode", "model", "reasoning_effort", "web_search"]);
    let cats: Vec<Value> = r["configOptions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["category"].clone())
        .collect();
    assert_eq!(
        cats[..3],
        [json!("mode"), json!("model"), json!("thought_level")]
    );
    let cmds = c
        .wait_for(Duration::from_secs(5), |m| {
            m["params"]["update"]["sessionUpdate"] == "available_commands_update"
        })
        .await
        .unwrap();
    let names: Vec<&str> = cmds["params"]["update"]["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "compact",
            "undo",
            "checkpoints",
            "rewind",
            "title",
            "init",
            "review",
            "review-diff"
        ]
    );
    assert!(w.session_file(&sid).exists());
}

#[tokio::test]
async fn new_session_validates_cwd_and_harness() {
    let w = World::new();
    let mut c = w.client().await;
    assert_eq!(
        c.request(
            "session/new",
            json!({"cwd": "relative/dir", "mcpServers": []})
        )
        .await
        .code(),
        -32602
    );
    assert_eq!(
        c.request(
            "session/new",
            json!({"cwd": "/definitely/not/here", "mcpServers": []})
        )
        .await
        .code(),
        -32602
    );
    let a = c
        .request(
            "session/new",
            json!({"cwd": w.ws(), "mcpServers": [], "_meta": {"harness": "wizard"}}),
        )
        .await;
    assert_eq!(a.code(), -32602);
    let r = c
        .request(
            "session/new",
            json!({"cwd": w.ws(), "mcpServers": [], "_meta": {"harness": "planner"}}),
        )
        .await
        .ok();
    let modes: Vec<&str> = r["modes"]["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        (r["modes"]["currentModeId"].as_str().unwrap(), modes),
        ("plan", vec!["plan"])
    );
    let r = c
        .request(
            "session/new",
            json!({"cwd": w.ws(), "mcpServers": [], "_meta": {"harness": "unattended"}}),
        )
        .await
        .ok();
    assert_eq!(r["modes"]["currentModeId"], "auto");
    assert_eq!(r["modes"]["availableModes"].as_array().unwrap().len(), 3);
    assert!(
        std::fs::read_dir(w.home().join("sessions"))
            .unwrap()
            .count()
            == 2,
        "refused sessions leave no file"
    );
}

#[tokio::test]
async fn a_chosen_model_without_a_key_needs_authentication() {
    let w = World::new();
    let mut c = w.spawn_env(&[("FERRITE_MODEL", "anthropic/claude-sonnet-4-5")]);
    c.initialize().await;
    let a = c
        .request("session/new", json!({"cwd": w.ws(), "mcpServers": []}))
        .await;
    assert_eq!(a.code(), -32000);
    assert!(a.message().contains("ANTHROPIC_API_KEY"), "{}", a.message());
    c.request(
        "authenticate",
        json!({"methodId": "api-key", "_meta": {"provider": "anthropic", "token": "k"}}),
    )
    .await
    .ok();
    assert!(
        c.request("session/new", json!({"cwd": w.ws(), "mcpServers": []}))
            .await
            .result
            .is_some()
    );
}

#[tokio::test]
async fn prompt_refusals() {
    let w = World::new();
    let mut c = w.client().await;
    let s = sid(&c.new_session(&w.ws()).await);
    let a = c
        .request("session/prompt", json!({"sessionId": s, "prompt": []}))
        .await;
    assert_eq!(a.code(), -32602);
    let a = c.request("session/prompt", json!({"sessionId": s, "prompt": [{"type": "audio", "data": "AA==", "mimeType": "audio/wav"}]})).await;
    assert_eq!(a.code(), -32602);
    let a = c.request("session/prompt", json!({"sessionId": "01234567-0000-7000-8000-000000000000", "prompt": [{"type": "text", "text": "x"}]})).await;
    assert_eq!(a.code(), -32602);
    let a = c.request("session/prompt", json!({"sessionId": s, "prompt": [{"type": "text", "text": "x"}], "_meta": {"reasoning_effort": "extreme"}})).await;
    assert_eq!(a.code(), -32602);
    let a = c.request("session/prompt", json!({"sessionId": s, "prompt": [{"type": "text", "text": "x"}], "_meta": {"model": "nobody/nothing"}})).await;
    assert_eq!(a.code(), -32602);
    let a = c.request("session/prompt", json!({"sessionId": s, "prompt": [{"type": "text", "text": "x"}], "_meta": {"model": "openai-chat/gpt-4o", "web_search": true}})).await;
    assert_eq!(a.code(), -32602);
}

#[tokio::test]
async fn hostile_session_ids_are_refused_and_never_echoed() {
    let w = World::new();
    let mut c = w.client().await;
    let outside = w.home().join("escaped");
    let hostile = [
        "../escaped",
        "../../../../etc/passwd",
        "a/b",
        "",
        "x y",
        &"z".repeat(65),
        "..",
        "é",
    ];
    for h in hostile {
        for (method, params) in [
            (
                "session/load",
                json!({"sessionId": h, "cwd": w.ws(), "mcpServers": []}),
            ),
            ("session/resume", json!({"sessionId": h, "cwd": w.ws()})),
            (
                "session/prompt",
                json!({"sessionId": h, "prompt": [{"type": "text", "text": "x"}]}),
            ),
            ("session/close", json!({"sessionId": h})),
            ("session/delete", json!({"sessionId": h})),
            ("session/set_mode", json!({"sessionId": h, "modeId": "ask"})),
            ("_ferrite/session/fork", json!({"sessionId": h})),
        ] {
            let a = c.request(method, params).await;
            assert_eq!(a.code(), -32602, "{method} {h:?}");
            if h.len() > 2 {
                assert!(
                    !a.error.as_ref().unwrap().to_string().contains(h),
                    "{method} echoed {h:?}"
                );
            }
        }
    }
    assert!(!outside.exists());
    assert!(!w.home().join("escaped.jsonl").exists());
}

/// `n` sessions in the workspace, each prompted once (the first with a messy first line).
async fn prompted_sessions(
    c: &mut ferrite_test_support::AcpClient,
    w: &World,
    n: usize,
) -> Vec<String> {
    let mut out = vec![];
    for i in 0..n {
        let s = sid(&c.new_session(&w.ws()).await);
        let text = if i == 0 {
            "  the very   first\nquestion ".to_owned()
        } else {
            format!("question {i}")
        };
        c.request("session/prompt", text_prompt(&s, &text))
            .await
            .ok();
        out.push(s);
    }
    out
}

#[tokio::test]
async fn list_filters_by_cwd_newest_first_with_a_cursor() {
    let w = World::new();
    let other = tempfile::tempdir().unwrap();
    let mut c = w.client().await;
    let mine = prompted_sessions(&mut c, &w, 53).await;
    // Sessions nobody prompted are not listed (issue 23): opened and left.
    let unprompted = sid(&c.new_session(&w.ws()).await);
    let other_cwd = std::fs::canonicalize(other.path()).unwrap();
    let s = sid(&c.new_session(&other_cwd).await);
    c.request("session/prompt", text_prompt(&s, "elsewhere"))
        .await
        .ok();
    // Touch the first session last so it is the newest.
    tokio::time::sleep(Duration::from_millis(20)).await;
    c.request("session/prompt", text_prompt(&mine[0], "more"))
        .await
        .ok();

    let page1 = c.request("session/list", json!({"cwd": w.ws()})).await.ok();
    let s1 = page1["sessions"].as_array().unwrap();
    assert_eq!(s1.len(), 50);
    assert_eq!(s1[0]["sessionId"], mine[0].as_str());
    assert_eq!(s1[0]["title"], "the very first question");
    assert!(s1.iter().all(|s| s["cwd"] == json!(w.ws())));
    let cursor = page1["nextCursor"].as_str().expect("a next page");
    let page2 = c
        .request("session/list", json!({"cwd": w.ws(), "cursor": cursor}))
        .await
        .ok();
    let s2 = page2["sessions"].as_array().unwrap();
    assert_eq!(s2.len(), 3);
    assert!(page2.get("nextCursor").is_none() || page2["nextCursor"].is_null());
    let mut all: Vec<String> = s1
        .iter()
        .chain(s2)
        .map(|s| s["sessionId"].as_str().unwrap().to_owned())
        .collect();
    all.sort();
    let mut expected = mine.clone();
    expected.sort();
    assert_eq!(all, expected, "every prompted session exactly once");
    assert!(!all.contains(&unprompted.to_string()));
    let updated: Vec<&str> = s1
        .iter()
        .chain(s2)
        .map(|s| s["updatedAt"].as_str().unwrap())
        .collect();
    assert!(updated.windows(2).all(|p| p[0] >= p[1]), "newest first");

    let everything = c.request("session/list", json!({})).await.ok();
    assert_eq!(everything["sessions"].as_array().unwrap().len(), 50);
    let cursor = everything["nextCursor"].as_str().expect("a next page");
    let rest = c
        .request("session/list", json!({"cursor": cursor}))
        .await
        .ok();
    assert_eq!(
        rest["sessions"].as_array().unwrap().len(),
        4,
        "53 here, 1 elsewhere"
    );
    assert_eq!(
        c.request("session/list", json!({"cursor": "garbage"}))
            .await
            .code(),
        -32602
    );
    assert_eq!(
        c.request("session/list", json!({"cwd": "rel"}))
            .await
            .code(),
        -32602
    );
}

/// Makes a session with some history in a first process and returns its id.
async fn session_with_history(w: &World) -> String {
    let mut c = w.client().await;
    let s = sid(&c.new_session(&w.ws()).await);
    c.request(
        "session/set_config_option",
        json!({"sessionId": s, "configId": "mode", "value": "auto"}),
    )
    .await
    .ok();
    c.request(
        "session/set_config_option",
        json!({"sessionId": s, "configId": "reasoning_effort", "value": "high"}),
    )
    .await
    .ok();
    c.request("session/prompt", text_prompt(&s, "first question"))
        .await
        .ok();
    c.request("session/prompt", text_prompt(&s, "second question"))
        .await
        .ok();
    c.close_stdin().await;
    c.wait_exit(Duration::from_secs(5)).await.expect("exit");
    s
}

#[tokio::test]
async fn load_replays_history_before_answering_and_restores_settings() {
    let w = World::new();
    let s = session_with_history(&w).await;
    let mut c = w.client().await;
    let id = c
        .send_request(
            "session/load",
            json!({"sessionId": s, "cwd": w.ws(), "mcpServers": []}),
        )
        .await;
    let (before, answer) = c.collect_until_answer(&id).await;
    let kinds: Vec<String> = updates(&before).into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        kinds,
        [
            "user_message_chunk",
            "agent_message_chunk",
            "user_message_chunk",
            "agent_message_chunk"
        ]
    );
    let users: Vec<String> = updates(&before)
        .into_iter()
        .filter(|(k, _)| k == "user_message_chunk")
        .map(|(_, u)| u["content"]["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(users, ["first question", "second question"]);
    let r = answer.ok();
    assert_eq!(r["modes"]["currentModeId"], "auto");
    assert_eq!(option_value(&r["configOptions"], "mode"), "auto");
    assert_eq!(
        option_value(&r["configOptions"], "reasoning_effort"),
        "high"
    );
    assert_eq!(r["_meta"]["ferrite"]["sessionId"], s.as_str());
    let info = c
        .wait_for(Duration::from_secs(5), |m| {
            m["params"]["update"]["sessionUpdate"] == "session_info_update"
        })
        .await
        .expect("the title after the answer");
    assert_eq!(info["params"]["update"]["title"], "first question");
    // The loaded session takes prompts.
    let r = c
        .request("session/prompt", text_prompt(&s, "third"))
        .await
        .ok();
    assert_eq!(r["stopReason"], "end_turn");
    let list = c.request("session/list", json!({})).await.ok();
    assert_eq!(list["sessions"][0]["title"], "first question");
}

#[tokio::test]
async fn resume_restores_without_replay() {
    let w = World::new();
    let s = session_with_history(&w).await;
    let mut c = w.client().await;
    let id = c
        .send_request("session/resume", json!({"sessionId": s, "cwd": w.ws()}))
        .await;
    let (before, answer) = c.collect_until_answer(&id).await;
    assert!(
        updates(&before).is_empty(),
        "resume must not replay: {before:?}"
    );
    assert_eq!(answer.ok()["modes"]["currentModeId"], "auto");
    assert!(
        c.request("session/prompt", text_prompt(&s, "go on"))
            .await
            .result
            .is_some()
    );
}

#[tokio::test]
async fn unknown_sessions_are_invalid_params_but_deleting_one_succeeds() {
    let w = World::new();
    let mut c = w.client().await;
    let ghost = "01234567-89ab-7def-8123-456789abcdef";
    assert_eq!(
        c.request(
            "session/load",
            json!({"sessionId": ghost, "cwd": w.ws(), "mcpServers": []})
        )
        .await
        .code(),
        -32602
    );
    assert_eq!(
        c.request("session/resume", json!({"sessionId": ghost, "cwd": w.ws()}))
            .await
            .code(),
        -32602
    );
    assert_eq!(
        c.request("session/close", json!({"sessionId": ghost}))
            .await
            .code(),
        -32602
    );
    // Deleting is the exception (acp-tck ACP-DELETE-002): an id that never existed is already
    // gone, so the answer is `{}`; an id that is not an id at all is still refused.
    assert_eq!(
        c.request("session/delete", json!({"sessionId": ghost}))
            .await
            .ok(),
        json!({})
    );
    for bad in ["../sessions", "a/b", "", "x.jsonl"] {
        assert_eq!(
            c.request("session/delete", json!({"sessionId": bad}))
                .await
                .code(),
            -32602,
            "{bad:?}"
        );
    }
    assert_eq!(
        c.request("_ferrite/session/fork", json!({"sessionId": ghost}))
            .await
            .code(),
        -32602
    );
}

#[tokio::test]
async fn close_frees_the_session_and_delete_removes_it() {
    let w = World::new();
    let mut c = w.client().await;
    let s = sid(&c.new_session(&w.ws()).await);
    assert_eq!(
        c.request("session/close", json!({"sessionId": s}))
            .await
            .ok(),
        json!({})
    );
    assert_eq!(
        c.request("session/prompt", text_prompt(&s, "x"))
            .await
            .code(),
        -32602
    );
    // Closed sessions can be resumed again in the same process.
    assert!(
        c.request("session/resume", json!({"sessionId": s, "cwd": w.ws()}))
            .await
            .result
            .is_some()
    );
    assert_eq!(
        c.request("session/delete", json!({"sessionId": s}))
            .await
            .ok(),
        json!({})
    );
    assert!(!w.session_file(&s).exists());
    assert_eq!(
        c.request(
            "session/load",
            json!({"sessionId": s, "cwd": w.ws(), "mcpServers": []})
        )
        .await
        .code(),
        -32602
    );
}

#[tokio::test]
async fn fork_copies_history_and_names_its_parent() {
    let w = World::new();
    let s = session_with_history(&w).await;
    let mut c = w.client().await;
    let f = c
        .request("_ferrite/session/fork", json!({"sessionId": s}))
        .await
        .ok();
    let fork = f["sessionId"].as_str().unwrap().to_owned();
    assert_ne!(fork, s);
    let header: Value = serde_json::from_str(
        std::fs::read_to_string(w.session_file(&fork))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(header["parent"], s.as_str());
    let id = c
        .send_request(
            "session/load",
            json!({"sessionId": fork, "cwd": w.ws(), "mcpServers": []}),
        )
        .await;
    let (before, answer) = c.collect_until_answer(&id).await;
    assert_eq!(
        updates(&before)
            .iter()
            .filter(|(k, _)| k == "user_message_chunk")
            .count(),
        2
    );
    let r = answer.ok();
    assert_eq!(
        r["_meta"]["ferrite"],
        json!({"sessionId": fork, "parentSessionId": s})
    );
    assert_eq!(r["modes"]["currentModeId"], "auto");
    // The fork diverges without touching the parent.
    c.request("session/prompt", text_prompt(&fork, "only in the fork"))
        .await
        .ok();
    let parent_log = std::fs::read_to_string(w.session_file(&s)).unwrap();
    assert!(!parent_log.contains("only in the fork"));
}
