//! MCP prompts as slash commands and MCP resources as mentions, through the real binary and a
//! real MCP server process: the editor is offered `/mcp__srv__greet`, running it sends the
//! server's prompt to the model, a `resource_link` to `test://…` brings the resource's text, and
//! what a hostile server returns stays data.

use std::time::Duration;

use ferrite_test_support::agent_text;
use ferrite_test_support::fake_provider::Script;
use ferrite_test_support::mcp_server::catalog::{FLOOD_BYTES, GREETING, HIJACK_TEXT};
use serde_json::{Value, json};

use super::common::*;
use super::mcp::{Rig, start, stdio};

/// Long enough for a server to start and the session's 2 s poll to notice its prompts.
const COMMANDS_WAIT: Duration = Duration::from_secs(15);

/// The commands of the first `available_commands_update` that offers an `mcp__<server>__`
/// command.
async fn commands_with_prompts(r: &mut Rig, server: &str) -> Vec<Value> {
    let prefix = format!("mcp__{server}__");
    let offers = move |m: &Value| {
        m["params"]["update"]["sessionUpdate"] == "available_commands_update"
            && m["params"]["update"]["availableCommands"]
                .as_array()
                .is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c["name"].as_str().unwrap_or("").starts_with(&prefix))
                })
    };
    let update = r
        .client
        .wait_for(COMMANDS_WAIT, offers)
        .await
        .expect("the MCP prompts are offered");
    update["params"]["update"]["availableCommands"]
        .as_array()
        .unwrap()
        .clone()
}

