//! The streaming floor for `bench/stream.py`: Ferrite's own provider client and SSE decoder
//! and its own `session/update` serialization, on one thread, with nothing between them: no
//! session, no turn task, no event channel, no pump. What Ferrite adds over this is the cost of
//! its pipeline.
//!
//! Reads a line from stdin for every request; streams one answer from the Anthropic provider at
//! `ANTHROPIC_BASE_URL`, writing one `agent_message_chunk` line per text delta to stdout; then a
//! line `done`. Exits at EOF. Lines are written out whenever no more deltas are ready, which is
//! when an agent must write them (Ferrite's writer does the same: it writes when its queue is
//! empty).

use std::io::{BufRead, Write};

use ferrite_acp::mapping::{Takes, update_line, updates};
use ferrite_core::catalog::Catalog;
use ferrite_core::config::Config;
use ferrite_core::credentials::Credentials;
use ferrite_core::env::Env;
use ferrite_core::events::Event;
use ferrite_core::model::{Message, ModelConnector, ModelEvent, ModelRequest, UserPart};
use ferrite_core::modes::Effort;
use ferrite_store::ids::SessionId;
use futures::{FutureExt, StreamExt};
use tokio_util::sync::CancellationToken;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let env = Env::from_process();
    let catalog = Catalog::build(&Config::default(), &env, &Credentials::default());
    let provider = catalog
        .provider("anthropic")
        .ok_or("no anthropic provider")?;
    let connector = ferrite_llm::Connector::from_env(&env)?;
    let client = connector.connect(provider, catalog.key("anthropic"))?;
    let session = SessionId::generate();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, stdout.lock());
    for line in std::io::stdin().lock().lines() {
        line?;
        let request = ModelRequest {
            model: "claude-sonnet-4-5".into(),
            system: String::new(),
            messages: vec![Message::User {
                content: vec![UserPart::Text { text: "hi".into() }],
            }],
            tools: vec![],
            effort: Effort::Default,
            reasoning: false,
            adaptive_thinking: false,
            web_search: false,
            max_output_tokens: Some(1024),
            cache_key: None,
        };
        rt.block_on(async {
            let mut stream = client.stream(request, CancellationToken::new());
            loop {
                // Lines go out as soon as no more deltas are ready, as an agent's must: the
                // editor shows text as it arrives. (Holding them until the buffer is full
                // would show most answers at once, at the end.)
                let item = match stream.next().now_or_never() {
                    Some(item) => item,
                    None => {
                        out.flush()?;
                        stream.next().await
                    }
                };
                let Some(item) = item else { break };
                match item {
                    Ok(ModelEvent::TextDelta(text)) => {
                        for u in updates(&Event::AgentMessageChunk { text }, Takes::BASE) {
                            out.write_all(update_line(&session, u).as_bytes())?;
                            out.write_all(b"\n")?;
                        }
                    }
                    Ok(ModelEvent::Completed(_)) => break,
                    Ok(_) => {}
                    Err(e) => return Err(std::io::Error::other(e.message)),
                }
            }
            Ok::<(), std::io::Error>(())
        })?;
        out.write_all(b"done\n")?;
        out.flush()?;
    }
    Ok(())
}
