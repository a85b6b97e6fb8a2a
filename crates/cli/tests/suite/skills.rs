//! Skills in the files Claude Code users already have (`.claude/skills/<name>/SKILL.md`),
//! through the real binary: listed to the model and the editor, loaded on demand with the `skill`
//! tool, run as `/name`, and read under the same policy as instructions.

use std::time::Duration;

use ferrite_test_support::fake_provider::{FakeProvider, Script};
use serde_json::{Value, json};

use super::common::*;
use super::turns::{Api, provider_env};

const SKILL_MD: &str = "---\nname: release-notes\ndescription: Write release notes from the git \
log\nallowed-tools: read, grep\n---\nCollect the changes since the last tag and write \
RELEASE_NOTES.md. Focus: $ARGUMENTS\nSee template.md for the layout.\n";

#[tokio::test]
async fn a_claude_skill_is_listed_loaded_on_demand_and_run_as_a_command() {
    let world = World::new();
    let dir = world.ws().join(".claude/skills/release-notes");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), SKILL_MD).unwrap();
    std::fs::write(dir.join("template.md"), "## Added\n## Fixed\n").unwrap();
    let fake = FakeProvider::start().await.unwrap();
    let mut c = world.spawn_acp(provider_env(&fake, Api::Anthropic));
    c.initialize().await;
    let s = sid(&c.new_session(&world.ws()).await);
    let listed = c
        .wait_for(Duration::from_secs(10), |m| {
            m["params"]["update"]["sessionUpdate"] == "available_commands_update"
        })
        .await
        .unwrap();
    let commands = &listed["params"]["update"]["availableCommands"];
    let skill = commands
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "release-notes")
        .unwrap_or_else(|| panic!("listed: {commands}"));
    assert_eq!(skill["description"], "Write release notes from the git log");

    // The model sees names and descriptions, and loads a body and its files on demand.
    let call = |id: &str, input: Value| Script::new().tool_call(id, "skill", input.to_string());
    fake.push(call("k1", json!({"name": "release-notes"})));
    fake.push(call(
        "k2",
        json!({"name": "release-notes", "file": "template.md"}),
    ));
    fake.push(call(
        "k3",
        json!({"name": "release-notes", "file": "../../../../etc/hostname"}),
    ));
    fake.push(Script::new().text("loaded"));
    prompt_to_end(&mut c, &s, "write the notes").await;
    let requests = fake.requests();
    let first = requests[0].body.to_string();
    assert!(
        first.contains("release-notes: Write release notes from the git log"),
        "{first}"
    );
    assert!(
        !first.contains("Collect the changes"),
        "the body is loaded on demand only"
    );
    assert!(tool_names(&requests[0].body).contains(&"skill".to_owned()));
    let (body, is_error) = tool_results(&requests[1].body).remove(0);
    assert!(
        !is_error && body.contains("Collect the changes since the last tag"),
        "{body}"
    );
    assert!(body.contains("template.md"), "its files are named: {body}");
    let (template, _) = tool_results(&requests[2].body).remove(0);
    assert!(template.contains("## Added"), "{template}");
    let (outside, is_error) = tool_results(&requests[3].body).remove(0);
    assert!(
        is_error && outside.contains("inside the skill's folder"),
        "{outside}"
    );

    // `/release-notes v2` runs it as the prompt, with only the tools it allows.
    fake.push(Script::new().text("notes written"));
    prompt_to_end(&mut c, &s, "/release-notes v2").await;
    let last = fake.requests().last().unwrap().body.clone();
    let text = last.to_string();
    assert!(text.contains("RELEASE_NOTES.md. Focus: v2"), "{text}");
    let mut tools = tool_names(&last);
    tools.sort();
    assert_eq!(tools, ["grep", "read"], "allowed-tools narrows the turn");
}

