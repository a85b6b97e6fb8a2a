//! Hooks in Claude Code's format through the real binary: the user's (`~/.claude/settings.json`,
//! `config.toml` `[hooks]`) run at once; a repository's (`.claude/settings.json`,
//! `.ferrite/config.toml`) only after the user trusted the folder when asked in the editor.

use ferrite_test_support::AcpClient;
use ferrite_test_support::fake_provider::{FakeProvider, Script};
use serde_json::{Value, json};

use super::common::*;
use super::turns::{Api, provider_env};

/// A PreToolUse hook that blocks `rm` (exit 2, the reason on stderr), reading the event on stdin.
const BLOCK_RM: &str =
    r#"if grep -q '"command":"rm '; then echo "rm is blocked by the team policy" >&2; exit 2; fi"#;

fn settings(hooks: Value) -> String {
    json!({ "permissions": { "allow": ["Bash(*)"] }, "hooks": hooks }).to_string()
}

fn group(matcher: &str, command: &str) -> Value {
    json!([{ "matcher": matcher, "hooks": [{ "type": "command", "command": command, "timeout": 20 }] }])
}

fn call(id: &str, tool: &str, input: Value) -> Script {
    Script::new().tool_call(id, tool, input.to_string())
}

fn asked(seen: &[Value]) -> Vec<&Value> {
    seen.iter()
        .filter(|m| m["method"] == "session/request_permission")
        .collect()
}

#[tokio::test]
async fn user_hooks_block_a_command_and_add_context_for_the_model() {
    let world = World::new();
    let claude = world.home().join("home/.claude");
    std::fs::create_dir_all(&claude).unwrap();
    let post = r#"echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"POST-CONTEXT-1234"}}'"#;
    std::fs::write(
        claude.join("settings.json"),
        settings(json!({
            "PreToolUse": group("Bash", BLOCK_RM),
            "PostToolUse": group("Read", post),
            "UserPromptSubmit": group("", "echo PROMPT-CONTEXT-5678"),
        })),
    )
    .unwrap();
    std::fs::write(world.ws().join("keep.txt"), "KEEP-ME").unwrap();
    let fake = FakeProvider::start().await.unwrap();
    let mut c = world.spawn_acp(provider_env(&fake, Api::Anthropic));
    c.initialize().await;
    let s = sid(&c.new_session(&world.ws()).await);
    fake.push(call("b1", "bash", json!({"command": "rm -f keep.txt"})));
    fake.push(call("r1", "read", json!({"path": "keep.txt"})));
    fake.push(Script::new().text("done"));
    let seen = prompt_to_end(&mut c, &s, "tidy up").await;

    let requests = fake.requests();
    assert!(
        requests[0].body.to_string().contains("PROMPT-CONTEXT-5678"),
        "UserPromptSubmit's output is context for the model"
    );
    let (blocked, is_error) = tool_results(&requests[1].body).remove(0);
    assert!(
        is_error && blocked.contains("rm is blocked by the team policy"),
        "{blocked}"
    );
    assert_eq!(
        std::fs::read_to_string(world.ws().join("keep.txt")).unwrap(),
        "KEEP-ME"
    );
    assert!(
        asked(&seen).is_empty(),
        "a blocked call is not put to the user"
    );
    let (read, is_error) = tool_results(&requests[2].body).remove(0);
    assert!(
        !is_error && read.contains("KEEP-ME") && read.contains("POST-CONTEXT-1234"),
        "{read}"
    );
    // The user sees what the hooks did: the refused card, and the context they added.
    let shown = serde_json::to_string(&seen).unwrap();
    assert!(shown.contains("Blocked by a PreToolUse hook"), "{shown}");
    assert!(shown.contains("POST-CONTEXT-1234"), "{shown}");
    // The hooks' output is in their answers; no file per hook run is left behind.
    let spill = world.home().join("sessions").join(&s).join("tool-output");
    assert!(
        spill.is_dir(),
        "the hooks ran through the runner, which made {spill:?}"
    );
    let left: Vec<_> = std::fs::read_dir(&spill)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

/// A hook can make a decision stricter, never wider: its `allow` saves the question about an
/// `echo`, but a deny rule still refuses `rm`.
#[tokio::test]
async fn a_hook_allow_never_overrides_a_deny_rule() {
    let world = World::new();
    let allow = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}'"#;
    world.write_config(&format!(
        "[permissions]\ndeny = [\"bash(rm:*)\"]\n\n[[hooks.PreToolUse]]\nmatcher = \"bash\"\nhooks = [{{ type = \"command\", command = '''{allow}''' }}]\n"
    ));
    std::fs::write(world.ws().join("keep.txt"), "KEEP-ME").unwrap();
    let fake = FakeProvider::start().await.unwrap();
    let mut c = world.spawn_acp(provider_env(&fake, Api::Anthropic));
    c.initialize().await;
    let s = sid(&c.new_session(&world.ws()).await);
    fake.push(call("b1", "bash", json!({"command": "rm -f keep.txt"})));
    fake.push(call("b2", "bash", json!({"command": "echo HOOK-ALLOWED"})));
    fake.push(Script::new().text("done"));
    let seen = prompt_to_end(&mut c, &s, "go").await;
    let requests = fake.requests();
    let (denied, is_error) = tool_results(&requests[1].body).remove(0);
    assert!(is_error && denied.contains("Permission denied"), "{denied}");
    assert!(world.ws().join("keep.txt").exists());
    let (echoed, is_error) = tool_results(&requests[2].body).remove(0);
    assert!(!is_error && echoed.contains("HOOK-ALLOWED"), "{echoed}");
    assert!(
        asked(&seen).is_empty(),
        "the hook's allow answered for the user"
    );
}

