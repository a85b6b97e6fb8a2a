//! Whole turns through the real binary against the fake provider, for each wire API: what the
//! editor saw, and what the provider was sent.

use std::time::Duration;

use ferrite_test_support::fake_provider::{FakeProvider, RecordedRequest, Script};
use ferrite_test_support::{AcpClient, agent_text, updates};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    Anthropic,
    Responses,
    Chat,
}

pub const ALL: [Api; 3] = [Api::Anthropic, Api::Responses, Api::Chat];

impl Api {
    pub fn model(self) -> &'static str {
        match self {
            Api::Anthropic => "anthropic/claude-sonnet-4-5",
            Api::Responses => "openai/gpt-5",
            Api::Chat => "openai-chat/gpt-4o",
        }
    }
}

pub struct Rig {
    pub world: World,
    pub fake: FakeProvider,
    pub client: AcpClient,
    pub sid: String,
}

pub fn provider_env(fake: &FakeProvider, api: Api) -> Vec<(String, String)> {
    let base = fake.base_url();
    vec![
        ("ANTHROPIC_BASE_URL".into(), base.clone()),
        ("ANTHROPIC_API_KEY".into(), "test-anthropic-key".into()),
        ("OPENAI_BASE_URL".into(), format!("{base}/v1")),
        ("OPENAI_API_KEY".into(), "test-openai-key".into()),
        ("FERRITE_MODEL".into(), api.model().into()),
        ("FERRITE_RETRY_BASE_MS".into(), "20".into()),
        ("FERRITE_STREAM_IDLE_TIMEOUT_MS".into(), "5000".into()),
    ]
}

