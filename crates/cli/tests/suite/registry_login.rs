//! Login in clients that follow the ACP registry's convention (stock Zed, the registry's
//! verifier): they send `clientCapabilities._meta["terminal-auth"]: true` and run the command a
//! method's `_meta["terminal-auth"]` names. Installed from the registry, the binary lives in the
//! client's cache, not on PATH: the command must be its absolute path (issue 35).

use std::path::Path;
use std::time::Duration;

use ferrite_test_support::AcpClient;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::*;
use super::first_run::program_in_a_terminal;

/// `initialize` exactly as stock Zed sends it (no beta flag: no `auth.terminal`).
fn zed_initialize() -> Value {
    json!({
        "protocolVersion": 1,
        "clientCapabilities": {
            "fs": {"readTextFile": true, "writeTextFile": true},
            "terminal": true,
            "_meta": {"terminal_output": true, "terminal-auth": true}
        },
        "clientInfo": {"name": "zed", "title": "Zed", "version": "0.216.1"}
    })
}

/// A copy of the binary in a cache directory off PATH, as a registry client installs it.
fn installed_copy(w: &World) -> std::path::PathBuf {
    let cache = w.home().join("client-cache").join("ferrite-0.1.0");
    std::fs::create_dir_all(&cache).unwrap();
    let bin = cache.join("ferrite");
    std::fs::copy(BIN, &bin).unwrap();
    bin
}

#[tokio::test]
async fn stock_zed_gets_a_login_it_can_run_from_its_cache() {
    let w = World::new();
    let bin = installed_copy(&w);
    let mut c = AcpClient::spawn(&bin, w.home(), &[]);
    let r = c.request("initialize", zed_initialize()).await.ok();
    let methods = r["authMethods"].as_array().unwrap();
    // The api-key method's description is a button's text: no protocol words in it.
    let api_key = &methods[0];
    assert_eq!(api_key["id"], "api-key");
    let description = api_key["description"].as_str().unwrap();
    assert!(!description.contains("_meta"), "{description}");
    let login = methods
        .iter()
        .find(|m| m["_meta"]["terminal-auth"].is_object())
        .expect("a method carrying _meta[\"terminal-auth\"]");
    // Stock Zed knows no `type: "terminal"`: the method is of the default (agent) type.
    assert!(login.get("type").is_none(), "{login}");
    let t = &login["_meta"]["terminal-auth"];
    assert_eq!(
        t["command"],
        bin.canonicalize().unwrap().display().to_string()
    );
    assert!(Path::new(t["command"].as_str().unwrap()).is_absolute());
    assert!(t["label"].as_str().is_some_and(|l| !l.is_empty()), "{t}");
    assert_eq!(t["env"], json!({}));
    let args: Vec<&str> = t["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();

    // Before the login, "Log in" (authenticate with the method) says a key is still needed.
    let a = c
        .request("authenticate", json!({"methodId": login["id"]}))
        .await;
    assert_eq!(a.code(), -32000);

    // The client runs exactly what the method names, with PATH unchanged (no ferrite on it).
    let line = format!("{} {}", t["command"].as_str().unwrap(), args.join(" "));
    let (shown, status) = program_in_a_terminal(
        w.home(),
        &line,
        &["1\n", "sk-ant-from-zed\n"],
        Duration::from_secs(15),
    );
    assert!(status.is_some_and(|s| s.success()), "{line}: {shown}");
    assert!(!shown.contains("sk-ant-from-zed"), "echoed: {shown}");
    let a = c
        .request("authenticate", json!({"methodId": login["id"]}))
        .await;
    assert_eq!(a.ok(), json!({}));
    let s = c
        .request("session/new", json!({"cwd": w.ws(), "mcpServers": []}))
        .await
        .ok();
    assert!(s["sessionId"].is_string(), "{s}");
}

/// A client of both conventions gets one terminal method that carries the `_meta` too; a
/// client of neither gets no login method to run.
#[tokio::test]
async fn the_registry_meta_rides_on_the_schema_s_terminal_method() {
    let w = World::new();
    let mut c = w.spawn_bare(&[]);
    let mut init = zed_initialize();
    init["clientCapabilities"]["auth"] = json!({"terminal": true});
    let r = c.request("initialize", init).await.ok();
    let methods = r["authMethods"].as_array().unwrap();
    assert_eq!(methods.len(), 2, "{methods:?}");
    assert_eq!(methods[1]["type"], "terminal");
    assert_eq!(methods[1]["args"], json!(["login"]));
    assert_eq!(
        methods[1]["_meta"]["terminal-auth"]["args"],
        json!(["acp", "login"])
    );

    let mut c = w.spawn_bare(&[]);
    let mut init = zed_initialize();
    init["clientCapabilities"]["_meta"] = json!({"terminal_output": true});
    let r = c.request("initialize", init).await.ok();
    let ids: Vec<&str> = r["authMethods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["api-key"]);
}
