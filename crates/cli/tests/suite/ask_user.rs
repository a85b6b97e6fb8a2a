//! `ask_user`: the model asks the user a question through ACP form elicitation
//! (`elicitation/create`), only where the client advertises forms.

use ferrite_test_support::fake_provider::{FakeProvider, Script};
use serde_json::{Value, json};

use super::common::*;
use super::turns::{Api, provider_env};

async fn client(
    world: &World,
    fake: &FakeProvider,
    forms: bool,
) -> ferrite_test_support::AcpClient {
    let mut c = world.spawn_acp(provider_env(fake, Api::Anthropic));
    let mut caps = json!({"fs": {"readTextFile": false, "writeTextFile": false}});
    if forms {
        caps["elicitation"] = json!({"form": {}});
    }
    c.request(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": caps}),
    )
    .await
    .ok();
    c
}

#[tokio::test]
async fn the_model_asks_the_user_in_a_form_and_gets_the_answer() {
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    let mut c = client(&world, &fake, true).await;
    let s = sid(&c.new_session(&world.ws()).await);
    let ask = |id: &str, input: Value| Script::new().tool_call(id, "ask_user", input.to_string());
    fake.push(ask(
        "q1",
        json!({"question": "Which database?", "options": ["sqlite", "postgres"]}),
    ));
    fake.push(ask("q2", json!({"question": "Anything else?"})));
    fake.push(Script::new().text("using postgres"));
    let id = c
        .send_request("session/prompt", text_prompt(&s, "set up storage"))
        .await;
    let form = c
        .wait_for(std::time::Duration::from_secs(10), |m| {
            m["method"] == "elicitation/create"
        })
        .await
        .expect("a form");
    let p = &form["params"];
    assert_eq!(p["sessionId"], s.as_str());
    assert_eq!(p["mode"], "form");
    assert_eq!(p["toolCallId"], "q1");
    assert_eq!(p["message"], "Which database?");
    assert_eq!(
        p["requestedSchema"]["properties"]["answer"]["enum"],
        json!(["sqlite", "postgres"])
    );
    c.respond(
        &form["id"],
        json!({"action": "accept", "content": {"answer": "postgres"}}),
    )
    .await;
    let second = c
        .wait_for(std::time::Duration::from_secs(10), |m| {
            m["method"] == "elicitation/create"
        })
        .await
        .expect("a second form");
    assert_eq!(
        second["params"]["requestedSchema"]["properties"]["answer"]["type"],
        "string"
    );
    c.respond(&second["id"], json!({"action": "decline"})).await;
    let (_, answer) = c.collect_until_answer(&id).await;
    assert_eq!(answer.ok()["stopReason"], "end_turn");
    let requests = fake.requests();
    assert!(tool_names(&requests[0].body).contains(&"ask_user".to_owned()));
    let (first, is_error) = tool_results(&requests[1].body).remove(0);
    assert!(
        !is_error && first.contains("The user answered: postgres"),
        "{first}"
    );
    let (declined, _) = tool_results(&requests[2].body).remove(0);
    assert!(declined.contains("declined"), "{declined}");
    assert!(c.violations().is_empty(), "{:?}", c.violations());
}

/// A client without forms is never sent one: the tool is not offered, and a call of it (a model
/// that remembers it) is an unknown tool, not a hang.
#[tokio::test]
async fn without_forms_the_tool_is_not_offered() {
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    let mut c = client(&world, &fake, false).await;
    let s = sid(&c.new_session(&world.ws()).await);
    fake.push(Script::new().tool_call("q1", "ask_user", json!({"question": "Which?"}).to_string()));
    fake.push(Script::new().text("ok"));
    let id = c
        .send_request("session/prompt", text_prompt(&s, "go"))
        .await;
    let (seen, answer) = c.collect_until_answer(&id).await;
    answer.ok();
    assert!(!seen.iter().any(|m| m["method"] == "elicitation/create"));
    let requests = fake.requests();
    assert!(!tool_names(&requests[0].body).contains(&"ask_user".to_owned()));
    let (refused, is_error) = tool_results(&requests[1].body).remove(0);
    assert!(is_error && refused.contains("Unknown tool"), "{refused}");
}