pub async fn rig_with(api: Api, extra: &[(&str, &str)]) -> Rig {
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    let mut env = provider_env(&fake, api);
    env.extend(
        extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    let mut client = world.spawn_acp(env);
    client.initialize().await;
    let sid = sid(&client.new_session(&world.ws()).await);
    Rig {
        world,
        fake,
        client,
        sid,
    }
}

pub async fn rig(api: Api) -> Rig {
    rig_with(api, &[]).await
}

impl Rig {
    /// Sends a prompt and returns the messages before the answer, and the answer.
    pub async fn prompt(&mut self, text: &str) -> (Vec<Value>, Value) {
        self.prompt_with(json!({"sessionId": self.sid, "prompt": [{"type": "text", "text": text}]}))
            .await
    }

    pub async fn prompt_with(&mut self, params: Value) -> (Vec<Value>, Value) {
        let id = self.client.send_request("session/prompt", params).await;
        let (before, answer) = self.client.collect_until_answer(&id).await;
        (before, answer.ok())
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.fake.requests()
    }
}

fn kinds(messages: &[Value]) -> Vec<String> {
    updates(messages).into_iter().map(|(k, _)| k).collect()
}

fn thoughts(messages: &[Value]) -> String {
    updates(messages)
        .into_iter()
        .filter(|(k, _)| k == "agent_thought_chunk")
        .filter_map(|(_, u)| u["content"]["text"].as_str().map(str::to_owned))
        .collect()
}

/// The text of every user/system input of a recorded request, flattened, for `contains` checks.
pub(super) fn body_text(r: &RecordedRequest) -> String {
    r.body.to_string()
}

#[tokio::test]
async fn text_and_thinking_stream_to_the_editor_for_each_api() {
    for api in ALL {
        let mut r = rig(api).await;
        std::fs::write(r.world.ws().join("AGENTS.md"), "Always answer in haiku.").unwrap();
        r.fake.push(
            Script::new()
                .thinking("pondering", "sig-1")
                .text("Hel")
                .text("lo")
                .usage(100, 5, 0),
        );
        let (before, answer) = r.prompt("Say hello").await;
        assert_eq!(agent_text(&before), "Hello", "{api:?}");
        assert_eq!(thoughts(&before), "pondering", "{api:?}");
        assert_eq!(
            answer,
            json!({"stopReason": "end_turn", "usage": {"totalTokens": 105, "inputTokens": 100,
                "outputTokens": 5, "cachedReadTokens": 0, "cachedWriteTokens": 0}}),
            "{api:?}: a clean turn has no turnFailure"
        );
        // The last one: the first is the session's opening `usage_update` (0 tokens).
        let usage = updates(&before)
            .into_iter()
            .rfind(|(k, _)| k == "usage_update")
            .expect("usage_update")
            .1;
        assert_eq!(usage["used"], 105, "{api:?}");
        let window = match api {
            Api::Anthropic => 200_000,
            Api::Responses => 400_000,
            Api::Chat => 128_000,
        };
        assert_eq!(usage["size"], window, "{api:?}");

        let reqs = r.requests();
        assert_eq!(reqs.len(), 1);
        let req = &reqs[0];
        match api {
            Api::Anthropic => {
                assert_eq!(req.path, "/v1/messages");
                assert_eq!(req.header("x-api-key"), Some("test-anthropic-key"));
                assert_eq!(req.body["model"], "claude-sonnet-4-5");
            }
            Api::Responses => {
                assert_eq!(req.path, "/v1/responses");
                assert_eq!(req.header("authorization"), Some("Bearer test-openai-key"));
                assert_eq!(req.body["store"], false);
                assert_eq!(req.body["model"], "gpt-5");
            }
            Api::Chat => {
                assert_eq!(req.path, "/v1/chat/completions");
                assert_eq!(req.body["model"], "gpt-4o");
            }
        }
        let text = body_text(req);
        assert!(
            text.contains("Always answer in haiku."),
            "{api:?}: AGENTS.md in the system prompt"
        );
        assert!(text.contains("Say hello"));
        assert!(text.contains("update_plan"), "{api:?}: tools are offered");
    }
}

pub(super) fn plan_args() -> String {
    json!({"entries": [
        {"content": "Read the code", "status": "completed"},
        {"content": "Fix the bug", "status": "in_progress", "priority": "high"}
    ]})
    .to_string()
}

/// The request after a tool call: the call and its result, paired in the API's own way.
fn the_result_goes_back_paired_with_its_call(second: &Value, api: Api) {
    match api {
        Api::Anthropic => {
            let msgs = second["messages"].as_array().unwrap();
            let assistant = &msgs[msgs.len() - 2];
            assert_eq!(assistant["role"], "assistant");
            assert!(assistant["content"].to_string().contains("\"tool_use\""));
            let result = &msgs[msgs.len() - 1]["content"][0];
            assert_eq!(
                (result["type"].as_str(), result["tool_use_id"].as_str()),
                (Some("tool_result"), Some("call_1"))
            );
        }
        Api::Responses => {
            let input = second["input"].as_array().unwrap();
            let call_pos = input
                .iter()
                .position(|i| i["type"] == "function_call" && i["call_id"] == "call_1")
                .expect("call");
            let out = &input[call_pos + 1];
            assert_eq!(
                (out["type"].as_str(), out["call_id"].as_str()),
                (Some("function_call_output"), Some("call_1"))
            );
        }
        Api::Chat => {
            let msgs = second["messages"].as_array().unwrap();
            let assistant = msgs.iter().find(|m| m["role"] == "assistant").unwrap();
            assert_eq!(assistant["tool_calls"][0]["id"], "call_1");
            let tool = msgs.iter().find(|m| m["role"] == "tool").unwrap();
            assert_eq!(tool["tool_call_id"], "call_1");
            assert!(tool["content"].as_str().unwrap().contains("Plan updated"));
        }
    }
}

#[tokio::test]
async fn tool_calls_run_and_their_results_go_back_paired() {
    for api in ALL {
        let mut r = rig(api).await;
        r.fake.push(Script::new().text("Planning.").tool_call(
            "call_1",
            "update_plan",
            plan_args(),
        ));
        r.fake.push(Script::new().text("Done."));
        let (before, answer) = r.prompt("make a plan").await;
        assert_eq!(answer["stopReason"], "end_turn");
        let ups = updates(&before);
        // The plan shows once, as the `plan` update: no tool call card with its JSON.
        assert!(
            ups.iter()
                .all(|(k, _)| k != "tool_call" && k != "tool_call_update"),
            "{api:?}: {ups:?}"
        );
        let plan = ups
            .iter()
            .find(|(k, _)| k == "plan")
            .expect("plan")
            .1
            .clone();
        assert_eq!(
            plan["entries"][1],
            json!({"content": "Fix the bug", "status": "in_progress", "priority": "high"})
        );
        // Two responses, apart: `update_plan` shows no card between them.
        assert_eq!(agent_text(&before), "Planning.\n\nDone.");

        let reqs = r.requests();
        assert_eq!(reqs.len(), 2, "{api:?}");
        the_result_goes_back_paired_with_its_call(&reqs[1].body, api);
        // The plan is replayed on load in a new process, again without a card.
        r.client.close_stdin().await;
        r.client.wait_exit(Duration::from_secs(5)).await.unwrap();
        let mut c = r.world.client().await;
        let id = c
            .send_request(
                "session/load",
                json!({"sessionId": r.sid, "cwd": r.world.ws(), "mcpServers": []}),
            )
            .await;
        let (replay, answer) = c.collect_until_answer(&id).await;
        answer.ok();
        let k = kinds(&replay);
        assert_eq!(
            k,
            [
                "user_message_chunk",
                "agent_message_chunk",
                "plan",
                "agent_message_chunk"
            ],
            "{api:?}"
        );
    }
}

/// The history as the provider was sent it, without the prompt-caching marks (they move to the
/// newest message on every request).
fn history_sent(r: &RecordedRequest, api: Api) -> Vec<Value> {
    fn unmarked(v: &Value) -> Value {
        match v {
            Value::Object(o) => (o.iter())
                .filter(|(k, _)| *k != "cache_control")
                .map(|(k, v)| (k.clone(), unmarked(v)))
                .collect(),
            Value::Array(a) => a.iter().map(unmarked).collect(),
            v => v.clone(),
        }
    }
    let key = if api == Api::Responses {
        "input"
    } else {
        "messages"
    };
    let history = r.body[key]
        .as_array()
        .unwrap_or_else(|| panic!("{api:?}: {}", r.body));
    history.iter().map(unmarked).collect()
}

/// A history over the size at which the agent keeps a body's buffer for the next request
/// (which then keeps what did not change and writes the rest): every request of two turns with
/// tool calls carries the last one's history, element for element, then what is new.
#[tokio::test]
async fn every_request_of_a_long_session_repeats_the_last_ones_history_exactly() {
    let long: String = (0..8000)
        .map(|i| format!("line {i}: \"quoted\" \\ tab\t é 😀 <b>&amp;</b>\n"))
        .collect();
    assert!(long.len() > 300_000);
    for api in ALL {
        let mut r = rig(api).await;
        for prompt in [long.as_str(), "again"] {
            r.fake.push(Script::new().text("Planning.").tool_call(
                "call_1",
                "update_plan",
                plan_args(),
            ));
            r.fake.push(Script::new().text("Done."));
            let (_, answer) = r.prompt(prompt).await;
            assert_eq!(answer["stopReason"], "end_turn", "{api:?}");
        }
        let histories: Vec<Vec<Value>> =
            r.requests().iter().map(|q| history_sent(q, api)).collect();
        assert_eq!(histories.len(), 4, "{api:?}");
        for (i, pair) in histories.windows(2).enumerate() {
            let (last, next) = (&pair[0], &pair[1]);
            assert!(next.len() > last.len(), "{api:?} request {}", i + 2);
            // A Messages API turn of tool results and the next prompt are one `user` turn.
            let merged = api == Api::Anthropic && i == 1;
            let same = last.len() - usize::from(merged);
            assert_eq!(next[..same], last[..same], "{api:?} request {}", i + 2);
        }
        let sent = histories[3]
            .iter()
            .map(Value::to_string)
            .collect::<String>();
        let long_json = Value::from(long.as_str()).to_string();
        assert_eq!(
            sent.matches(&long_json).count(),
            1,
            "{api:?}: the long prompt once, whole"
        );
    }
}

#[tokio::test]
async fn bad_tool_calls_are_reported_to_the_model_not_fatal() {
    let mut r = rig(Api::Chat).await;
    r.fake.push(Script::new().parallel_tool_calls(&[
        ("c1", "no_such_tool", "{}"),
        ("c2", "update_plan", "{\"entries\": 5}"),
    ]));
    r.fake.push(Script::new().text("Sorry."));
    let (before, answer) = r.prompt("go").await;
    assert_eq!(answer["stopReason"], "end_turn");
    let failed: Vec<String> = updates(&before)
        .into_iter()
        .filter(|(k, u)| k == "tool_call_update" && u["status"] == "failed")
        .map(|(_, u)| u["toolCallId"].as_str().unwrap().to_owned())
        .collect();
    // update_plan has no card even when it fails; the model is told (below).
    assert_eq!(failed, ["c1"]);
    let msgs = r.requests()[1].body["messages"].as_array().unwrap().clone();
    let tools: Vec<&Value> = msgs.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[0]["tool_call_id"], "c1");
    assert!(
        tools[0]["content"]
            .as_str()
            .unwrap()
            .contains("Unknown tool `no_such_tool`")
    );
    assert!(
        tools[1]["content"]
            .as_str()
            .unwrap()
            .contains("invalid update_plan arguments")
    );
}

