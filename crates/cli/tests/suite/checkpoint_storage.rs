//! How much the checkpoint store keeps, through the real binary: about one copy of a workspace
//! that turns do not change, and the per-session and total caps, which drop the oldest
//! checkpoints with a notice and make `/undo` say they are gone.

use std::path::Path;
use std::time::Duration;

use ferrite_test_support::agent_text;
use ferrite_test_support::fake_provider::Script;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::checkpoints::{full_mode_rig, put};
use super::common::*;
use super::permissions::{bash_call, start, write_call};
use super::turns::{Api, provider_env};

/// Bytes the files under `dir` hold.
fn store_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd {
            let p = e.unwrap().path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.is_dir() {
                stack.push(p);
            } else {
                total += meta.len();
            }
        }
    }
    total
}

/// Deterministic bytes that do not compress: a file's content for `seed`.
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[tokio::test]
async fn repeated_turns_over_an_unchanged_workspace_keep_about_one_copy() {
    const MIB: usize = 1 << 20;
    let mut r = full_mode_rig().await;
    let ws = r.world.ws();
    // 20 MiB: one large file and twelve of 1 MiB that no turn changes.
    put(&ws, "data/big.bin", &noise(1, 8 * MIB), 0o644);
    for i in 0..12 {
        put(&ws, &format!("src/f{i}.bin"), &noise(10 + i, MIB), 0o644);
    }
    put(&ws, "log.txt", b"", 0o644);
    let store = r.world.home().join("checkpoints").join(&r.sid);
    let mut sizes = Vec::new();
    for turn in 0..6 {
        r.fake.push(bash_call(
            "b1",
            &format!("echo turn {turn} >> log.txt && touch data/big.bin"),
        ));
        r.fake.push(Script::new().text("done"));
        r.say("go").await;
        sizes.push(store_bytes(&store));
    }
    eprintln!("store after each turn: {sizes:?}");
    let workspace = 20 * MIB as u64;
    assert!(
        *sizes.last().unwrap() < workspace + workspace / 5,
        "about one copy of a {workspace} byte workspace, not {sizes:?}"
    );
}

#[tokio::test]
async fn the_session_cap_drops_the_oldest_checkpoints_with_a_notice_and_undo_says_they_are_gone() {
    const MIB: usize = 1 << 20;
    let world = World::new();
    world.write_config("[checkpoints]\nmax_session_bytes = 13631488\n");
    let mut r = start(world, None, &[]).await;
    r.set_mode("full").await;
    let ws = r.world.ws();
    put(&ws, "big.bin", &noise(1, 8 * MIB), 0o644);
    put(&ws, "churn.bin", &noise(2, 2 * MIB), 0o644);
    let store = r.world.home().join("checkpoints").join(&r.sid);
    let mut notices = Vec::new();
    let mut before_turn = Vec::new();
    for turn in 0..4u64 {
        before_turn.push(std::fs::read(ws.join("churn.bin")).unwrap());
        r.fake.push(bash_call(
            "b1",
            &format!("head -c 2097152 /dev/urandom > churn.bin # {turn}"),
        ));
        r.fake.push(Script::new().text("done"));
        let (seen, _) = r.say("churn").await;
        notices.push(
            seen.iter()
                .map(Value::to_string)
                .find(|m| m.contains("max_session_bytes")),
        );
        let size = store_bytes(&store);
        eprintln!("store after turn {turn}: {size}");
        assert!(size <= 13 * MIB as u64, "turn {turn}: {size}");
    }
    // 10 MiB of workspace, then 2 MiB more per turn: the third turn passes 13 MiB.
    assert!(notices[0].is_none() && notices[1].is_none(), "{notices:?}");
    let notice = notices[2]
        .as_deref()
        .expect("a notice when the cap drops one");
    assert!(notice.contains("turn(s) 1"), "{notice}");

    let (seen, _) = r.say("/undo 3").await;
    let text = agent_text(&seen);
    assert!(
        text.contains("turn(s) 2 were dropped") && text.contains("max_session_bytes"),
        "{text}"
    );
    assert_eq!(
        std::fs::read(ws.join("churn.bin")).unwrap(),
        before_turn[2],
        "the two kept turns were undone"
    );
}

#[tokio::test]
async fn the_total_cap_drops_a_closed_sessions_checkpoints_and_its_undo_says_they_are_gone() {
    const MIB: usize = 1 << 20;
    let world = World::new();
    world.write_config("[checkpoints]\nmax_total_bytes = 12582912\n");
    let mut first = start(world, None, &[]).await;
    first.set_mode("full").await;
    let ws = first.world.ws();
    put(&ws, "big.bin", &noise(1, 8 * MIB), 0o644);
    put(&ws, "a.txt", b"one\n", 0o644);
    first.fake.push(write_call("a.txt", "two\n"));
    first.fake.push(Script::new().text("done"));
    first.fake.push(bash_call("b1", "true"));
    first.fake.push(Script::new().text("done"));
    first.say("write").await;
    first.say("look").await;
    let first_sid = first.sid.clone();
    first.client.close_stdin().await;
    first.client.wait_exit(Duration::from_secs(10)).await;

    // Another session on another workspace of the same size: together over 12 MiB.
    let other = tempfile::tempdir().unwrap();
    let other_ws = std::fs::canonicalize(other.path()).unwrap();
    put(&other_ws, "big.bin", &noise(2, 8 * MIB), 0o644);
    let mut c = first
        .world
        .spawn_acp(provider_env(&first.fake, Api::Anthropic));
    c.initialize().await;
    let second = sid(&c.new_session(&other_ws).await);
    c.request(
        "session/set_mode",
        json!({"sessionId": second, "modeId": "full"}),
    )
    .await
    .ok();
    first.client = c;
    first.sid = second;
    first.fake.push(bash_call("b1", "echo x > new.txt"));
    first.fake.push(Script::new().text("done"));
    let (seen, _) = first.say("go").await;
    let notice = seen
        .iter()
        .map(Value::to_string)
        .find(|m| m.contains("max_total_bytes"))
        .expect("a notice");
    assert!(notice.contains("1 other session"), "{notice}");
    let total = store_bytes(&first.world.home().join("checkpoints"));
    assert!(total <= 12 * MIB as u64, "{total}");

    first
        .client
        .request(
            "session/load",
            json!({"sessionId": first_sid, "cwd": ws, "mcpServers": []}),
        )
        .await
        .ok();
    first.sid = first_sid;
    let (seen, _) = first.say("/undo").await;
    let text = agent_text(&seen);
    assert!(
        text.contains("nothing to undo") && text.contains("max_total_bytes"),
        "{text}"
    );
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "two\n");
}
