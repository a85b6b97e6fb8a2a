//! A machine that cannot sandbox (the runner says so): `ask` warns once per session and runs
//! each approved command unsandboxed; `auto` refuses and says how to choose.

use ferrite_core::events::Event;
use ferrite_core::exec::Sandbox;
use ferrite_core::modes::Mode;
use ferrite_store::log::StopReason;
use ferrite_test_support::scripted_model::Reply;
use serde_json::json;

use super::rig::{FakeRunner, Rig, RunnerKind, Seen, call_result, ended};

fn notices(seen: &[Seen]) -> Vec<String> {
    seen.iter()
        .filter_map(|s| match s {
            Seen::Event(Event::Notice { text }) => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn without_a_sandbox_ask_warns_once_and_auto_refuses() {
    let mut r = Rig::with_runner(FakeRunner::new(RunnerKind::NoSandbox)).await;
    r.model.push(
        Reply::new()
            .tool_call("u1", "bash", json!({"command": "echo one"}))
            .tool_call("u2", "bash", json!({"command": "echo two"})),
    );
    r.model.push(Reply::new().text("ran"));
    let (seen, outcome) = r.turn("run", &["allow_once", "allow_once"]).await;
    assert_eq!(outcome, ended(StopReason::EndTurn));
    let warned = notices(&seen);
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(warned[0].starts_with(
        "Commands run without a sandbox in this session: this kernel has no Landlock"
    ));
    assert_eq!(
        r.runner.ran(),
        [
            ("echo one".to_owned(), Sandbox::None),
            ("echo two".to_owned(), Sandbox::None)
        ]
    );

    r.set_mode(Mode::Auto).await;
    r.model
        .push(Reply::new().tool_call("u3", "bash", json!({"command": "echo three"})));
    r.model.push(Reply::new().text("refused"));
    let (seen, _) = r.turn("again", &[]).await;
    let result = call_result(&seen, "u3");
    assert!(
        result.contains("Refused") && result.contains("`full` mode"),
        "{result}"
    );
    assert_eq!(r.runner.ran().len(), 2, "nothing ran in auto");
}