/// A cloned repository's skill that links to a file outside it (a key) is neither listed nor
/// read, and a skill's file that does is refused; the key never reaches the model or the editor.
#[tokio::test]
async fn a_repository_skill_cannot_read_outside_the_repository() {
    let world = World::new();
    let secret = world.home().parent().unwrap().join("secret-key.txt");
    std::fs::write(&secret, "SECRET-KEY-0451").unwrap();
    let linked = world.ws().join(".claude/skills/linked");
    std::fs::create_dir_all(&linked).unwrap();
    std::os::unix::fs::symlink(&secret, linked.join("SKILL.md")).unwrap();
    let honest = world.ws().join(".agents/skills/honest");
    std::fs::create_dir_all(&honest).unwrap();
    std::fs::write(
        honest.join("SKILL.md"),
        "---\ndescription: An honest skill\n---\nBody.\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(&secret, honest.join("leak.md")).unwrap();
    let fake = FakeProvider::start().await.unwrap();
    let mut c = world.spawn_acp(provider_env(&fake, Api::Anthropic));
    c.initialize().await;
    let s = sid(&c.new_session(&world.ws()).await);
    fake.push(Script::new().tool_call(
        "k1",
        "skill",
        json!({"name": "honest", "file": "leak.md"}).to_string(),
    ));
    fake.push(Script::new().text("done"));
    let id = c
        .send_request("session/prompt", text_prompt(&s, "go"))
        .await;
    let (seen, answer) = c.collect_until_answer(&id).await;
    answer.ok();
    let requests = fake.requests();
    let first = requests[0].body.to_string();
    assert!(first.contains("honest: An honest skill"), "{first}");
    assert!(
        !first.contains("- linked:"),
        "a linked SKILL.md is not listed: {first}"
    );
    let (leak, is_error) = tool_results(&requests[1].body).remove(0);
    assert!(is_error, "{leak}");
    for r in &requests {
        assert!(!r.body.to_string().contains("SECRET-KEY-0451"));
    }
    assert!(
        !serde_json::to_string(&seen)
            .unwrap()
            .contains("SECRET-KEY-0451")
    );
}

/// Runs a prompt to its end, answering each permission request with `option`; the titles of
/// the calls asked about.
async fn prompt_answering(
    c: &mut ferrite_test_support::AcpClient,
    s: &str,
    option: &str,
) -> Vec<String> {
    let id = c.send_request("session/prompt", text_prompt(s, "go")).await;
    let mut asked = vec![];
    loop {
        let m = c
            .next_message(Duration::from_secs(20))
            .await
            .expect("a message");
        if m["method"] == "session/request_permission" {
            asked.push(
                m["params"]["toolCall"]["title"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned(),
            );
            let answer = json!({"outcome": {"outcome": "selected", "optionId": option}});
            c.respond(&m["id"], answer).await;
        } else if m.get("id") == Some(&id) && m.get("method").is_none() {
            assert_eq!(m["result"]["stopReason"], "end_turn", "{m}");
            return asked;
        }
    }
}

/// A project skill above the cwd (the repository root's `.claude/skills`) may not hand the model a
/// file outside its own folder through a link; and a file of its own folder is outside the
/// workspace the editor opened, so the user is asked first, as `read` of it would.
#[tokio::test]
async fn a_skill_file_is_read_only_inside_the_skill_s_folder() {
    let world = World::new();
    let repo = world.ws();
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(repo.join("app")).unwrap();
    std::fs::write(repo.join("private.txt"), "PRIVATE-NOTES-7731").unwrap();
    let dir = repo.join(".claude/skills/notes");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\ndescription: Notes\n---\nRead guide.md.\n",
    )
    .unwrap();
    std::fs::write(dir.join("guide.md"), "GUIDE-TEXT").unwrap();
    std::os::unix::fs::symlink(repo.join("private.txt"), dir.join("leak.md")).unwrap();
    let fake = FakeProvider::start().await.unwrap();
    let mut c = world.spawn_acp(provider_env(&fake, Api::Anthropic));
    c.initialize().await;
    let s = sid(&c.new_session(&repo.join("app")).await);
    let call = |id: &str, file: &str| {
        Script::new().tool_call(
            id,
            "skill",
            json!({"name": "notes", "file": file}).to_string(),
        )
    };
    fake.push(call("k1", "guide.md"));
    fake.push(call("k2", "leak.md"));
    fake.push(Script::new().text("done"));
    let asked = prompt_answering(&mut c, &s, "allow_once").await;
    assert_eq!(
        asked,
        ["Skill notes: guide.md"],
        "only the file it may read"
    );
    let requests = fake.requests();
    let (guide, _) = tool_results(&requests[1].body).remove(0);
    assert!(guide.contains("GUIDE-TEXT"), "{guide}");
    let (leak, is_error) = tool_results(&requests[2].body).remove(0);
    assert!(is_error, "{leak}");
    for r in &requests {
        assert!(!r.body.to_string().contains("PRIVATE-NOTES-7731"));
    }
}

/// The case: `R/sub/.claude/skills/rootskill` links to the repository root `R`, the
/// editor opened `R/sub`. `skill {name, file: "topsecret.txt"}` is `read ../topsecret.txt`: the
/// user is asked, and a refusal keeps the file from the model. A skill file inside the
/// workspace is read without a question, as `read` would.
#[tokio::test]
async fn a_skill_folder_linked_to_the_repository_root_hands_out_nothing_read_would_ask_about() {
    let world = World::new();
    let repo = world.ws();
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::write(repo.join("topsecret.txt"), "TOP-SECRET-5150").unwrap();
    std::fs::write(
        repo.join("SKILL.md"),
        "---\nname: rootskill\ndescription: The root\n---\nRoot.\n",
    )
    .unwrap();
    let skills = repo.join("sub/.claude/skills");
    std::fs::create_dir_all(skills.join("honest")).unwrap();
    std::fs::write(
        skills.join("honest/SKILL.md"),
        "---\ndescription: Honest\n---\nSee guide.md.\n",
    )
    .unwrap();
    std::fs::write(skills.join("honest/guide.md"), "GUIDE-TEXT").unwrap();
    std::os::unix::fs::symlink(&repo, skills.join("rootskill")).unwrap();
    let fake = FakeProvider::start().await.unwrap();
    let mut c = world.spawn_acp(provider_env(&fake, Api::Anthropic));
    c.initialize().await;
    let s = sid(&c.new_session(&repo.join("sub")).await);
    let call = |id: &str, name: &str, file: &str| {
        Script::new().tool_call(id, "skill", json!({"name": name, "file": file}).to_string())
    };
    fake.push(call("k1", "rootskill", "topsecret.txt"));
    fake.push(call("k2", "honest", "guide.md"));
    fake.push(Script::new().text("done"));
    let asked = prompt_answering(&mut c, &s, "reject_once").await;
    assert_eq!(asked, ["Skill rootskill: topsecret.txt"]);
    let requests = fake.requests();
    let (secret, is_error) = tool_results(&requests[1].body).remove(0);
    assert!(is_error, "{secret}");
    let (guide, is_error) = tool_results(&requests[2].body).remove(0);
    assert!(!is_error && guide.contains("GUIDE-TEXT"), "{guide}");
    for r in &requests {
        assert!(!r.body.to_string().contains("TOP-SECRET-5150"));
    }
}