#[tokio::test]
async fn effort_web_search_and_per_turn_knobs_reach_the_provider() {
    let mut r = rig(Api::Anthropic).await;
    r.client
        .request(
            "session/set_config_option",
            json!({"sessionId": r.sid, "configId": "reasoning_effort", "value": "high"}),
        )
        .await
        .ok();
    r.fake.push(
        Script::new()
            .web_search("ws_1", "acp protocol")
            .text("found it"),
    );
    let (before, _) = r
        .prompt_with(json!({"sessionId": r.sid, "prompt": [{"type": "text", "text": "search"}], "_meta": {"web_search": true}}))
        .await;
    let body = &r.requests()[0].body;
    assert_eq!(body["thinking"]["type"], "enabled");
    let high = body["thinking"]["budget_tokens"].as_u64().unwrap();
    assert!(
        body["tools"].to_string().contains("web_search"),
        "{}",
        body["tools"]
    );
    let fetch = updates(&before)
        .into_iter()
        .find(|(k, u)| k == "tool_call" && u["kind"] == "fetch")
        .expect("web search shown as fetch")
        .1;
    assert!(fetch["title"].as_str().unwrap().contains("acp protocol"));

    r.fake.push(Script::new().text("quick"));
    r.prompt_with(json!({"sessionId": r.sid, "prompt": [{"type": "text", "text": "q"}], "_meta": {"reasoning_effort": "low"}})).await;
    let body = &r.requests()[1].body;
    let low = body["thinking"]["budget_tokens"].as_u64().unwrap();
    assert!(low < high, "per-turn effort overrides: {low} vs {high}");
    assert!(
        !body["tools"].to_string().contains("web_search"),
        "per-turn web search applied to that turn only"
    );

    r.fake.push(Script::new().text("default"));
    r.client
        .request(
            "session/set_config_option",
            json!({"sessionId": r.sid, "configId": "reasoning_effort", "value": "default"}),
        )
        .await
        .ok();
    r.prompt("d").await;
    assert!(
        r.requests()[2].body.get("thinking").is_none(),
        "default effort sends no thinking"
    );
}

