//! MCP servers from the editor and from config, through the real binary: their tools reach the
//! model, calls round-trip, and a broken server never takes the session down.

use std::time::{Duration, Instant};

use ferrite_test_support::fake_provider::{FakeProvider, Script};
use ferrite_test_support::mcp_server::{start_http_with_auth, stdio_server_bin};
use ferrite_test_support::{AcpClient, agent_text};
use serde_json::{Value, json};

use super::common::*;
use super::turns::{Api, provider_env};

pub(super) fn stdio(name: &str, args: &[&str]) -> Value {
    json!({"name": name, "command": stdio_server_bin(), "args": args, "env": []})
}

pub(super) struct Rig {
    pub(super) world: World,
    pub(super) fake: FakeProvider,
    pub(super) client: AcpClient,
    pub(super) sid: String,
    /// Messages that arrived while the session was being set up.
    pub(super) early: Vec<Value>,
}

/// A session in `auto` mode with `servers`, on a fake provider.
pub(super) async fn start(servers: Value, env_extra: &[(&str, &str)]) -> Rig {
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    let mut env = provider_env(&fake, Api::Chat);
    env.extend(
        env_extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    let mut client = world.spawn_acp(env);
    client.initialize().await;
    let t = Instant::now();
    let id = client
        .send_request(
            "session/new",
            json!({"cwd": world.ws(), "mcpServers": servers}),
        )
        .await;
    let (_, r) = client.collect_until_answer(&id).await;
    assert!(
        t.elapsed() < HANG_GUARD,
        "session/new does not wait for MCP servers"
    );
    let sid = sid(&r.ok());
    let id = client
        .send_request(
            "session/set_mode",
            json!({"sessionId": sid, "modeId": "auto"}),
        )
        .await;
    let (early, _) = client.collect_until_answer(&id).await;
    Rig {
        world,
        fake,
        client,
        sid,
        early,
    }
}

impl Rig {
    async fn prompt(&mut self) -> (Vec<Value>, Value) {
        let id = self
            .client
            .send_request("session/prompt", text_prompt(&self.sid, "use the tools"))
            .await;
        let (before, a) = self.client.collect_until_answer(&id).await;
        (before, a.ok())
    }

    fn offered_tools(&self, request: usize) -> Vec<String> {
        self.fake.requests()[request].body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
            .collect()
    }

    fn tool_messages(&self, request: usize) -> Vec<String> {
        self.fake.requests()[request].body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap().to_owned())
            .collect()
    }
}

