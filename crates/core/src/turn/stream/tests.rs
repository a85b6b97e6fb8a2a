//! One model call against a scripted model: what the editor sees and what the log keeps.

use std::sync::{Arc, Mutex};

use pretty_assertions::assert_eq;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::catalog::{Catalog, FactSource, ModelInfo};
use crate::config::Config;
use crate::credentials::Credentials;
use crate::env::Env;
use crate::model::{ModelClient, StopKind, Usage};
use crate::modes::Effort;
use crate::services::Services;
use crate::session::testing::TestSession;
use crate::turn::env::EnvParts;
use crate::turn::model_call::ModelOrigin;
use crate::turn::resolve::TurnRules;

/// Yields its events, then ends (without a final event unless the script has one).
struct Scripted(Mutex<Vec<Result<ModelEvent, ModelError>>>);

impl ModelClient for Scripted {
    fn stream(&self, _request: ModelRequest, _cancel: CancellationToken) -> ModelStream {
        let events = std::mem::take(&mut *self.0.lock().unwrap());
        Box::pin(futures::stream::iter(events))
    }
}

fn model(events: Vec<Result<ModelEvent, ModelError>>) -> TurnModel {
    TurnModel {
        client: Arc::new(Scripted(Mutex::new(events))),
        info: ModelInfo {
            id: "p/m".into(),
            provider: "p".into(),
            model: "m".into(),
            name: "m".into(),
            context_window: 100_000,
            max_output_tokens: None,
            reasoning: ReasoningStyle::None,
            web_search: false,
            images: true,
            price: None,
            source: FactSource::Default,
        },
        origin: ModelOrigin::Prompt,
        effort: Effort::Default,
        web_search: false,
        catalog: m_catalog().into(),
    }
}

fn env(session: &TestSession) -> CallEnv {
    let home = session.home.path().to_owned();
    let services = Services::new(home.clone(), Env::from_pairs([("A", "")]), None);
    let config = Config::default();
    let start = session.recorder.start();
    CallEnv::new(EnvParts {
        services: &services,
        rec: &session.recorder,
        config: &config,
        start: &start,
        rules: TurnRules::load(&home, &start.cwd, &config).unwrap(),
        catalog: m_catalog().into(),
        force_ask: false,
        model_images: true,
        background: Default::default(),
        lsp: None,
        skills: Default::default(),
        hooks: Default::default(),
        agents: Default::default(),
    })
}

fn text(t: &str) -> Result<ModelEvent, ModelError> {
    Ok(ModelEvent::TextDelta(t.into()))
}

#[tokio::test]
async fn deltas_that_arrived_together_are_one_chunk_and_the_response_is_recorded() {
    let mut s = TestSession::new(std::env::temp_dir());
    let env = env(&s);
    let done = ModelResponse {
        content: vec![AssistantPart::Text { text: "ab".into() }],
        stop: StopKind::EndTurn,
        usage: Usage {
            input_tokens: 10,
            output_tokens: 2,
            ..Default::default()
        },
    };
    let m = model(vec![text("a"), text("b"), Ok(ModelEvent::Completed(done))]);
    let end = model_call(
        &s.recorder,
        &m,
        &env,
        "sys",
        false,
        true,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert!(matches!(end, Streamed::Response(_)));
    assert_eq!(
        s.drain_events(),
        [
            Event::AgentMessageChunk { text: "ab".into() },
            Event::Usage {
                used: 12,
                size: 100_000,
                cost: None
            }
        ]
    );
    assert_eq!(s.recorder.context_tokens(), 12);
    assert_eq!(s.recorder.model_messages().len(), 1);
}

#[tokio::test]
async fn a_cut_stream_fails_the_turn_and_keeps_what_was_shown() {
    let mut s = TestSession::new(std::env::temp_dir());
    let env = env(&s);
    let m = model(vec![text("half")]);
    let end = model_call(
        &s.recorder,
        &m,
        &env,
        "sys",
        false,
        true,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    let Streamed::Stopped(outcome) = end else {
        panic!("a cut stream completed");
    };
    let failure = outcome.failure.unwrap();
    assert_eq!(
        (failure.error_kind.as_str(), failure.terminal_status.id()),
        ("stream_cut", "provider_error")
    );
    assert_eq!(
        s.drain_events(),
        [Event::AgentMessageChunk {
            text: "half".into()
        }]
    );
    // The partial answer is history: what the user saw is what the model will be told.
    assert_eq!(s.recorder.model_messages().len(), 1);
}

fn m_catalog() -> Catalog {
    Catalog::build(
        &Config::default(),
        &Env::from_pairs([("A", "")]),
        &Credentials::default(),
    )
}