#[tokio::test]
async fn responses_effort_and_model_override() {
    let mut r = rig(Api::Responses).await;
    r.client
        .request(
            "session/set_config_option",
            json!({"sessionId": r.sid, "configId": "reasoning_effort", "value": "medium"}),
        )
        .await
        .ok();
    r.fake.push(Script::new().text("a"));
    r.prompt("x").await;
    assert_eq!(r.requests()[0].body["reasoning"]["effort"], "medium");
    r.fake.push(Script::new().text("b"));
    r.prompt_with(json!({"sessionId": r.sid, "prompt": [{"type": "text", "text": "y"}], "_meta": {"model": "openai/gpt-4.1"}})).await;
    let body = &r.requests()[1].body;
    assert_eq!(body["model"], "gpt-4.1");
    assert!(
        body.get("include").is_none(),
        "no reasoning include for a non-reasoning model"
    );
}

#[tokio::test]
async fn images_links_and_embedded_resources_are_sent_in_the_provider_format() {
    let mut r = rig(Api::Anthropic).await;
    let file = r.world.ws().join("notes.txt");
    std::fs::write(&file, "the secret sauce is ketchup").unwrap();
    r.fake.push(Script::new().text("seen"));
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
    r.prompt_with(json!({"sessionId": r.sid, "prompt": [
        {"type": "text", "text": "look"},
        {"type": "image", "mimeType": "image/png", "data": png},
        {"type": "resource_link", "uri": format!("file://{}", file.display()), "name": "notes.txt"},
        {"type": "resource", "resource": {"uri": "file:///x/embedded.md", "text": "embedded words", "mimeType": "text/markdown"}}
    ]}))
    .await;
    let msgs = r.requests()[0].body["messages"].clone();
    let content = msgs[0]["content"].as_array().unwrap();
    let image = content
        .iter()
        .find(|b| b["type"] == "image")
        .expect("image block");
    assert_eq!(image["source"]["type"], "base64");
    assert_eq!(image["source"]["media_type"], "image/png");
    assert_eq!(image["source"]["data"], png);
    let text = msgs.to_string();
    assert!(
        text.contains("the secret sauce is ketchup"),
        "the linked file's content is sent"
    );
    assert!(text.contains("embedded words"));
    // The editor's replay still shows a link, not the file's text.
    r.client.close_stdin().await;
    r.client.wait_exit(Duration::from_secs(5)).await.unwrap();
    let mut c = r.world.client().await;
    let id = c
        .send_request(
            "session/load",
            json!({"sessionId": r.sid, "cwd": r.world.ws(), "mcpServers": []}),
        )
        .await;
    let (replay, _) = c.collect_until_answer(&id).await;
    let blocks: Vec<String> = updates(&replay)
        .into_iter()
        .filter(|(k, _)| k == "user_message_chunk")
        .map(|(_, u)| u["content"]["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(blocks, ["text", "image", "resource_link", "resource"]);
}