#[tokio::test]
async fn stdio_server_tools_round_trip() {
    let mut r = start(json!([stdio("files", &[])]), &[]).await;
    r.fake.push(Script::new().parallel_tool_calls(&[
        ("m1", "mcp__files__echo", r#"{"text":"hi from mcp"}"#),
        ("m2", "mcp__files__add", r#"{"a":2,"b":40}"#),
        ("m3", "mcp__files__fail", "{}"),
        ("m4", "mcp__files__image", "{}"),
    ]));
    r.fake.push(Script::new().text("done"));
    let (before, answer) = r.prompt().await;
    assert_eq!(answer["stopReason"], "end_turn");
    let tools = r.offered_tools(0);
    assert!(
        tools.contains(&"mcp__files__echo".to_owned()) && tools.contains(&"read".to_owned()),
        "{tools:?}"
    );
    let schema = r.fake.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "mcp__files__add")
        .unwrap()["function"]["parameters"]
        .clone();
    assert_eq!(schema["type"], "object");
    let results = r.tool_messages(1);
    assert!(results[0].contains("hi from mcp"), "{results:?}");
    assert!(results[1].contains("42"), "{results:?}");
    let failed: Vec<String> = ferrite_test_support::updates(&before)
        .into_iter()
        .filter(|(k, u)| k == "tool_call_update" && u["status"] == "failed")
        .map(|(_, u)| u["toolCallId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(failed, ["m3"]);
    let image = ferrite_test_support::updates(&before)
        .into_iter()
        .rev()
        .find(|(k, u)| k == "tool_call_update" && u["toolCallId"] == "m4")
        .unwrap()
        .1;
    let blocks: Vec<&str> = image["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["content"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        blocks,
        ["text", "image"],
        "the editor gets the image itself: {image}"
    );
    assert!(
        r.tool_messages(1)[3].contains("[image: image/png"),
        "the model gets a description"
    );
    // ... and the image itself, as user content right after the tool results.
    let msgs = r.fake.requests()[1].body["messages"].clone();
    let last = msgs.as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "user", "{last}");
    assert!(
        last["content"]
            .to_string()
            .contains("\"type\":\"image_url\""),
        "the model sees the image: {last}"
    );
    assert!(last["content"].to_string().contains("m4"), "{last}");
    let title = ferrite_test_support::updates(&before)
        .into_iter()
        .find(|(k, u)| k == "tool_call" && u["toolCallId"] == "m1")
        .unwrap()
        .1;
    assert!(
        title["title"].as_str().unwrap().contains("files"),
        "{title}"
    );
}

/// A server that never answers `initialize`, given ten minutes to start: `session/new` answers
/// without it (`start` fails past the hang guard).
#[tokio::test]
async fn session_new_does_not_wait_for_a_server_that_never_initializes() {
    let servers = json!([stdio("mute", &["--never-initialize"])]);
    let r = start(servers, &[("FERRITE_MCP_STARTUP_TIMEOUT_MS", "600000")]).await;
    assert!(!r.sid.is_empty());
}

#[tokio::test]
async fn broken_servers_are_isolated_and_reported() {
    let servers = json!([
        {"name": "ghost", "command": "/definitely/not/a/server", "args": [], "env": []},
        stdio("mute", &["--never-initialize"]),
        stdio("good", &[]),
    ]);
    let mut r = start(servers, &[("FERRITE_MCP_STARTUP_TIMEOUT_MS", "1500")]).await;
    r.fake
        .push(Script::new().tool_call("g1", "mcp__good__echo", r#"{"text":"still fine"}"#));
    r.fake.push(Script::new().text("ok"));
    let (before, answer) = r.prompt().await;
    assert_eq!(answer["stopReason"], "end_turn");
    let all = [r.early.clone(), before.clone(), r.client.drain(QUIET).await].concat();
    let text = agent_text(&all);
    assert!(
        text.contains("ghost") && text.contains("failed to start"),
        "{text}"
    );
    assert!(text.contains("mute"), "{text}");
    let tools = r.offered_tools(0);
    assert!(tools.iter().any(|t| t == "mcp__good__echo"));
    assert!(
        !tools
            .iter()
            .any(|t| t.starts_with("mcp__ghost") || t.starts_with("mcp__mute"))
    );
    assert!(r.tool_messages(1)[0].contains("still fine"));
}

#[tokio::test]
async fn a_server_that_crashes_mid_call_gives_an_error_result() {
    let mut r = start(json!([stdio("flaky", &[]), stdio("steady", &[])]), &[]).await;
    r.fake
        .push(Script::new().tool_call("c1", "mcp__flaky__crash", "{}"));
    r.fake
        .push(Script::new().tool_call("c2", "mcp__flaky__echo", r#"{"text":"x"}"#));
    r.fake
        .push(Script::new().tool_call("c3", "mcp__steady__echo", r#"{"text":"alive"}"#));
    r.fake.push(Script::new().text("recovered"));
    let (before, answer) = r.prompt().await;
    assert_eq!(answer["stopReason"], "end_turn");
    assert!(
        r.tool_messages(2).iter().any(|m| m.contains("not running")),
        "{:?}",
        r.tool_messages(2)
    );
    assert!(r.tool_messages(3).iter().any(|m| m.contains("alive")));
    assert!(agent_text(&before).contains("recovered"));
}

fn alive(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
}

#[tokio::test]
async fn close_and_eof_leave_no_server_behind() {
    for ending in ["close", "eof"] {
        let mut r = start(json!([stdio("p", &["--grandchild"])]), &[]).await;
        r.fake
            .push(Script::new().tool_call("p1", "mcp__p__pid", "{}"));
        r.fake.push(Script::new().text("ok"));
        r.prompt().await;
        let out = r.tool_messages(1)[0].clone();
        let pids: Vec<u64> = out
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|s| s.parse().ok())
            .filter(|p| *p > 1)
            .collect();
        assert!(!pids.is_empty(), "{out}");
        assert!(pids.iter().all(|p| alive(*p)));
        if ending == "close" {
            r.client
                .request("session/close", json!({"sessionId": r.sid}))
                .await
                .ok();
        } else {
            r.client.close_stdin().await;
            assert!(
                r.client
                    .wait_exit(Duration::from_secs(10))
                    .await
                    .unwrap()
                    .success()
            );
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while pids.iter().any(|p| alive(*p)) {
            assert!(
                Instant::now() < deadline,
                "{ending}: server processes {pids:?} survived"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        drop(r.world);
    }
}

#[tokio::test]
async fn http_servers_get_the_clients_headers() {
    let (url, _server) = start_http_with_auth(Some("Bearer s3cret")).await;
    let servers = json!([
        {"type": "http", "name": "web", "url": url, "headers": [{"name": "Authorization", "value": "Bearer s3cret"}]},
        {"type": "http", "name": "nokey", "url": url, "headers": []},
    ]);
    let mut r = start(servers, &[]).await;
    r.fake
        .push(Script::new().tool_call("h1", "mcp__web__echo", r#"{"text":"over http"}"#));
    r.fake.push(Script::new().text("ok"));
    let (before, _) = r.prompt().await;
    assert!(r.tool_messages(1)[0].contains("over http"));
    let tools = r.offered_tools(0);
    assert!(
        !tools.iter().any(|t| t.starts_with("mcp__nokey")),
        "unauthorized server absent: {tools:?}"
    );
    let text = agent_text(&[r.early.clone(), before, r.client.drain(QUIET).await].concat());
    assert!(text.contains("nokey"), "its failure is shown: {text}");
}

#[tokio::test]
async fn mcp_calls_follow_the_permission_policy() {
    let mut r = start(json!([stdio("s", &[])]), &[]).await;
    r.client
        .request(
            "session/set_mode",
            json!({"sessionId": r.sid, "modeId": "ask"}),
        )
        .await
        .ok();
    r.fake
        .push(Script::new().tool_call("a1", "mcp__s__echo", r#"{"text":"one"}"#));
    r.fake
        .push(Script::new().tool_call("a2", "mcp__s__echo", r#"{"text":"two"}"#));
    r.fake.push(Script::new().text("ok"));
    let prompt = r
        .client
        .send_request("session/prompt", text_prompt(&r.sid, "go"))
        .await;
    let req = r
        .client
        .wait_for(Duration::from_secs(10), |m| {
            m["method"] == "session/request_permission"
        })
        .await
        .unwrap();
    let always = req["params"]["options"][1].clone();
    assert_eq!(always["kind"], "allow_always");
    assert!(
        always["name"]
            .as_str()
            .unwrap()
            .contains("the MCP tool echo of server s in this workspace"),
        "{always}"
    );
    r.client
        .respond(
            &req["id"],
            json!({"outcome": {"outcome": "selected", "optionId": "allow_always"}}),
        )
        .await;
    let (before, answer) = r.client.collect_until_answer(&prompt).await;
    answer.ok();
    assert!(
        before
            .iter()
            .all(|m| m["method"] != "session/request_permission"),
        "the second call is not asked"
    );
    assert!(r.tool_messages(2).iter().any(|m| m.contains("two")));

    // A deny rule in config wins even in full mode.
    r.world
        .write_config("[permissions]\ndeny = [\"mcp__s__*\"]\n");
    r.client
        .request(
            "session/set_mode",
            json!({"sessionId": r.sid, "modeId": "full"}),
        )
        .await
        .ok();
    r.fake
        .push(Script::new().tool_call("a3", "mcp__s__echo", r#"{"text":"three"}"#));
    r.fake.push(Script::new().text("ok"));
    r.prompt().await;
    assert!(
        r.tool_messages(4)
            .iter()
            .any(|m| m.contains("denied by the rule"))
    );
}

#[tokio::test]
async fn servers_from_config_start_too() {
    let world = World::new();
    world.write_config(&format!(
        "[mcp_servers.conf]\ncommand = \"{}\"\nargs = []\n",
        stdio_server_bin().display()
    ));
    let fake = FakeProvider::start().await.unwrap();
    let mut client = world.spawn_acp(provider_env(&fake, Api::Chat));
    client.initialize().await;
    let s = sid(&client.new_session(&world.ws()).await);
    fake.push(Script::new().text("hi"));
    client
        .request("session/prompt", text_prompt(&s, "x"))
        .await
        .ok();
    assert!(
        fake.requests()[0].body["tools"]
            .to_string()
            .contains("mcp__conf__echo")
    );
}

#[tokio::test]
async fn clients_that_take_notices_get_a_notice() {
    let world = World::new();
    let mut c = world.spawn();
    c.request(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {"session": {"notices": {}}}}),
    )
    .await
    .ok();
    let servers = json!([{"name": "ghost", "command": "/no/such/server", "args": [], "env": []}]);
    c.request(
        "session/new",
        json!({"cwd": world.ws(), "mcpServers": servers}),
    )
    .await
    .ok();
    let notice = c
        .wait_for(Duration::from_secs(10), |m| {
            m["params"]["update"]["sessionUpdate"] == "notice"
        })
        .await
        .expect("a notice");
    assert!(notice["params"]["update"].to_string().contains("ghost"));
}

/// A server that says its tools changed (`notifications/tools/list_changed`) has them listed
/// again: the next turn offers the new ones. Changed prompts become commands at once.
#[tokio::test]
async fn a_server_s_changed_tools_are_offered_from_the_next_turn() {
    let mut r = start(json!([stdio("vault", &["--unlockable"])]), &[]).await;
    r.fake
        .push(Script::new().tool_call("u1", "mcp__vault__unlock", "{}".to_owned()));
    r.fake.push(Script::new().text("unlocked"));
    let (_, answer) = r.prompt().await;
    assert_eq!(answer["stopReason"], "end_turn");
    assert!(
        r.tool_messages(1)[0].contains("list_changed sent: true"),
        "{:?}",
        r.tool_messages(1)
    );
    assert!(!r.offered_tools(0).contains(&"mcp__vault__door".to_owned()));
    // Its prompts changed too: the session's commands follow without a turn.
    let commands = r
        .client
        .wait_for(Duration::from_secs(10), |m| {
            m["params"]["update"]["sessionUpdate"] == "available_commands_update"
                && m["params"]["update"].to_string().contains("knock")
        })
        .await
        .expect("the new prompt among the commands");
    assert!(
        commands.to_string().contains("mcp__vault__knock"),
        "{commands}"
    );
    r.fake
        .push(Script::new().tool_call("d1", "mcp__vault__door", "{}".to_owned()));
    r.fake.push(Script::new().text("opened"));
    let (_, answer) = r.prompt().await;
    assert_eq!(answer["stopReason"], "end_turn");
    assert!(
        r.offered_tools(2).contains(&"mcp__vault__door".to_owned()),
        "{:?}",
        r.offered_tools(2)
    );
    assert!(
        r.tool_messages(3)
            .iter()
            .any(|m| m.contains("the door opens"))
    );
}
