//! Subagents as child sessions (ACP `subagents`): a client that advertises them is told of each
//! child (`subagent_update` on the parent), is sent the child's own updates under its id, can
//! cancel it alone and load it; its log names its parent and stays out of the session list.
//! Clients without the capability see only the parent's card (`suite::subagents`).

use std::time::Duration;

use ferrite_test_support::AcpClient;
use ferrite_test_support::fake_provider::{FakeProvider, Script};
use serde_json::{Value, json};

use super::common::*;
use super::turns::{Api, provider_env};

async fn client(world: &World, fake: &FakeProvider, subagents: bool) -> AcpClient {
    let mut c = world.spawn_acp(provider_env(fake, Api::Anthropic));
    let mut caps = json!({"fs": {"readTextFile": false, "writeTextFile": false}});
    if subagents {
        caps["subagents"] = json!({});
    }
    c.request(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": caps}),
    )
    .await
    .ok();
    c
}

fn task(id: &str, description: &str, prompt: &str) -> Script {
    Script::new().tool_call(
        id,
        "task",
        json!({"description": description, "prompt": prompt}).to_string(),
    )
}

/// `(sessionId, update)` of every `session/update`.
fn session_updates(messages: &[Value]) -> Vec<(String, Value)> {
    messages
        .iter()
        .filter(|m| m["method"] == "session/update")
        .map(|m| {
            (
                m["params"]["sessionId"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                m["params"]["update"].clone(),
            )
        })
        .collect()
}

/// The id of the first child a `subagent_update` announces.
async fn announced_child(c: &mut AcpClient) -> String {
    let announce = c
        .wait_for(Duration::from_secs(10), |m| {
            m["params"]["update"]["sessionUpdate"] == "subagent_update"
        })
        .await
        .expect("the child announced");
    announce["params"]["update"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// How many session logs the store holds.
fn session_logs(world: &World) -> usize {
    std::fs::read_dir(world.home().join("sessions"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .count()
}

fn kind(u: &Value) -> &str {
    u["sessionUpdate"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn a_client_that_shows_subagents_sees_the_child_session_and_can_load_it() {
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    std::fs::write(world.ws().join("a.txt"), "the answer is 42\n").unwrap();
    let mut c = client(&world, &fake, true).await;
    let parent = sid(&c.new_session(&world.ws()).await);
    fake.push(task(
        "t1",
        "find the answer",
        "Read a.txt and say what it holds.",
    ));
    fake.push(Script::new().tool_call("s1", "read", json!({"path": "a.txt"}).to_string()));
    fake.push(Script::new().text("It holds 42."));
    fake.push(Script::new().text("The subagent found 42."));
    let id = c
        .send_request("session/prompt", text_prompt(&parent, "what is in a.txt?"))
        .await;
    let (before, answer) = c.collect_until_answer(&id).await;
    assert_eq!(answer.ok()["stopReason"], "end_turn");
    let ups = session_updates(&before);
    let child = announced_on_the_parent(&ups, &parent, &world);
    the_child_s_own_updates(&ups, &parent, &child);
    the_parent_s_card_points_at_the_child(&ups, &parent, &child);
    assert!(
        fake.requests()[3].body.to_string().contains("It holds 42."),
        "the parent gets the answer"
    );

    // The child's log names its parent; the list leaves it out.
    let log = std::fs::read_to_string(world.session_file(&child)).unwrap();
    let header: Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    assert_eq!(header["parent"], parent.as_str());
    assert_eq!(header["subagent"], true);
    let listed = c.request("session/list", json!({})).await.ok().to_string();
    assert!(
        listed.contains(&parent) && !listed.contains(&child),
        "{listed}"
    );
    c.close_stdin().await;
    c.wait_exit(Duration::from_secs(5)).await.unwrap();
    both_replay_in_a_new_process(&world, &fake, &parent, &child).await;
}

/// Announced on the parent, running, where it works, cancellable on its own, before any update
/// of its own; returns the child's id.
fn announced_on_the_parent(ups: &[(String, Value)], parent: &str, world: &World) -> String {
    let (at, announce) = ups
        .iter()
        .enumerate()
        .find(|(_, (s, u))| *s == parent && kind(u) == "subagent_update")
        .map(|(i, (_, u))| (i, u.clone()))
        .expect("a subagent_update on the parent");
    let child = announce["sessionId"].as_str().unwrap().to_owned();
    assert_ne!(child, parent);
    assert_eq!(announce["state"]["state"], "running", "{announce}");
    assert_eq!(announce["title"], "Subagent: find the answer");
    assert_eq!(
        announce["cwd"].as_str().map(std::path::PathBuf::from),
        Some(world.ws())
    );
    assert!(announce["capabilities"]["cancel"].is_object(), "{announce}");
    let first_of_child = ups.iter().position(|(s, _)| *s == child).unwrap();
    assert!(
        at < first_of_child,
        "announced before the child's own updates"
    );
    child
}

/// The child's own updates, under its id: the task from the parent, its tool call, its answer.
fn the_child_s_own_updates(ups: &[(String, Value)], parent: &str, child: &str) {
    let of_child: Vec<&Value> = ups
        .iter()
        .filter(|(s, _)| *s == child)
        .map(|(_, u)| u)
        .collect();
    let message = of_child
        .iter()
        .find(|u| kind(u) == "session_message")
        .expect("the task as a session message");
    assert_eq!(message["senderSessionId"], parent);
    assert_eq!(message["recipientSessionId"], child);
    assert!(
        message["content"]
            .to_string()
            .contains("Read a.txt and say what it holds.")
    );
    assert!(
        of_child
            .iter()
            .any(|u| kind(u) == "tool_call" && u["toolCallId"] == "s1"),
        "the child's read is a card of the child"
    );
    let child_text: String = of_child
        .iter()
        .filter(|u| kind(u) == "agent_message_chunk")
        .map(|u| u["content"]["text"].as_str().unwrap_or_default())
        .collect();
    assert!(child_text.contains("It holds 42."), "{child_text}");
    assert!(
        ups.iter()
            .all(|(s, u)| *s == child || u["toolCallId"] != "s1"),
        "the child's calls are not the parent's"
    );
}

/// The parent's card points at the child and ends with the answer; the child ends idle.
fn the_parent_s_card_points_at_the_child(ups: &[(String, Value)], parent: &str, child: &str) {
    let last = ups
        .iter()
        .rev()
        .find(|(s, u)| *s == parent && u["toolCallId"] == "t1")
        .unwrap()
        .1
        .clone();
    assert_eq!(last["status"], "completed");
    assert!(
        last["content"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "session" && c["sessionId"] == child),
        "{last}"
    );
    let idle = ups
        .iter()
        .rev()
        .find(|(s, u)| *s == parent && kind(u) == "subagent_update")
        .unwrap();
    assert_eq!(idle.1["state"]["state"], "idle");
}

/// In a new process: the child, loaded by its id, replays its conversation; the parent's replay
/// announces the child once, as it is now, before its card names it.
async fn both_replay_in_a_new_process(
    world: &World,
    fake: &FakeProvider,
    parent: &str,
    child: &str,
) {
    let mut c = client(world, fake, true).await;
    let replay = load_updates(&mut c, world, child).await;
    assert!(replay.iter().any(|(_, u)| kind(u) == "session_message"));
    assert!(
        replay
            .iter()
            .any(|(_, u)| kind(u) == "tool_call" && u["toolCallId"] == "s1")
    );
    assert!(
        replay
            .iter()
            .any(|(_, u)| u["content"]["text"] == "It holds 42.")
    );
    let replay = load_updates(&mut c, world, parent).await;
    let announced = replay
        .iter()
        .position(|(_, u)| kind(u) == "subagent_update" && u["sessionId"] == child)
        .expect("the child announced in the replay");
    let named = replay
        .iter()
        .position(|(_, u)| u["content"].to_string().contains(child))
        .expect("the card names the child");
    assert!(announced < named);
    let states: Vec<&Value> = replay
        .iter()
        .filter(|(_, u)| kind(u) == "subagent_update")
        .map(|(_, u)| &u["state"]["state"])
        .collect();
    assert_eq!(states, [&json!("idle")], "once, as it is now");
}

/// The `(session, update)`s a `session/load` of `s` on `c` replays.
async fn load_updates(c: &mut AcpClient, world: &World, s: &str) -> Vec<(String, Value)> {
    let id = c
        .send_request(
            "session/load",
            json!({"sessionId": s, "cwd": world.ws(), "mcpServers": []}),
        )
        .await;
    let (replay, answer) = c.collect_until_answer(&id).await;
    answer.ok();
    session_updates(&replay)
}

#[tokio::test]
async fn cancelling_the_child_alone_lets_the_parent_go_on() {
    stop_the_child_alone(false).await;
}

#[tokio::test]
async fn closing_a_running_child_stops_it_and_the_parent_goes_on() {
    stop_the_child_alone(true).await;
}

/// `session/cancel` (or `session/close`) of a running child.
async fn stop_the_child_alone(close: bool) {
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    let mut c = client(&world, &fake, true).await;
    let parent = sid(&c.new_session(&world.ws()).await);
    fake.push(task("t1", "slow", "Think for a long time."));
    fake.push(
        Script::new()
            .stall(Duration::from_secs(600))
            .text("too late"),
    );
    fake.push(Script::new().text("carried on without it"));
    let id = c
        .send_request("session/prompt", text_prompt(&parent, "go"))
        .await;
    let child = announced_child(&mut c).await;
    // Let the child's request reach the model.
    tokio::time::sleep(Duration::from_millis(300)).await;
    // A running child cannot be loaded meanwhile.
    let busy = c
        .request(
            "session/load",
            json!({"sessionId": child, "cwd": world.ws(), "mcpServers": []}),
        )
        .await;
    assert_eq!(busy.code(), -32602);
    assert!(
        busy.message().contains("a turn is already running"),
        "{}",
        busy.message()
    );
    let t = std::time::Instant::now();
    if close {
        c.request("session/close", json!({"sessionId": child}))
            .await
            .ok();
    } else {
        c.notify("session/cancel", json!({"sessionId": child}))
            .await;
    }
    let (_, answer) = c.collect_until_answer(&id).await;
    assert_eq!(
        answer.ok()["stopReason"],
        "end_turn",
        "the parent's turn went on"
    );
    assert!(t.elapsed() < HANG_GUARD, "{:?}", t.elapsed());
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 3, "parent, child, parent");
    assert!(
        reqs[2].body.to_string().contains("stopped the subagent"),
        "the parent model is told: {}",
        reqs[2].body
    );
}

#[tokio::test]
async fn a_child_s_question_is_asked_on_its_own_session() {
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    let outside = tempfile::tempdir().unwrap();
    let file = outside.path().join("notes.txt");
    std::fs::write(&file, "outside").unwrap();
    let mut c = client(&world, &fake, true).await;
    let parent = sid(&c.new_session(&world.ws()).await);
    fake.push(task("t1", "peek outside", "Read the notes."));
    fake.push(Script::new().tool_call("s1", "read", json!({"path": file}).to_string()));
    fake.push(Script::new().text("could not read it"));
    fake.push(Script::new().text("ok"));
    let id = c
        .send_request("session/prompt", text_prompt(&parent, "go"))
        .await;
    let req = c
        .wait_for(Duration::from_secs(10), |m| {
            m["method"] == "session/request_permission"
        })
        .await
        .expect("a permission request");
    assert_ne!(
        req["params"]["sessionId"],
        parent.as_str(),
        "asked on the child"
    );
    assert_eq!(req["params"]["toolCall"]["toolCallId"], "s1");
    c.respond(
        &req["id"],
        json!({"outcome": {"outcome": "selected", "optionId": "reject_once"}}),
    )
    .await;
    assert_eq!(c.wait_answer(&id).await.ok()["stopReason"], "end_turn");
    assert!(fake.requests()[2].body.to_string().contains("declined"));
}

#[tokio::test]
async fn a_client_without_subagents_never_hears_of_the_child() {
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    std::fs::write(world.ws().join("a.txt"), "x\n").unwrap();
    let mut c = client(&world, &fake, false).await;
    let parent = sid(&c.new_session(&world.ws()).await);
    fake.push(task("t1", "look", "Read a.txt."));
    fake.push(Script::new().tool_call("s1", "read", json!({"path": "a.txt"}).to_string()));
    fake.push(Script::new().text("It holds x."));
    fake.push(Script::new().text("done"));
    let id = c
        .send_request("session/prompt", text_prompt(&parent, "go"))
        .await;
    let (before, answer) = c.collect_until_answer(&id).await;
    assert_eq!(answer.ok()["stopReason"], "end_turn");
    let ups = session_updates(&before);
    assert!(
        ups.iter().all(|(s, _)| *s == parent),
        "only the parent's updates"
    );
    assert!(ups.iter().all(|(_, u)| {
        !matches!(kind(u), "subagent_update" | "session_message")
            && !u["content"].to_string().contains("\"session\"")
    }));
    // The child's session exists all the same, outside the list.
    assert_eq!(session_logs(&world), 2, "the parent's log and the child's");
    let listed = c.request("session/list", json!({})).await.ok();
    assert_eq!(listed["sessions"].as_array().unwrap().len(), 1, "{listed}");
    // The child's task was written by the model: loaded by its id, the child never shows it
    // as the user's words (a hostile task must not pass for something the user said).
    let child = std::fs::read_dir(world.home().join("sessions"))
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".jsonl").map(str::to_owned)
        })
        .find(|id| *id != parent)
        .unwrap();
    let id = c
        .send_request(
            "session/load",
            json!({"sessionId": child, "cwd": world.ws(), "mcpServers": []}),
        )
        .await;
    let (replay, answer) = c.collect_until_answer(&id).await;
    answer.ok();
    let replay = session_updates(&replay);
    assert!(
        replay
            .iter()
            .all(|(_, u)| !(kind(u) == "user_message_chunk"
                && u.to_string().contains("Read a.txt."))),
        "{replay:?}"
    );
    assert!(replay.iter().any(|(_, u)| kind(u) == "agent_message_chunk"
        && u["content"]["text"].as_str().is_some_and(
            |t| t.starts_with("Task from the main agent") && t.contains("Read a.txt.")
        )));
    c.request("session/close", json!({"sessionId": child}))
        .await
        .ok();
    // Deleting the parent deletes its subagents' sessions: nothing else reaches them.
    c.request("session/delete", json!({"sessionId": parent}))
        .await
        .ok();
    assert_eq!(session_logs(&world), 0);
}

#[tokio::test]
async fn a_subagent_s_last_request_offers_no_tools_so_it_answers() {
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    let mut c = client(&world, &fake, false).await;
    let parent = sid(&c.new_session(&world.ws()).await);
    fake.push(task("t1", "look around", "List everything."));
    for i in 0..19 {
        fake.push(Script::new().tool_call(format!("s{i}"), "ls", "{}".to_owned()));
    }
    fake.push(Script::new().text("I listed it all."));
    fake.push(Script::new().text("done"));
    let id = c
        .send_request("session/prompt", text_prompt(&parent, "go"))
        .await;
    assert_eq!(c.wait_answer(&id).await.ok()["stopReason"], "end_turn");
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 22, "parent, 20 of the subagent's, parent");
    assert!(
        !tool_names(&reqs[19].body).is_empty(),
        "the 19th still offers tools"
    );
    assert!(
        tool_names(&reqs[20].body).is_empty(),
        "the 20th offers none"
    );
    assert!(reqs[21].body.to_string().contains("I listed it all."));
}

#[tokio::test]
async fn the_user_steers_a_running_child() {
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    let mut c = client(&world, &fake, true).await;
    let parent = sid(&c.new_session(&world.ws()).await);
    fake.push(task("t1", "look", "List the workspace."));
    // The child's first answer takes a while: the user's message arrives meanwhile.
    fake.push(Script::new().stall(Duration::from_millis(800)).tool_call(
        "s1",
        "ls",
        "{}".to_owned(),
    ));
    fake.push(Script::new().text("looked in src too"));
    fake.push(Script::new().text("done"));
    let id = c
        .send_request("session/prompt", text_prompt(&parent, "go"))
        .await;
    let child = announced_child(&mut c).await;
    let said = json!({"sessionId": child, "prompt": [{"type": "text", "text": "look in src too"}]});
    let steered = c.request("_session/steering", said).await.ok();
    assert_eq!(steered["outcome"], "injected");
    let (before, answer) = c.collect_until_answer(&id).await;
    assert_eq!(answer.ok()["stopReason"], "end_turn");
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 4, "parent, child twice, parent");
    assert!(
        reqs[2].body.to_string().contains("look in src too"),
        "the child's next request has it"
    );
    assert!(
        !reqs[3].body.to_string().contains("look in src too"),
        "the parent's does not"
    );
    assert!(
        session_updates(&before).iter().any(|(s, u)| *s == child
            && kind(u) == "user_message_chunk"
            && u["content"]["text"] == "look in src too"),
        "shown in the child's session"
    );
    // Once it ended, the child takes no more.
    let late = json!({"sessionId": child, "prompt": [{"type": "text", "text": "and more"}]});
    let answer = c.request("_session/steering", late).await;
    assert_eq!(answer.code(), -32602, "{}", answer.message());
}

/// A client that reads files for the agent but does not show subagents: a subagent's read goes
/// through the editor about the parent's card, which names the file while it is read.
#[tokio::test]
async fn a_hidden_subagent_s_editor_reads_are_about_the_parent_s_card() {
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    std::fs::write(world.ws().join("a.txt"), "on disk\n").unwrap();
    let mut c = world.spawn_acp(provider_env(&fake, Api::Anthropic));
    c.request(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": false}}}),
    )
    .await
    .ok();
    let parent = sid(&c.new_session(&world.ws()).await);
    fake.push(task("t1", "look", "Read a.txt."));
    fake.push(Script::new().tool_call("s1", "read", json!({"path": "a.txt"}).to_string()));
    fake.push(Script::new().text("it says hello"));
    fake.push(Script::new().text("done"));
    let id = c
        .send_request("session/prompt", text_prompt(&parent, "go"))
        .await;
    let read = c
        .wait_for(Duration::from_secs(10), |m| {
            m["method"] == "fs/read_text_file"
        })
        .await
        .expect("the read goes through the editor");
    assert_eq!(read["params"]["sessionId"], parent.as_str());
    c.respond(&read["id"], json!({"content": "in the editor's buffer\n"}))
        .await;
    let (before, answer) = c.collect_until_answer(&id).await;
    assert_eq!(answer.ok()["stopReason"], "end_turn");
    assert!(
        fake.requests()[2]
            .body
            .to_string()
            .contains("in the editor's buffer"),
        "the subagent read the editor's text"
    );
    assert!(session_updates(&before).iter().all(|(s, _)| *s == parent));
    // The strict client checks that the read named a running card's file (no violation).
    assert!(c.violations().is_empty(), "{:?}", c.violations());
}

/// What is stored in `dir` (names), when it exists.
fn stored(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// `session/delete` removes everything stored for the session and its subagents: their logs,
/// the full outputs of their commands (`sessions/<id>/tool-output/`) and their checkpoint
/// stores (a child loaded and prompted on its own has one).
#[tokio::test]
async fn deleting_a_session_leaves_nothing_of_it_or_its_subagents() {
    let world = World::new();
    std::fs::write(world.ws().join("a.txt"), "a\n").unwrap();
    let fake = FakeProvider::start().await.unwrap();
    let mut c = client(&world, &fake, false).await;
    let parent = sid(&c.new_session(&world.ws()).await);
    c.request(
        "session/set_mode",
        json!({"sessionId": parent, "modeId": "full"}),
    )
    .await
    .ok();
    fake.push(Script::new().tool_call("b1", "bash", r#"{"command":"echo kept-output"}"#));
    fake.push(task("t1", "look", "Read a.txt."));
    fake.push(Script::new().text("child done"));
    fake.push(Script::new().text("done"));
    prompt_to_end(&mut c, &parent, "go").await;
    let sessions = world.home().join("sessions");
    assert!(sessions.join(&parent).join("tool-output").exists());
    let child = stored(&sessions)
        .into_iter()
        .filter_map(|n| n.strip_suffix(".jsonl").map(str::to_owned))
        .find(|id| *id != parent)
        .expect("the child's log");
    // The child, loaded and prompted on its own, changes a file: its own checkpoint store.
    let id = c
        .send_request(
            "session/load",
            json!({"sessionId": child, "cwd": world.ws(), "mcpServers": []}),
        )
        .await;
    c.wait_answer(&id).await.ok();
    c.request(
        "session/set_mode",
        json!({"sessionId": child, "modeId": "full"}),
    )
    .await
    .ok();
    fake.push(Script::new().tool_call("w1", "write", r#"{"path":"a.txt","content":"b\n"}"#));
    fake.push(Script::new().text("written"));
    prompt_to_end(&mut c, &child, "change it").await;
    let checkpoints = world.home().join("checkpoints");
    assert!(
        checkpoints.join(&child).exists(),
        "{:?}",
        stored(&checkpoints)
    );
    c.request("session/close", json!({"sessionId": child}))
        .await
        .ok();
    assert_eq!(
        c.request("session/delete", json!({"sessionId": parent}))
            .await
            .ok(),
        json!({})
    );
    assert_eq!(stored(&sessions), Vec::<String>::new());
    let left: Vec<String> = stored(&checkpoints)
        .into_iter()
        .filter(|n| *n == parent || *n == child)
        .collect();
    assert!(left.is_empty(), "{left:?}");
    stop(c).await;
}