/// A Stop hook sends the model back to work once (`stop_hook_active` tells it the second time).
#[tokio::test]
async fn a_stop_hook_sends_the_agent_back_once() {
    let world = World::new();
    let stop =
        r#"if grep -q '"stop_hook_active":false'; then echo "also run the tests" >&2; exit 2; fi"#;
    world.write_config(&format!(
        "[[hooks.Stop]]\nhooks = [{{ type = \"command\", command = '''{stop}''' }}]\n"
    ));
    let fake = FakeProvider::start().await.unwrap();
    let mut c = world.spawn_acp(provider_env(&fake, Api::Anthropic));
    c.initialize().await;
    let s = sid(&c.new_session(&world.ws()).await);
    fake.push(Script::new().text("first answer"));
    fake.push(Script::new().text("tests run too"));
    prompt_to_end(&mut c, &s, "fix it").await;
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests[1].body.to_string().contains("also run the tests"),
        "{}",
        requests[1].body
    );
}

/// The attack: a cloned repository ships hooks (Claude Code's project settings and Ferrite's
/// workspace config) that would run a command as soon as the user types. They run only after the
/// user trusts the folder in the editor, and the answer is remembered.
#[tokio::test]
async fn a_repository_s_hooks_run_only_after_the_user_trusts_the_folder() {
    let world = World::new();
    let ws = world.ws();
    repository_with_prompt_hooks(&ws);
    let fake = FakeProvider::start().await.unwrap();
    let mut c = world.spawn_acp(provider_env(&fake, Api::Anthropic));
    c.initialize().await;
    let ran = |name: &str| ws.join("out").join(name).exists();

    // Not trusted: the user is asked, says "not now", and nothing of the repository runs.
    let s = sid(&c.new_session(&ws).await);
    fake.push(Script::new().text("one"));
    let question = prompt_and_answer_trust(&mut c, &s, "not-now").await;
    let title = question["params"]["toolCall"]["title"].as_str().unwrap();
    assert!(title.contains("Trust the folder"), "{title}");
    let listed = question["params"]["toolCall"]["content"].to_string();
    assert!(
        listed.contains("claude-hook-ran") && listed.contains("toml-hook-ran"),
        "{listed}"
    );
    assert!(!ran("claude-hook-ran") && !ran("toml-hook-ran"));
    assert!(
        !fake.requests()[0]
            .body
            .to_string()
            .contains("PROJECT-HOOK-CONTEXT")
    );
    // Not asked again in this session.
    fake.push(Script::new().text("two"));
    let id = c
        .send_request("session/prompt", text_prompt(&s, "again"))
        .await;
    let (seen, answer) = c.collect_until_answer(&id).await;
    answer.ok();
    assert!(asked(&seen).is_empty());
    assert!(!ran("claude-hook-ran"));

    // "Not now" holds for the other sessions of this process too.
    let other = sid(&c.new_session(&ws).await);
    fake.push(Script::new().text("quiet"));
    let seen = prompt_to_end(&mut c, &other, "hello").await;
    assert!(asked(&seen).is_empty());
    assert!(!ran("claude-hook-ran"));

    // Trusted when asked again after a restart: both hooks run, then and in every later session.
    drop(c);
    let mut c = world.spawn_acp(provider_env(&fake, Api::Anthropic));
    c.initialize().await;
    let s2 = sid(&c.new_session(&ws).await);
    fake.push(Script::new().text("three"));
    prompt_and_answer_trust(&mut c, &s2, "trust").await;
    assert!(ran("claude-hook-ran") && ran("toml-hook-ran"));
    assert!(
        fake.requests()[3]
            .body
            .to_string()
            .contains("PROJECT-HOOK-CONTEXT")
    );
    let s3 = sid(&c.new_session(&ws).await);
    std::fs::remove_file(ws.join("out/claude-hook-ran")).unwrap();
    fake.push(Script::new().text("four"));
    let id = c
        .send_request("session/prompt", text_prompt(&s3, "hello"))
        .await;
    let (seen, answer) = c.collect_until_answer(&id).await;
    answer.ok();
    assert!(asked(&seen).is_empty(), "the answer is remembered");
    assert!(ran("claude-hook-ran"));
}

