//! The cost of building one model request from a long session, in process, for
//! `bench/request_build.py`: loads a session log the way `session/load` does, then builds the
//! request of a prompt RUNS times (the history as model messages, then the body as each API
//! takes it) and prints the median of each step in milliseconds, one `name value` per line.
//!
//! Usage: `request_build <ferrite home> <session id> [runs]`.

use std::io::Write;
use std::time::Instant;

use ferrite_core::config::ApiKind;
use ferrite_core::model::ModelRequest;
use ferrite_core::modes::Effort;
use ferrite_core::state::SessionState;
use ferrite_store::ids::SessionId;
use ferrite_store::log::SessionStore;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, home, id, rest @ ..] = args.as_slice() else {
        return Err("usage: request_build <ferrite home> <session id> [runs]".into());
    };
    let runs: usize = rest.first().map(|r| r.parse()).transpose()?.unwrap_or(50);
    let store = SessionStore::new(std::path::Path::new(home));
    let (_writer, log) = store.open(&SessionId::parse(id)?)?;
    let state = SessionState::from_log(log);
    let mut report = String::new();
    for api in [
        ApiKind::Anthropic,
        ApiKind::OpenAiResponses,
        ApiKind::OpenAiChat,
    ] {
        let (mut messages_ms, mut body_ms, mut total_ms) = (vec![], vec![], vec![]);
        let mut size = 0;
        for _ in 0..runs {
            let start = Instant::now();
            let messages = state.model_messages();
            messages_ms.push(ms(start));
            let request = ModelRequest {
                model: "m".into(),
                system: String::new(),
                messages,
                tools: vec![],
                effort: Effort::Default,
                reasoning: false,
                adaptive_thinking: false,
                web_search: false,
                max_output_tokens: Some(1024),
                cache_key: None,
            };
            let body_start = Instant::now();
            let body = ferrite_llm::request_body(api, &request)?;
            body_ms.push(ms(body_start));
            total_ms.push(ms(start));
            size = body.len();
            drop(body);
            drop(request);
        }
        let name = api.id();
        report.push_str(&format!(
            "{name}.body_bytes {size}\n{name}.messages_ms {:.3}\n{name}.serialize_ms {:.3}\n\
             {name}.total_ms {:.3}\n",
            median(messages_ms),
            median(body_ms),
            median(total_ms)
        ));
    }
    std::io::stdout().write_all(report.as_bytes())?;
    Ok(())
}
