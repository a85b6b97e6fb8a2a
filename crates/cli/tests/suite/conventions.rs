//! The command-line conventions users bring from `claude -p`, `codex exec` and `opencode run`
//! (issue 36): `-p`, a prompt on stdin, `-m`, `-c`, `-o`, `-C`, `--add-dir`, completions and
//! the man page, `ferrite mcp add|list|remove`, an empty `ferrite sessions list`.

use std::path::PathBuf;

use ferrite_test_support::fake_provider::{FakeProvider, Script};
use serde_json::json;

use super::common::*;
use super::headless::{Invocation, session_files, text};
use super::turns::{Api, provider_env};

/// The text of the first user message of a recorded Anthropic request.
fn first_prompt(body: &serde_json::Value) -> String {
    body["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn print_alias_takes_the_prompt_from_stdin_and_writes_the_last_message() {
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    fake.push(Script::new().text("the answer"));
    fake.push(Script::new().text("again"));
    let mut env = provider_env(&fake, Api::Anthropic);
    env.retain(|(k, _)| k != "FERRITE_MODEL");
    let elsewhere = tempfile::tempdir().unwrap();
    let args = [
        "-p",
        "-m",
        "anthropic/claude-sonnet-4-5",
        "-o",
        "last.txt",
        "-C",
    ];
    let ws = world.ws();
    let mut all: Vec<&str> = args.to_vec();
    all.push(ws.to_str().unwrap());
    let out = Invocation::new(&world, &all, &env)
        .cwd(elsewhere.path())
        .stdin("summarize this\nplease\n")
        .run()
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "the answer");
    let request = &fake.requests()[0];
    assert_eq!(first_prompt(&request.body), "summarize this\nplease");
    assert_eq!(request.body["model"], "claude-sonnet-4-5");
    // `-o` is relative to where the command was typed; `-C` is where the agent works.
    assert_eq!(
        std::fs::read_to_string(elsewhere.path().join("last.txt")).unwrap(),
        "the answer"
    );
    let sessions = std::fs::read_to_string(&session_files(&world)[0]).unwrap();
    assert!(sessions.contains(&*ws.to_string_lossy()), "{sessions}");

    // `-` reads stdin too.
    let out = Invocation::new(&world, &["run", "-"], &env)
        .stdin("from a pipe")
        .run()
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(first_prompt(&fake.requests()[1].body), "from a pipe");
}

#[test]
fn no_prompt_at_all_is_a_usage_error() {
    let world = World::new();
    let out = Invocation::new(&world, &["run"], &[]).run_blocking();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("prompt"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(session_files(&world), Vec::<PathBuf>::new());
}

#[tokio::test]
async fn add_dir_is_another_root_the_agent_may_edit() {
    let world = World::new();
    let extra = tempfile::tempdir().unwrap();
    let extra_dir = extra.path().canonicalize().unwrap();
    let target = extra_dir.join("notes.txt");
    let fake = FakeProvider::start().await.unwrap();
    let write = json!({"path": target, "content": "x\n"}).to_string();
    fake.push(Script::new().tool_call("w1", "write", write.clone()));
    fake.push(Script::new().text("done"));
    let env = provider_env(&fake, Api::Anthropic);
    let dir = extra_dir.to_str().unwrap();
    let out = Invocation::new(&world, &["run", "--add-dir", dir, "write notes"], &env)
        .run()
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "x\n");

    // Without it, the same write is outside the workspace: it would ask, so it is refused.
    std::fs::remove_file(&target).unwrap();
    fake.push(Script::new().tool_call("w1", "write", write));
    fake.push(Script::new().text("done"));
    let out = Invocation::new(&world, &["run", "write notes"], &env)
        .run()
        .await;
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(!target.exists());
}

#[tokio::test]
async fn continue_picks_the_last_session_of_this_directory() {
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    let env = provider_env(&fake, Api::Anthropic);
    let out = Invocation::new(&world, &["run", "-c", "more"], &env)
        .run()
        .await;
    assert_eq!(out.status.code(), Some(1), "nothing to continue yet");
    assert!(text(&out.stderr).contains("no session to continue"));

    fake.push(Script::new().text("one"));
    fake.push(Script::new().text("two"));
    let out = Invocation::new(&world, &["run", "first prompt"], &env)
        .run()
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = Invocation::new(&world, &["run", "-c", "second prompt"], &env)
        .run()
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        fake.requests()[1].body.to_string().contains("first prompt"),
        "the history went on"
    );
    assert_eq!(session_files(&world).len(), 1);
}

#[test]
fn completions_and_the_man_page_come_from_the_same_definitions() {
    let world = World::new();
    for shell in ["bash", "zsh", "fish"] {
        let out = Invocation::new(&world, &["completions", shell], &[]).run_blocking();
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let script = text(&out.stdout);
        for word in [
            // fish writes long options without their dashes
            "add-dir",
            "output-last-message",
            "completions",
            "doctor",
        ] {
            assert!(script.contains(word), "{shell} lacks {word}");
        }
    }
    let out = Invocation::new(&world, &["completions", "man"], &[]).run_blocking();
    let page = text(&out.stdout);
    assert!(page.contains(".TH ferrite 1"), "{page}");
    assert!(page.contains("FERRITE_LOG"), "{page}");
    let out = Invocation::new(&world, &["completions", "powershell"], &[]).run_blocking();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn mcp_add_list_remove_edit_the_user_config_and_keep_its_comments() {
    let world = World::new();
    let original = "# my settings\nmodel = \"anthropic/claude-sonnet-4-5\" # the usual\n";
    world.write_config(original);
    let run = |args: &[&str]| Invocation::new(&world, args, &[]).run_blocking();
    let out = run(&["mcp", "list"]);
    assert!(text(&out.stderr).contains("No MCP servers"), "{out:?}");
    let out = run(&[
        "mcp",
        "add",
        "files",
        "-e",
        "ROOT=/tmp",
        "npx",
        "-y",
        "@x/files",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = run(&[
        "mcp",
        "add",
        "docs",
        "--header",
        "X-Team=a",
        "https://mcp.example/x",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = run(&["mcp", "add", "docs", "https://other.example"]);
    assert_eq!(out.status.code(), Some(1), "a name is added once");
    let config = std::fs::read_to_string(world.home().join("config.toml")).unwrap();
    assert!(config.starts_with(original), "{config}");
    assert!(config.contains("[mcp_servers.files]"), "{config}");
    assert!(config.contains("args = [\"-y\", \"@x/files\"]"), "{config}");
    assert!(config.contains("env = { ROOT = \"/tmp\" }"), "{config}");
    assert!(
        config.contains("url = \"https://mcp.example/x\""),
        "{config}"
    );
    let listing = text(&run(&["mcp", "list"]).stdout);
    assert_eq!(
        listing,
        "docs\thttps://mcp.example/x\nfiles\tnpx -y @x/files\n"
    );
    let out = run(&["mcp", "remove", "files"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = run(&["mcp", "remove", "files"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&run(&["mcp", "list"]).stdout),
        "docs\thttps://mcp.example/x\n"
    );
    let config = std::fs::read_to_string(world.home().join("config.toml")).unwrap();
    assert!(
        config.starts_with(original) && !config.contains("files"),
        "{config}"
    );
}

#[test]
fn an_empty_session_list_says_so() {
    let world = World::new();
    let out = Invocation::new(&world, &["sessions", "list"], &[]).run_blocking();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "");
    assert!(text(&out.stderr).contains("No sessions"), "{out:?}");
}
