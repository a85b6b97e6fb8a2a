//! What every model request costs before the conversation: the system prompt and the tool
//! definitions (Messages API, default tools), through the real binary and the fake provider.
//! `bench/tokens.py` prints the same counts.
//!
//! Tokens are estimated as the bytes of the compact JSON of `system` and `tools`, divided by 4
//! and rounded up: no tokenizer ships with the repository, and for this JSON-heavy text the
//! estimate is above what a BPE tokenizer counts (bench/README.md, "Request tokens"), so a
//! count within the budget here is within it for the model too.

use ferrite_test_support::fake_provider::{FakeProvider, Script};
use serde_json::{Value, json};

use super::common::*;
use super::permissions::{Rig, rig};
use super::turns::{Api, provider_env};

/// The budget of the fixed part (issue 37): it was 1,822 with every tool offered.
const BUDGET: usize = 1600;
/// What one listed skill or agent may add to every request.
const PER_EXTENSION: usize = 60;

/// The estimated tokens of request `body`'s fixed part, with the workspace path and platform
/// written the same on every machine (their length would otherwise move the count).
fn fixed_tokens(body: &Value, ws: &std::path::Path) -> usize {
    let platform = format!("{} {}", std::env::consts::OS, std::env::consts::ARCH);
    let text = format!("{}{}", body["system"], body["tools"])
        .replace(&ws.display().to_string(), "/workspace")
        .replace(&platform, "linux x86_64");
    text.len().div_ceil(4)
}

async fn first_request(world: &World) -> Value {
    let fake = FakeProvider::start().await.unwrap();
    let mut c = world.spawn_acp(provider_env(&fake, Api::Anthropic));
    c.initialize().await;
    let s = sid(&c.new_session(&world.ws()).await);
    fake.push(Script::new().text("hi"));
    prompt_to_end(&mut c, &s, "hello").await;
    stop(c).await;
    fake.requests()[0].body.clone()
}

/// The count is pinned: a change to a tool's or the prompt's text shows up here, and must stay
/// within the budget. After an intended change, set `FIXED` to the count the failure prints.
#[tokio::test]
async fn the_fixed_part_of_a_request_is_pinned_and_within_budget() {
    // 1,311 before `task`'s `isolation` argument (worktrees); `diagnostics` is not offered where
    // no language server can run (`docs/lsp.md`), as here.
    const FIXED: usize = 1348;
    let world = World::new();
    let body = first_request(&world).await;
    let tools = tool_names(&body);
    assert_eq!(
        tools,
        [
            "read",
            "write",
            "edit",
            "bash",
            "grep",
            "find",
            "ls",
            "update_plan",
            "web_fetch",
            "task"
        ],
        "tools that cannot be used yet are not offered"
    );
    let tokens = fixed_tokens(&body, &world.ws());
    assert!(tokens <= BUDGET, "{tokens} tokens > {BUDGET}");
    assert_eq!(tokens, FIXED, "the fixed part of a request changed");
}

/// A repository with 5 skills, 2 agents and hooks: each listed skill or agent costs at most
/// [`PER_EXTENSION`] tokens of every request, the `skill` tool included.
#[tokio::test]
async fn a_listed_skill_or_agent_costs_at_most_sixty_tokens() {
    let plain = World::new();
    let plain_tokens = fixed_tokens(&first_request(&plain).await, &plain.ws());
    let world = World::new();
    extension_fixture(&world.ws());
    trust(&world);
    let body = first_request(&world).await;
    let text = body.to_string();
    for name in SKILLS.iter().map(|s| s.0).chain(AGENTS.iter().map(|a| a.0)) {
        assert!(text.contains(&format!("- {name}: ")), "{name} is listed");
    }
    let tokens = fixed_tokens(&body, &world.ws());
    let per = (tokens - plain_tokens) / (SKILLS.len() + AGENTS.len());
    assert!(
        per <= PER_EXTENSION,
        "{per} tokens per extension ({tokens} in all)"
    );
}