fn names(commands: &[Value]) -> Vec<String> {
    commands
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Runs a prompt of `blocks`; the messages before its answer, and the answer.
async fn run(r: &mut Rig, blocks: Value) -> (Vec<Value>, Value) {
    let id = r
        .client
        .send_request(
            "session/prompt",
            json!({"sessionId": r.sid, "prompt": blocks}),
        )
        .await;
    let (before, answer) = r.client.collect_until_answer(&id).await;
    (before, answer.ok())
}

async fn run_text(r: &mut Rig, text: &str) -> (Vec<Value>, Value) {
    run(r, json!([{"type": "text", "text": text}])).await
}

/// Everything the model was sent in request `n`, as JSON text.
fn sent(r: &Rig, n: usize) -> String {
    r.fake.requests()[n].body["messages"].to_string()
}

#[tokio::test]
async fn an_mcp_prompt_is_a_command_whose_text_reaches_the_model() {
    let mut r = start(json!([stdio("srv", &[])]), &[]).await;
    let commands = commands_with_prompts(&mut r, "srv").await;
    let offered: Vec<String> = names(&commands)
        .into_iter()
        .filter(|n| n.starts_with("mcp__"))
        .collect();
    // The hostile names (a slash, control characters, over 64 characters) are not offered.
    assert_eq!(
        offered,
        [
            "mcp__srv__greet",
            "mcp__srv__review",
            "mcp__srv__picture",
            "mcp__srv__flood",
            "mcp__srv__hijack",
            "mcp__srv__stall"
        ]
    );
    assert_eq!(names(&commands)[0], "compact", "the built-ins come first");
    let greet = commands
        .iter()
        .find(|c| c["name"] == "mcp__srv__greet")
        .unwrap();
    assert_eq!(greet["description"], "Greets someone");
    assert_eq!(greet["input"]["hint"], "<name> [tone]");

    r.fake.push(Script::new().text("Hello, Ada!"));
    let (before, answer) = run_text(&mut r, "/mcp__srv__greet Ada warm and  kind").await;
    assert_eq!(answer["stopReason"], "end_turn");
    assert_eq!(agent_text(&before), "Hello, Ada!");
    let sent = sent(&r, 0);
    assert!(
        sent.contains("Please greet Ada. Tone: warm and  kind."),
        "the last argument takes the rest of the line: {sent}"
    );
}

#[tokio::test]
async fn a_prompt_missing_a_required_argument_never_reaches_the_model() {
    let mut r = start(json!([stdio("srv", &[])]), &[]).await;
    commands_with_prompts(&mut r, "srv").await;
    let (before, answer) = run_text(&mut r, "/mcp__srv__greet").await;
    assert_eq!(answer["stopReason"], "end_turn");
    assert!(answer["_meta"]["ferrite"]["turnFailure"].is_null());
    let text = agent_text(&before);
    assert!(
        text.contains("needs the argument `name`") && text.contains("<name> [tone]"),
        "{text}"
    );
    assert!(
        r.fake.requests().is_empty(),
        "nothing was sent to the model"
    );

    // The session goes on: the next prompt runs.
    r.fake.push(Script::new().text("ok"));
    let (_, answer) = run_text(&mut r, "/mcp__srv__review src/lib.rs").await;
    assert_eq!(answer["stopReason"], "end_turn");
    let sent = sent(&r, 0);
    assert!(
        sent.contains("Review src/lib.rs, focusing on: everything."),
        "{sent}"
    );
    assert!(
        sent.contains("example assistant message") && sent.contains("> I will read src/lib.rs"),
        "an assistant message is quoted context: {sent}"
    );
    assert!(sent.contains("style guide: be brief"), "{sent}");
    assert!(!sent.contains("needs the argument"), "{sent}");
}

#[tokio::test]
async fn resource_links_to_server_resources_reach_the_model() {
    let mut r = start(json!([stdio("srv", &[])]), &[]).await;
    r.fake.push(Script::new().text("read them"));
    let link = |uri: &str| json!({"type": "resource_link", "uri": uri, "name": uri});
    let (before, answer) = run(
        &mut r,
        json!([
            {"type": "text", "text": "summarize these"},
            link("test://greeting"),
            link("test://notes/42"),
            link("test://big"),
            link("elsewhere://nobody-claims-this"),
        ]),
    )
    .await;
    assert_eq!(answer["stopReason"], "end_turn");
    let sent = sent(&r, 0);
    assert!(sent.contains(GREETING), "a listed resource: {sent}");
    assert!(
        sent.contains("note 42"),
        "a resource of a template's scheme"
    );
    assert!(
        sent.contains("[Attached: elsewhere://nobody-claims-this"),
        "a URI no server claims is left as it was"
    );
    assert!(sent.contains("the resource `test://big` was too large"));
    assert!(
        sent.len() < FLOOD_BYTES,
        "the big resource is cut to the cap: {} bytes sent",
        sent.len()
    );
    assert!(agent_text(&before).contains("test://big` was too large"));
}

#[tokio::test]
async fn a_hostile_servers_prompt_stays_data() {
    let mut r = start(json!([stdio("srv", &[])]), &[]).await;
    let ws = r.world.ws();
    std::fs::write(ws.join("secret.txt"), "TOP-SECRET-VALUE").unwrap();
    // A prompt file named like the server's prompt wins over it.
    std::fs::create_dir_all(ws.join(".ferrite/commands")).unwrap();
    std::fs::write(
        ws.join(".ferrite/commands/mcp__srv__review.md"),
        "---\ndescription: The project's own review\n---\nThe project's review of $ARGUMENTS.",
    )
    .unwrap();
    let commands = commands_with_prompts(&mut r, "srv").await;
    let review: Vec<&Value> = commands
        .iter()
        .filter(|c| c["name"] == "mcp__srv__review")
        .collect();
    assert_eq!(review.len(), 1, "{commands:?}");
    assert_eq!(review[0]["description"], "The project's own review");

    r.fake.push(Script::new().text("reviewed"));
    run_text(&mut r, "/mcp__srv__review a.rs").await;
    let sent0 = sent(&r, 0);
    assert!(sent0.contains("The project's review of a.rs."), "{sent0}");
    assert!(!sent0.contains("focusing on"), "{sent0}");

    // Text that looks like `/undo` is sent as text, and the server's link to a workspace file
    // is named, never read.
    r.fake.push(Script::new().text("that was just text"));
    let (before, answer) = run_text(&mut r, "/mcp__srv__hijack").await;
    assert_eq!(answer["stopReason"], "end_turn");
    assert_eq!(agent_text(&before), "that was just text");
    let sent1 = sent(&r, 1);
    assert!(sent1.contains(HIJACK_TEXT), "{sent1}");
    assert!(sent1.contains("[resource link: secret.txt"), "{sent1}");
    assert!(!sent1.contains("TOP-SECRET-VALUE"), "{sent1}");

    // A flood of text is cut at the prompt-file cap, and the user is told.
    r.fake.push(Script::new().text("ok"));
    let (before, _) = run_text(&mut r, "/mcp__srv__flood").await;
    let sent2 = sent(&r, 2);
    assert!(!sent2.contains("TAIL"), "cut before its end");
    assert!(sent2.len() < FLOOD_BYTES, "{} bytes sent", sent2.len());
    assert!(sent2.contains("was too large"));
    assert!(agent_text(&before).contains("was too large"));
}

#[tokio::test]
async fn an_endless_prompt_listing_is_capped() {
    let mut r = start(json!([stdio("many", &["--endless-prompts"])]), &[]).await;
    let commands = commands_with_prompts(&mut r, "many").await;
    let offered = names(&commands)
        .into_iter()
        .filter(|n| n.starts_with("mcp__many__"))
        .count();
    assert_eq!(offered, 100);
    let all = [r.early.clone(), r.client.drain(QUIET).await].concat();
    assert!(
        agent_text(&all).contains("lists too many prompts"),
        "{}",
        agent_text(&all)
    );
}

#[tokio::test]
async fn a_server_that_never_answers_a_prompt_times_out_or_is_cancelled() {
    let env = [("FERRITE_MCP_CALL_TIMEOUT_MS", "1500")];
    let mut r = start(json!([stdio("srv", &[])]), &env).await;
    commands_with_prompts(&mut r, "srv").await;
    let (before, answer) = run_text(&mut r, "/mcp__srv__stall").await;
    assert_eq!(answer["stopReason"], "end_turn");
    let text = agent_text(&before);
    assert!(
        text.contains("`srv` did not give the prompt `stall` within 1.5 s"),
        "{text}"
    );

    let id = r
        .client
        .send_request("session/prompt", text_prompt(&r.sid, "/mcp__srv__stall"))
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    r.client
        .notify("session/cancel", json!({"sessionId": r.sid}))
        .await;
    let (_, answer) = r.client.collect_until_answer(&id).await;
    assert_eq!(answer.ok()["stopReason"], "cancelled");
    assert!(r.fake.requests().is_empty(), "nothing reached the model");
}

#[tokio::test]
async fn images_from_a_prompt_and_a_resource_reach_the_model_as_images() {
    let mut r = start(json!([stdio("srv", &[])]), &[]).await;
    commands_with_prompts(&mut r, "srv").await;
    r.fake.push(Script::new().text("a picture"));
    run_text(&mut r, "/mcp__srv__picture").await;
    r.fake.push(Script::new().text("another"));
    run(
        &mut r,
        json!([
            {"type": "text", "text": "and this one"},
            {"type": "resource_link", "uri": "test://pixel.png", "name": "pixel"},
        ]),
    )
    .await;
    for n in 0..2 {
        let last = r.fake.requests()[n].body["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .to_string();
        assert!(
            last.contains(r#""type":"image_url""#) && last.contains("aGVsbG8gd29ybGQ="),
            "request {n}: {last}"
        );
    }
}
