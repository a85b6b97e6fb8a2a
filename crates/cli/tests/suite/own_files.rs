//! Files Ferrite reads on its own behalf, planted by a hostile repository: instruction files and
//! prompt files that are links out of the workspace, into FERRITE_HOME, to a file a deny rule
//! covers, to the agent's own `/proc` entry, or FIFOs. Nothing secret may reach the model or the
//! editor, and nothing may hang the agent.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::{Duration, Instant};

use ferrite_test_support::fake_provider::Script;
use serde_json::{Value, json};

use super::common::*;
use super::permissions::{Rig, start};

const STORED_KEY: &str = "sk-stored-HOME-SECRET-1111";
const OUTSIDE_KEY: &str = "OUTSIDE-PRIVATE-KEY-2222";
const ENV_KEY: &str = "DOTENV-SECRET-3333";
const CORP_TOKEN: &str = "corp-llm-token-4444";

fn fifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

/// FERRITE_HOME with a stored key, a key outside the workspace, a `.env` a deny rule covers.
fn secrets(world: &World) -> tempfile::TempDir {
    std::fs::write(
        world.home().join("credentials.json"),
        json!({"providers": {"openai": {"api_key": STORED_KEY}}}).to_string(),
    )
    .unwrap();
    world.write_config("[permissions]\ndeny = [\"read(**/.env)\"]\n");
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("id_ed25519"), OUTSIDE_KEY).unwrap();
    std::fs::write(world.ws().join(".env"), ENV_KEY).unwrap();
    outside
}

fn assert_no_secret(what: &str, text: &str) {
    for s in [STORED_KEY, OUTSIDE_KEY, ENV_KEY, CORP_TOKEN] {
        assert!(!text.contains(s), "{s} reached {what}: {text}");
    }
}

async fn prompt(r: &mut Rig, text: &str) -> Vec<Value> {
    let id = r
        .client
        .send_request("session/prompt", text_prompt(&r.sid, text))
        .await;
    let (before, answer) = r.client.collect_until_answer(&id).await;
    assert_eq!(answer.ok()["stopReason"], "end_turn");
    before
}

#[tokio::test]
async fn instruction_files_that_link_out_or_are_fifos_are_not_read() {
    let world = World::new();
    let outside = secrets(&world);
    let ws = world.ws();
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    // The root's instructions are the agent's own environment.
    symlink("/proc/self/environ", ws.join("AGENTS.md")).unwrap();
    let home = std::fs::canonicalize(world.home()).unwrap();
    let mut reads = Vec::new();
    for name in ["outside", "home", "dotenv", "fifo", "fine"] {
        let dir = ws.join("pkgs").join(name);
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join("src/lib.rs"), "fn f() {}\n").unwrap();
        let agents = dir.join("AGENTS.md");
        match name {
            "outside" => symlink(outside.path().join("id_ed25519"), &agents).unwrap(),
            "home" => symlink(home.join("credentials.json"), &agents).unwrap(),
            "dotenv" => symlink("../../.env", &agents).unwrap(),
            "fifo" => fifo(&agents),
            _ => std::fs::write(&agents, "FINE-PACKAGE-RULE").unwrap(),
        }
        let args = json!({"path": format!("pkgs/{name}/src/lib.rs")}).to_string();
        reads.push((format!("r-{name}"), args));
    }
    let mut r = start(world, None, &[("CORP_LLM_TOKEN", CORP_TOKEN)]).await;
    r.set_mode("auto").await;
    let calls: Vec<(&str, &str, &str)> = reads
        .iter()
        .map(|(id, args)| (id.as_str(), "read", args.as_str()))
        .collect();
    r.fake.push(Script::new().parallel_tool_calls(&calls));
    r.fake.push(Script::new().text("read them"));
    let t = Instant::now();
    let seen = prompt(&mut r, "read the packages").await;
    // A FIFO read would never end.
    assert!(t.elapsed() < HANG_GUARD, "{:?}", t.elapsed());
    let reqs = r.fake.requests();
    assert_eq!(reqs.len(), 2);
    for req in &reqs {
        assert_no_secret("the model", &req.body.to_string());
    }
    assert_no_secret("the editor", &serde_json::to_string(&seen).unwrap());
    let last = reqs[1].body.to_string();
    assert!(last.contains("FINE-PACKAGE-RULE"), "{last}");
    assert!(reqs[0].body.to_string().contains("were not read"));
}

#[tokio::test]
async fn prompt_files_that_link_out_are_neither_listed_nor_run() {
    let world = World::new();
    let outside = secrets(&world);
    let home = std::fs::canonicalize(world.home()).unwrap();
    let project = world.ws().join(".ferrite/commands");
    std::fs::create_dir_all(&project).unwrap();
    symlink(home.join("credentials.json"), project.join("fix.md")).unwrap();
    symlink("../../.env", project.join("env.md")).unwrap();
    fifo(&project.join("hang.md"));
    std::fs::write(project.join("ok.md"), "Run the checks.").unwrap();
    std::fs::create_dir_all(home.join("commands")).unwrap();
    symlink(
        outside.path().join("id_ed25519"),
        home.join("commands/mine.md"),
    )
    .unwrap();
    let mut r = start(world, None, &[]).await;
    let list = r
        .client
        .wait_for(Duration::from_secs(5), |m| {
            m["params"]["update"]["sessionUpdate"] == "available_commands_update"
        })
        .await
        .expect("the command list");
    let names: Vec<&str> = list["params"]["update"]["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
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
            "ok"
        ]
    );
    assert_no_secret("the command list", &list.to_string());
    for command in ["/fix", "/mine", "/env", "/hang"] {
        r.fake.push(Script::new().text("no such command"));
        let seen = prompt(&mut r, command).await;
        assert_no_secret("the editor", &serde_json::to_string(&seen).unwrap());
    }
    for req in r.fake.requests() {
        assert_no_secret("the model", &req.body.to_string());
    }
}

#[tokio::test]
async fn a_workspace_config_that_is_a_fifo_or_a_link_to_the_keys_is_refused_without_its_content() {
    for plant in ["fifo", "keys"] {
        let world = World::new();
        let _outside = secrets(&world);
        let dir = world.ws().join(".ferrite");
        std::fs::create_dir_all(&dir).unwrap();
        match plant {
            "fifo" => fifo(&dir.join("config.toml")),
            _ => symlink(
                std::fs::canonicalize(world.home())
                    .unwrap()
                    .join("credentials.json"),
                dir.join("config.toml"),
            )
            .unwrap(),
        }
        let mut c = world.client().await;
        let t = Instant::now();
        let answer = c
            .request("session/new", json!({"cwd": world.ws(), "mcpServers": []}))
            .await;
        assert!(t.elapsed() < HANG_GUARD, "{plant}: {:?}", t.elapsed());
        let message = answer.message();
        assert!(message.contains("config.toml"), "{plant}: {message}");
        assert_no_secret("the editor", &message);
    }
}