const SKILLS: [(&str, &str); 5] = [
    (
        "pdf",
        "Extract text and tables from PDF files, fill forms, merge documents. Use when working \
         with PDF files or when the user mentions PDFs, forms or document extraction.",
    ),
    (
        "release-notes",
        "Write release notes from the git log since the last tag, grouped by kind of change.",
    ),
    (
        "db-migrations",
        "Create and review database migrations: naming, reversible steps, locking on large \
         tables. Use when a change touches the schema.",
    ),
    (
        "api-docs",
        "Keep the OpenAPI description and the handler code in step; use when adding or changing \
         an HTTP endpoint.",
    ),
    (
        "frontend-tests",
        "Write and fix component tests with the project's testing library conventions.",
    ),
];

const AGENTS: [(&str, &str); 2] = [
    (
        "code-reviewer",
        "Reviews a diff for bugs, missing tests and style problems; use after a change is made.",
    ),
    (
        "debugger",
        "Finds the cause of a failing test or error message by reading code and running checks.",
    ),
];

/// Skills, agents and hooks as a Claude Code user's repository has them.
fn extension_fixture(ws: &std::path::Path) {
    for (name, description) in SKILLS {
        let dir = ws.join(".claude/skills").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let text = format!("---\nname: {name}\ndescription: {description}\n---\nSteps.\n");
        std::fs::write(dir.join("SKILL.md"), text).unwrap();
    }
    let agents = ws.join(".claude/agents");
    std::fs::create_dir_all(&agents).unwrap();
    for (name, description) in AGENTS {
        let text = format!("---\nname: {name}\ndescription: {description}\n---\nYou help.\n");
        std::fs::write(agents.join(format!("{name}.md")), text).unwrap();
    }
    let hook = json!([{ "matcher": "Bash", "hooks": [{ "type": "command", "command": "true" }] }]);
    let settings = json!({ "hooks": { "PreToolUse": hook, "PostToolUse": hook } });
    std::fs::write(ws.join(".claude/settings.json"), settings.to_string()).unwrap();
}

/// `ferrite trust` in the workspace: the repository's hooks and agents are used from then on.
fn trust(world: &World) {
    let out = std::process::Command::new(BIN)
        .arg("trust")
        .current_dir(world.ws())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("FERRITE_HOME", world.home())
        .env("HOME", world.home().join("home"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

fn call(id: &str, tool: &str, input: Value) -> Script {
    Script::new().tool_call(id, tool, input.to_string())
}

async fn prompt(r: &mut Rig) {
    let id = r.send_prompt_id().await;
    let (_, answer) = r.client.collect_until_answer(&id).await;
    assert_eq!(answer.ok()["stopReason"], "end_turn");
}

fn offers_background_tools(body: &Value) -> (bool, bool) {
    let names = tool_names(body);
    (
        names.iter().any(|n| n == "bash_output"),
        names.iter().any(|n| n == "bash_kill"),
    )
}

/// `bash_output` and `bash_kill` are offered from the request after a background command
/// started, and no longer once the session is opened again without it.
#[tokio::test]
async fn background_tools_are_offered_once_a_background_command_exists() {
    let mut r = rig().await;
    r.set_mode("full").await;
    r.fake.push(call(
        "c1",
        "bash",
        json!({"command": "sleep 86443", "background": true}),
    ));
    r.fake.push(Script::new().text("started"));
    prompt(&mut r).await;
    let requests = r.fake.requests();
    assert_eq!(offers_background_tools(&requests[0].body), (false, false));
    assert_eq!(offers_background_tools(&requests[1].body), (true, true));

    r.client
        .request("session/close", json!({"sessionId": r.sid}))
        .await
        .ok();
    let loaded = r
        .client
        .request(
            "session/load",
            json!({"sessionId": r.sid, "cwd": r.world.ws(), "mcpServers": []}),
        )
        .await;
    loaded.ok();
    r.fake.push(Script::new().text("again"));
    prompt(&mut r).await;
    let last = r.fake.requests().last().unwrap().body.clone();
    assert_eq!(offers_background_tools(&last), (false, false));
    // The reloaded conversation still holds the earlier call: only the offer changed.
    assert!(last.to_string().contains("sleep 86443"));
}
