//! The dispatch table: which handler answers which method, and when its first step runs.
//!
//! Handlers never run a turn or wait on a session inline. A handler marked [`Order::Arrival`] is
//! polled once on the read loop, so everything it does before its first await (queuing a prompt
//! or a settings change to its session, answering a bad request) happens in arrival order, and a
//! `session/cancel` read after a prompt reaches the session after it; if it then waits, it
//! finishes in a task of its own. [`Order::Background`] handlers (opening, listing, forking
//! sessions: file I/O) run in a task from the start, so they cannot hold up the read loop.

use std::future::Future;
use std::sync::Arc;
use std::task::Poll;

use serde_json::Value;
use tokio::task::JoinSet;

use crate::fail::Fail;
use crate::methods::{initialize, prompt, rewind, sessions, settings};
use crate::params::{Call, parse};
use crate::reply::{After, Reply, Respond};
use crate::rpc::{self, RpcError};
use crate::state::Server;

enum Order {
    Arrival,
    Background,
}

pub(crate) async fn request(
    server: &Arc<Server>,
    tasks: &mut JoinSet<()>,
    id: Value,
    method: &str,
    params: Value,
) {
    /// Parses the params as the handler's request type and runs the handler.
    macro_rules! route {
        ($order:expr, $handler:path) => {{
            let s = server.clone();
            let fut = async move { $handler(&s, parse(params)?).await?.into_reply() };
            run(server, tasks, id, $order, fut).await
        }};
        ($order:expr, $handler:path, with_id) => {{
            let s = server.clone();
            let call_id = id.clone();
            let fut = async move {
                let call = Call {
                    id: call_id,
                    params: parse(params)?,
                };
                $handler(&s, call).await?.into_reply()
            };
            run(server, tasks, id, $order, fut).await
        }};
    }
    use Order::{Arrival, Background};
    match method {
        "initialize" => route!(Arrival, initialize::initialize),
        "authenticate" => route!(Arrival, initialize::authenticate),
        "logout" => route!(Arrival, initialize::logout),
        "session/new" => route!(Background, sessions::new),
        "session/load" => route!(Background, sessions::load),
        "session/resume" => route!(Background, sessions::resume),
        "session/list" => route!(Background, sessions::list),
        "session/close" => route!(Background, sessions::close),
        "session/delete" => route!(Background, sessions::delete),
        "session/fork" => route!(Background, sessions::fork_and_open),
        "_ferrite/session/fork" => route!(Background, sessions::fork),
        "session/set_title" => route!(Background, sessions::set_title),
        "session/prompt" => route!(Arrival, prompt::prompt, with_id),
        "_session/steering" => route!(Arrival, prompt::steering),
        "_session/rewind" => route!(Arrival, rewind::rewind, with_id),
        "session/set_mode" => route!(Arrival, settings::set_mode),
        "session/set_config_option" => route!(Arrival, settings::set_config_option),
        "session/set_model" => route!(Arrival, settings::set_model),
        other => {
            let e = RpcError {
                id,
                code: rpc::METHOD_NOT_FOUND,
                message: format!("Method not found: {}", printable(other)),
            };
            server.out.line(e.to_line()).await;
        }
    }
}

/// Notifications run on the read loop; they have no answer, and bad ones are ignored.
pub(crate) async fn notification(server: &Arc<Server>, method: &str, params: Value) {
    match method {
        "session/cancel" => {
            if let Ok(req) = parse(params) {
                let _ = prompt::cancel(server, req).await;
            }
        }
        m if m.starts_with('_') => {}
        other => tracing::debug!(method = other, "ignored unknown notification"),
    }
}

async fn run<F>(server: &Arc<Server>, tasks: &mut JoinSet<()>, id: Value, order: Order, fut: F)
where
    F: Future<Output = Result<Reply, Fail>> + Send + 'static,
{
    let mut fut = Box::pin(fut);
    if let Order::Arrival = order
        && let Poll::Ready(reply) = futures::poll!(fut.as_mut())
    {
        return answer(server, &id, reply).await;
    }
    let s = server.clone();
    tasks.spawn(async move {
        let reply = fut.await;
        answer(&s, &id, reply).await;
    });
}

/// Writes the answer to `id`, then what must follow it.
async fn answer(server: &Server, id: &Value, reply: Result<Reply, Fail>) {
    let reply = match reply {
        Ok(reply) => reply,
        Err(f) => return server.out.fail(id, &f).await,
    };
    if let Some(body) = reply.body {
        server.out.result(id, body).await;
    }
    for step in reply.then {
        match step {
            After::Line(line) => server.out.line(line).await,
            After::ReleaseNotices(gate) => gate.release(),
            After::Discover => server.runtime.discover_in_background(),
        }
    }
}

/// A method name safe to echo: short and printable.
fn printable(s: &str) -> String {
    s.chars().filter(|c| !c.is_control()).take(64).collect()
}
