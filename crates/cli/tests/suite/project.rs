//! The project as the agent knows it: instructions from the repository root down to the cwd,
//! nested packages' instructions on demand, and slash commands that follow the files.

use std::time::Duration;

use ferrite_test_support::fake_provider::Script;
use serde_json::{Value, json};

use super::common::*;
use super::permissions::{Rig, start};

fn command_names(update: &Value) -> Vec<String> {
    update["params"]["update"]["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect()
}

async fn prompt(r: &mut Rig, text: &str) {
    let id = r
        .client
        .send_request("session/prompt", text_prompt(&r.sid, text))
        .await;
    let answer = r.client.wait_answer(&id).await.ok();
    assert_eq!(answer["stopReason"], "end_turn", "{answer}");
}

#[tokio::test]
async fn instructions_from_root_to_cwd_then_nested_on_demand() {
    let world = World::new();
    let repo = world.ws();
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(repo.join("apps/web")).unwrap();
    std::fs::create_dir_all(repo.join("libs/core/src")).unwrap();
    std::fs::write(world.home().join("AGENTS.md"), "PERSONAL-RULE").unwrap();
    std::fs::write(repo.join("AGENTS.md"), "ROOT-RULE").unwrap();
    std::fs::write(repo.join("apps/CLAUDE.md"), "APPS-RULE").unwrap();
    std::fs::write(repo.join("apps/web/AGENTS.md"), "WEB-RULE").unwrap();
    std::fs::write(repo.join("libs/core/AGENTS.md"), "CORE-RULE").unwrap();
    std::fs::write(repo.join("libs/core/src/lib.rs"), "pub fn f() {}\n").unwrap();

    // A session whose cwd is a package deep in the repository.
    let mut r = start(world, None, &[]).await;
    let cwd = r.world.ws().join("apps/web");
    let res = r
        .client
        .request(
            "session/new",
            json!({"cwd": cwd, "mcpServers": [], "additionalDirectories": [r.world.ws()]}),
        )
        .await;
    r.sid = sid(&res.ok());
    r.set_mode("auto").await;
    let lib = r.world.ws().join("libs/core/src/lib.rs");
    for _ in 0..2 {
        r.fake
            .push(Script::new().tool_call("r1", "read", json!({"path": lib}).to_string()));
        r.fake.push(Script::new().text("read it"));
    }
    prompt(&mut r, "look at the core lib").await;
    prompt(&mut r, "look again").await;

    let reqs = r.fake.requests();
    let first = reqs[0].body.to_string();
    let at = |s: &str| {
        first
            .find(s)
            .unwrap_or_else(|| panic!("{s} missing: {first}"))
    };
    assert!(at("PERSONAL-RULE") < at("ROOT-RULE"));
    assert!(at("ROOT-RULE") < at("APPS-RULE"));
    assert!(at("APPS-RULE") < at("WEB-RULE"));
    assert!(
        !first.contains("CORE-RULE"),
        "not before a file there is touched"
    );
    // After the read, the package's rules come with the result, once.
    let last = reqs.last().unwrap().body.to_string();
    assert_eq!(last.matches("CORE-RULE").count(), 1, "{last}");
}

#[tokio::test]
async fn the_command_list_follows_the_files() {
    let world = World::new();
    std::fs::create_dir_all(world.home().join("commands")).unwrap();
    std::fs::write(
        world.home().join("commands/explain.md"),
        "---\ndescription: Explain code\nargument-hint: <path>\n---\nExplain $1 simply.",
    )
    .unwrap();
    let mut r = start(world, None, &[]).await;
    let first = r
        .client
        .wait_for(Duration::from_secs(5), |m| {
            m["params"]["update"]["sessionUpdate"] == "available_commands_update"
        })
        .await
        .unwrap();
    let names = command_names(&first);
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
            "explain"
        ]
    );
    let explain = &first["params"]["update"]["availableCommands"][7];
    assert_eq!(explain["description"], "Explain code");
    assert_eq!(explain["input"]["hint"], "<path>");

    // A project command added while the session is open appears without a new session.
    let dir = r.world.ws().join(".ferrite/commands");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("ship.md"), "Ship it: $ARGUMENTS").unwrap();
    let next = r
        .client
        .wait_for(Duration::from_secs(10), |m| {
            m["params"]["update"]["sessionUpdate"] == "available_commands_update"
        })
        .await
        .expect("the list is sent again");
    assert!(command_names(&next).contains(&"ship".to_owned()));

    // Personal command with positional arguments reaches the model expanded.
    r.fake.push(Script::new().text("ok"));
    prompt(&mut r, "/explain src/main.rs").await;
    let body = r.fake.requests().last().unwrap().body.to_string();
    assert!(body.contains("Explain src/main.rs simply."), "{body}");
}

#[tokio::test]
async fn review_runs_with_read_only_tools() {
    let mut r = start(World::new(), None, &[]).await;
    r.set_mode("auto").await;
    r.fake.push(Script::new().tool_call(
        "w1",
        "write",
        json!({"path": "oops.txt", "content": "x"}).to_string(),
    ));
    r.fake.push(Script::new().text("no issues"));
    prompt(&mut r, "/review").await;
    assert!(
        !r.world.ws().join("oops.txt").exists(),
        "a review changes nothing"
    );
    let first = r.fake.requests()[0].body.to_string();
    assert!(
        first.contains("git diff HEAD"),
        "the review prompt was sent"
    );
    let results = r.last_tool_results();
    assert!(results[0].1, "{results:?}");
}
