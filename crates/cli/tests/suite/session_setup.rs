//! Issue 27: what a client sets as it opens a session (schema 1.20): `systemPrompt` (append or
//! override) and `additionalDirectories` on `session/new`, `session/load`, `session/resume`,
//! and the standard `session/fork`. Each is kept in the session's log.

use std::path::Path;
use std::time::Duration;

use ferrite_test_support::AcpClient;
use ferrite_test_support::fake_provider::{FakeProvider, Script};
use serde_json::{Value, json};

use super::common::*;

/// A world whose config points `local/small` at `fake`.
fn configure(world: &World, fake: &FakeProvider) {
    world.write_config(&format!(
        "model = \"local/small\"\n[providers.local]\napi = \"openai-chat\"\nbase_url = \"{}/v1\"\nmodels = [{{ id = \"small\", context_window = 100000 }}]\n",
        fake.base_url()
    ));
}

async fn client(world: &World) -> AcpClient {
    let mut c = AcpClient::spawn(Path::new(BIN), world.home(), &[]);
    c.initialize().await;
    c
}

/// Runs one prompt answered with "ok"; returns the system prompt the model was sent.
async fn system_sent(c: &mut AcpClient, fake: &FakeProvider, s: &str) -> String {
    fake.push(Script::new().text("ok"));
    let before = fake.requests().len();
    c.request("session/prompt", text_prompt(s, "hi")).await.ok();
    let body = &fake.requests()[before].body;
    body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn text(t: &str) -> Value {
    json!([{"type": "text", "text": t}])
}

#[tokio::test]
async fn the_capabilities_are_advertised() {
    let world = World::new();
    let mut c = world.spawn();
    let caps = c.initialize().await["agentCapabilities"]["sessionCapabilities"].clone();
    assert_eq!(caps["systemPrompt"], json!({"mode": {"override": {}}}));
    assert_eq!(caps["fork"], json!({}));
    assert_eq!(caps["additionalDirectories"], json!({}));
}

#[tokio::test]
async fn an_appended_system_prompt_reaches_the_model_and_survives_a_load() {
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    configure(&world, &fake);
    let mut c = client(&world).await;
    let prompt = json!({"mode": "append", "content": text("ANSWER IN FRENCH")});
    let s = sid(&c
        .request(
            "session/new",
            json!({"cwd": world.ws(), "mcpServers": [], "systemPrompt": prompt}),
        )
        .await
        .ok());
    let system = system_sent(&mut c, &fake, &s).await;
    assert!(system.starts_with("You are Ferrite"), "{system}");
    assert!(system.ends_with("ANSWER IN FRENCH\n"), "{system}");
    stop(c).await;

    // Another process, a load without `systemPrompt`: the stored one applies.
    let mut c = client(&world).await;
    c.request(
        "session/load",
        json!({"sessionId": s, "cwd": world.ws(), "mcpServers": []}),
    )
    .await
    .ok();
    let system = system_sent(&mut c, &fake, &s).await;
    assert!(system.contains("ANSWER IN FRENCH"), "{system}");
    // A resume that names another replaces it.
    let other = json!({"mode": "override", "content": text("You review code only.")});
    c.request("session/close", json!({"sessionId": s}))
        .await
        .ok();
    c.request(
        "session/resume",
        json!({"sessionId": s, "cwd": world.ws(), "mcpServers": [], "systemPrompt": other}),
    )
    .await
    .ok();
    let system = system_sent(&mut c, &fake, &s).await;
    assert!(
        system.starts_with("You review code only.\n\nWorkspace: "),
        "{system}"
    );
    assert!(
        !system.contains("You are Ferrite") && !system.contains("FRENCH"),
        "{system}"
    );
    assert!(c.violations().is_empty(), "{:?}", c.violations());
}

#[tokio::test]
async fn without_a_system_prompt_the_model_gets_ferrite_s_own() {
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    configure(&world, &fake);
    let mut c = client(&world).await;
    let s = sid(&c.new_session(&world.ws()).await);
    let system = system_sent(&mut c, &fake, &s).await;
    assert!(system.starts_with("You are Ferrite"), "{system}");
    assert!(!system.contains("Instructions from the editor"), "{system}");
}

#[tokio::test]
async fn a_system_prompt_ferrite_cannot_apply_is_refused_before_a_session_exists() {
    let world = World::new();
    let mut c = world.client().await;
    for prompt in [
        json!({"mode": "_replace_everything", "content": text("x")}),
        json!({"mode": "append", "content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]}),
        json!({"mode": "append", "content": []}),
    ] {
        let answer = c
            .request(
                "session/new",
                json!({"cwd": world.ws(), "mcpServers": [], "systemPrompt": prompt}),
            )
            .await;
        assert_eq!(answer.code(), -32602, "{prompt}");
    }
    let sessions = world.home().join("sessions");
    let logs = std::fs::read_dir(&sessions).map(|d| d.count()).unwrap_or(0);
    assert_eq!(logs, 0);
}

/// A turn whose model writes `path`; whether the client was asked, and the turn's messages.
async fn write_turn(c: &mut AcpClient, fake: &FakeProvider, s: &str, path: &Path) -> bool {
    let args = json!({"path": path, "content": "x"}).to_string();
    fake.push(Script::new().tool_call("w", "write", args));
    fake.push(Script::new().text("done"));
    let id = c
        .send_request("session/prompt", text_prompt(s, "write it"))
        .await;
    let mut asked = false;
    loop {
        let m = c
            .next_message(Duration::from_secs(20))
            .await
            .expect("the turn ends");
        if m["method"] == "session/request_permission" {
            asked = true;
            let reject = m["params"]["options"]
                .as_array()
                .unwrap()
                .iter()
                .find(|o| o["kind"] == "reject_once")
                .unwrap()["optionId"]
                .clone();
            c.respond(
                &m["id"],
                json!({"outcome": {"outcome": "selected", "optionId": reject}}),
            )
            .await;
        }
        if m["id"] == id && m.get("method").is_none() {
            return asked;
        }
    }
}

#[tokio::test]
async fn directories_named_on_load_are_workspace_roots_from_then_on() {
    let world = World::new();
    let other = tempfile::tempdir().unwrap();
    let other = std::fs::canonicalize(other.path()).unwrap();
    let fake = FakeProvider::start().await.unwrap();
    configure(&world, &fake);
    let mut c = client(&world).await;
    let s = sid(&c.new_session(&world.ws()).await);
    c.request(
        "session/set_mode",
        json!({"sessionId": s, "modeId": "auto"}),
    )
    .await
    .ok();
    // Outside the workspace, `auto` asks.
    assert!(write_turn(&mut c, &fake, &s, &other.join("a.txt")).await);
    assert!(!other.join("a.txt").exists());
    c.request("session/close", json!({"sessionId": s}))
        .await
        .ok();
    c.request(
        "session/load",
        json!({"sessionId": s, "cwd": world.ws(), "mcpServers": [], "additionalDirectories": [other]}),
    )
    .await
    .ok();
    assert!(!write_turn(&mut c, &fake, &s, &other.join("b.txt")).await);
    assert!(other.join("b.txt").exists());
    stop(c).await;
    // A later load that names none keeps them (the log has them).
    let mut c = client(&world).await;
    c.request(
        "session/resume",
        json!({"sessionId": s, "cwd": world.ws(), "mcpServers": []}),
    )
    .await
    .ok();
    assert!(!write_turn(&mut c, &fake, &s, &other.join("c.txt")).await);
    assert!(other.join("c.txt").exists());
    // The list reports the roots the session works with now, not the ones it was created with.
    let listed = c.request("session/list", json!({})).await.ok();
    let info = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["sessionId"] == s.as_str())
        .unwrap()
        .clone();
    assert_eq!(info["additionalDirectories"], json!([other]), "{info}");
    assert!(c.violations().is_empty(), "{:?}", c.violations());
}

#[tokio::test]
async fn a_directory_that_does_not_exist_is_refused_on_load() {
    let world = World::new();
    let mut c = world.client().await;
    let s = sid(&c.new_session(&world.ws()).await);
    let answer = c
        .request(
            "session/load",
            json!({"sessionId": s, "cwd": world.ws(), "mcpServers": [], "additionalDirectories": ["/no/such/dir"]}),
        )
        .await;
    assert_eq!(answer.code(), -32602);
}

#[tokio::test]
async fn session_fork_opens_a_copy_with_its_own_settings() {
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    configure(&world, &fake);
    let mut c = client(&world).await;
    let s = sid(&c.new_session(&world.ws()).await);
    fake.push(Script::new().text("the parser is in src/lib.rs"));
    c.request("session/prompt", text_prompt(&s, "where is the parser?"))
        .await
        .ok();
    let prompt = json!({"mode": "append", "content": text("FORK ONLY")});
    let id = c
        .send_request(
            "session/fork",
            json!({"sessionId": s, "cwd": world.ws(), "mcpServers": [], "systemPrompt": prompt}),
        )
        .await;
    let (before, answer) = c.collect_until_answer(&id).await;
    let r = answer.ok();
    let fork = r["sessionId"].as_str().unwrap().to_owned();
    assert_ne!(fork, s);
    // Opened without a replay: the client has the history already (what came meanwhile is
    // the first session's, its generated title).
    assert!(
        before
            .iter()
            .all(|m| m["method"] != "session/update" || m["params"]["sessionId"] == s.as_str()),
        "{before:?}"
    );
    assert_eq!(r["modes"]["currentModeId"], "ask");
    assert_eq!(option_value(&r["configOptions"], "model"), "local/small");
    assert_eq!(
        r["_meta"]["ferrite"],
        json!({"sessionId": fork, "parentSessionId": s})
    );
    let system = system_sent(&mut c, &fake, &fork).await;
    assert!(system.contains("FORK ONLY"), "{system}");
    let sent = fake.requests().last().unwrap().body["messages"].to_string();
    assert!(
        sent.contains("where is the parser?"),
        "the fork has the history: {sent}"
    );
    // The source is untouched, and keeps ferrite's own prompt.
    let system = system_sent(&mut c, &fake, &s).await;
    assert!(!system.contains("FORK ONLY"), "{system}");
    assert!(c.violations().is_empty(), "{:?}", c.violations());
}

#[tokio::test]
async fn a_fork_works_where_the_client_says_and_a_load_elsewhere_is_told() {
    let world = World::new();
    let other = tempfile::tempdir().unwrap();
    let mut c = world.client().await;
    let s = sid(&c.new_session(&world.ws()).await);
    // Forked into another directory (another checkout, say): the copy works there.
    let r = c
        .request(
            "session/fork",
            json!({"sessionId": s, "cwd": other.path(), "mcpServers": []}),
        )
        .await
        .ok();
    let fork = r["sessionId"].as_str().unwrap().to_owned();
    let log = std::fs::read_to_string(world.session_file(&fork)).unwrap();
    let header: Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    assert_eq!(header["cwd"].as_str().map(Path::new), Some(other.path()));
    let missing = c
        .request(
            "session/fork",
            json!({"sessionId": s, "cwd": "/no/such/dir", "mcpServers": []}),
        )
        .await;
    assert_eq!(missing.code(), -32602);
    // Loaded from another directory, the session stays where it works, and the user is told.
    let id = c
        .send_request(
            "session/load",
            json!({"sessionId": s, "cwd": other.path(), "mcpServers": []}),
        )
        .await;
    c.wait_answer(&id).await.ok();
    let notice = c
        .wait_for(Duration::from_secs(5), |m| {
            m["params"]["update"]
                .to_string()
                .contains("This session works in")
        })
        .await
        .expect("a notice that the session works elsewhere");
    let text = notice["params"]["update"].to_string();
    assert!(text.contains(&*other.path().to_string_lossy()), "{text}");
    // From its own directory: no such notice.
    let id = c
        .send_request(
            "session/resume",
            json!({"sessionId": s, "cwd": world.ws(), "mcpServers": []}),
        )
        .await;
    c.wait_answer(&id).await.ok();
    let quiet = c.drain(Duration::from_millis(300)).await;
    assert!(
        !quiet
            .iter()
            .any(|m| m.to_string().contains("This session works in")),
        "{quiet:?}"
    );
}

#[tokio::test]
async fn ferrite_s_own_fork_still_answers_only_the_id() {
    let world = World::new();
    let mut c = world.client().await;
    let s = sid(&c.new_session(&world.ws()).await);
    let r = c
        .request("_ferrite/session/fork", json!({"sessionId": s}))
        .await
        .ok();
    assert_eq!(r.as_object().unwrap().len(), 1, "{r}");
    assert!(
        world
            .session_file(r["sessionId"].as_str().unwrap())
            .exists()
    );
}

/// An extra directory is a workspace root for the sandbox too: a sandboxed command may write
/// there, and still nowhere else outside the workspace.
#[tokio::test]
async fn a_sandboxed_command_writes_into_an_extra_directory_and_nowhere_else() {
    let world = World::new();
    let (other, elsewhere) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let other = std::fs::canonicalize(other.path()).unwrap();
    let elsewhere = std::fs::canonicalize(elsewhere.path()).unwrap();
    // Sandboxed commands may always write to the temporary directory: the agent gets one of its
    // own, so the two above are outside it wherever the tests run.
    let agent_tmp = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start().await.unwrap();
    configure(&world, &fake);
    let tmp = agent_tmp.path().to_str().unwrap();
    let mut c = AcpClient::spawn(Path::new(BIN), world.home(), &[("TMPDIR", tmp)]);
    c.initialize().await;
    let new = c
        .request(
            "session/new",
            json!({"cwd": world.ws(), "mcpServers": [], "additionalDirectories": [other]}),
        )
        .await
        .ok();
    let s = sid(&new);
    c.request(
        "session/set_mode",
        json!({"sessionId": s, "modeId": "auto"}),
    )
    .await
    .ok();
    let command = format!(
        "echo in > {}/in.txt; echo out > {}/out.txt; echo done",
        other.display(),
        elsewhere.display()
    );
    fake.push(Script::new().tool_call("b", "bash", json!({"command": command}).to_string()));
    fake.push(Script::new().text("ok"));
    let id = c
        .send_request("session/prompt", text_prompt(&s, "write"))
        .await;
    loop {
        let m = c
            .next_message(Duration::from_secs(30))
            .await
            .expect("the turn ends");
        if m["method"] == "session/request_permission" {
            c.respond(
                &m["id"],
                json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}}),
            )
            .await;
        }
        if m["id"] == id && m.get("method").is_none() {
            break;
        }
    }
    assert_eq!(
        std::fs::read_to_string(other.join("in.txt")).unwrap_or_default(),
        "in\n"
    );
    assert!(!elsewhere.join("out.txt").exists(), "outside every root");
    let result = last_tool_result(&fake.requests()[1].body);
    assert!(result.contains("done"), "the command ran: {result}");
}

/// The last tool result of an OpenAI Chat Completions request.
fn last_tool_result(body: &Value) -> String {
    let messages = body["messages"].as_array().unwrap();
    let last = messages.iter().rev().find(|m| m["role"] == "tool").unwrap();
    last["content"].as_str().unwrap_or_default().to_owned()
}