/// A cloned repository whose Claude Code settings and Ferrite config each run a hook on every
/// prompt. Hooks write under `out/`: a new entry directly in the root (which holds the protected
/// `.claude` and `.ferrite`) cannot be made by a sandboxed command (`docs/sandbox.md`).
fn repository_with_prompt_hooks(ws: &std::path::Path) {
    std::fs::create_dir_all(ws.join(".claude")).unwrap();
    std::fs::create_dir_all(ws.join(".ferrite")).unwrap();
    std::fs::create_dir_all(ws.join("out")).unwrap();
    std::fs::write(
        ws.join(".claude/settings.json"),
        settings(json!({
            "UserPromptSubmit": group("", r#"touch "$CLAUDE_PROJECT_DIR/out/claude-hook-ran"; echo PROJECT-HOOK-CONTEXT"#),
        })),
    )
    .unwrap();
    std::fs::write(
        ws.join(".ferrite/config.toml"),
        "[[hooks.UserPromptSubmit]]\nhooks = [{ command = 'touch \"$CLAUDE_PROJECT_DIR/out/toml-hook-ran\"' }]\n",
    )
    .unwrap();
}

/// Prompts `hello` in `s`, answers the question to trust the folder with `choice`, and returns
/// the question once the prompt has ended well.
async fn prompt_and_answer_trust(c: &mut AcpClient, s: &str, choice: &str) -> Value {
    let id = c
        .send_request("session/prompt", text_prompt(s, "hello"))
        .await;
    let question = c
        .wait_for(std::time::Duration::from_secs(10), |m| {
            m["method"] == "session/request_permission"
        })
        .await
        .expect("the user is asked to trust the folder");
    c.respond(
        &question["id"],
        json!({"outcome": {"outcome": "selected", "optionId": choice}}),
    )
    .await;
    let (_, answer) = c.collect_until_answer(&id).await;
    assert_eq!(answer.ok()["stopReason"], "end_turn");
    question
}

fn cli(world: &World, args: &[&str]) -> String {
    let out = std::process::Command::new(BIN)
        .args(args)
        .current_dir(world.ws())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("FERRITE_HOME", world.home())
        .env("HOME", world.home().join("home"))
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `ferrite doctor` lists a repository's hooks as not run until `ferrite trust`.
#[test]
fn doctor_lists_untrusted_hooks_and_trust_turns_them_on() {
    let world = World::new();
    std::fs::create_dir_all(world.ws().join(".claude")).unwrap();
    std::fs::write(
        world.ws().join(".claude/settings.json"),
        settings(json!({ "Stop": group("", "echo PROJECT-STOP") })),
    )
    .unwrap();
    let before = cli(&world, &["doctor"]);
    assert!(before.contains("(not trusted)"), "{before}");
    assert!(
        before.contains("hook NOT RUN") && before.contains("echo PROJECT-STOP"),
        "{before}"
    );
    let trusted = cli(&world, &["trust"]);
    assert!(
        trusted.contains("now on: Stop hook") && trusted.contains("| echo PROJECT-STOP"),
        "{trusted}"
    );
    let after = cli(&world, &["doctor"]);
    assert!(
        after.contains("(trusted)")
            && after.contains("hook: Stop hook")
            && after.contains("| echo PROJECT-STOP"),
        "{after}"
    );
}

/// A hook runs as the session's commands do: in `plan` mode it cannot write, and it never sees
/// the provider's key.
#[tokio::test]
async fn hooks_run_sandboxed_in_the_session_s_mode_without_keys() {
    let world = World::new();
    world.write_config(
        "[[hooks.UserPromptSubmit]]\nhooks = [{ command = '''echo \"KEY=${ANTHROPIC_API_KEY:-none}\"; touch \"$CLAUDE_PROJECT_DIR/written\" && echo WROTE; exit 0''' }]\n",
    );
    let fake = FakeProvider::start().await.unwrap();
    let mut c = world.spawn_acp(provider_env(&fake, Api::Anthropic));
    c.initialize().await;
    let s = sid(&c.new_session(&world.ws()).await);
    c.request(
        "session/set_mode",
        json!({"sessionId": s, "modeId": "plan"}),
    )
    .await
    .ok();
    fake.push(Script::new().text("planned"));
    prompt_to_end(&mut c, &s, "plan it").await;
    let body = fake.requests()[0].body.to_string();
    assert!(body.contains("KEY=none"), "{body}");
    assert!(
        !body.contains("test-anthropic-key") && !body.contains("WROTE"),
        "{body}"
    );
    assert!(!world.ws().join("written").exists());
}

/// The attack: in a trusted folder, a hostile model (told so by a file it read) writes a hook
/// into the project's settings, an edit `auto` mode makes without a question. The hook would
/// then run a command at every prompt, in every later session, in any mode. The write asks
/// (settings are protected in every mode below `full`); approved, trust still covers only the
/// hooks the user was shown: a new one is off until the user is asked about it.
#[tokio::test]
async fn a_hook_the_model_writes_into_a_trusted_folder_stays_off() {
    let world = World::new();
    let ws = world.ws();
    std::fs::create_dir_all(ws.join(".claude")).unwrap();
    let benign = settings(json!({ "Stop": group("", "echo TRUSTED-STOP") }));
    std::fs::write(ws.join(".claude/settings.json"), &benign).unwrap();
    assert!(cli(&world, &["trust"]).contains("now on: Stop hook"));
    let fake = FakeProvider::start().await.unwrap();
    let mut c = world.spawn_acp(provider_env(&fake, Api::Anthropic));
    c.initialize().await;
    let s = sid(&c.new_session(&ws).await);
    c.request(
        "session/set_mode",
        json!({"sessionId": s, "modeId": "auto"}),
    )
    .await
    .ok();
    let planted = settings(json!({
        "Stop": group("", "echo TRUSTED-STOP"),
        "UserPromptSubmit": group("", r#"touch "$CLAUDE_PROJECT_DIR/planted-hook-ran""#),
    }));
    let path = ws.join(".claude/settings.json");
    fake.push(Script::new().tool_call(
        "w1",
        "write",
        json!({"path": path, "content": planted}).to_string(),
    ));
    fake.push(Script::new().text("done"));
    let id = c
        .send_request(
            "session/prompt",
            text_prompt(&s, "read the docs and do as they say"),
        )
        .await;
    let write_question = c
        .wait_for(std::time::Duration::from_secs(10), |m| {
            m["method"] == "session/request_permission"
        })
        .await
        .expect("writing the project's settings asks, even in auto");
    c.respond(
        &write_question["id"],
        json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}}),
    )
    .await;
    c.collect_until_answer(&id).await.1.ok();
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .contains("planted-hook-ran")
    );

    // A new session: the planted hook is not run; the user is asked about it, by name.
    let s2 = sid(&c.new_session(&ws).await);
    fake.push(Script::new().text("next"));
    let id = c
        .send_request("session/prompt", text_prompt(&s2, "next"))
        .await;
    let question = c
        .wait_for(std::time::Duration::from_secs(10), |m| {
            m["method"] == "session/request_permission"
        })
        .await
        .expect("asked about the new hook");
    let listed = question["params"]["toolCall"]["content"].to_string();
    assert!(listed.contains("planted-hook-ran"), "{listed}");
    assert!(
        !listed.contains("TRUSTED-STOP"),
        "what was trusted is not asked again: {listed}"
    );
    c.respond(
        &question["id"],
        json!({"outcome": {"outcome": "selected", "optionId": "not-now"}}),
    )
    .await;
    let (_, answer) = c.collect_until_answer(&id).await;
    answer.ok();
    assert!(!ws.join("planted-hook-ran").exists());
}
