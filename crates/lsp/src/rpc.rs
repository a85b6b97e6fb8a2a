//! JSON-RPC 2.0 over a server's stdio with `Content-Length` framing (the LSP base protocol):
//! requests with their answers matched by id, notifications, and the server's own requests
//! answered by a handler.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

/// A message body larger than this ends the connection (no server sends that much at once).
const MAX_BODY: usize = 64 << 20;

/// Reads one framed message; `None` at the end of the stream or on a framing error.
pub(crate) async fn read_message<R: AsyncBufRead + Unpin>(reader: &mut R) -> Option<Value> {
    let mut length: Option<usize> = None;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).await.ok()? == 0 {
            return None;
        }
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok();
        }
    }
    let length = length.filter(|l| *l <= MAX_BODY)?;
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await.ok()?;
    serde_json::from_slice(&body).ok()
}

/// One message, framed.
pub(crate) fn frame(message: &Value) -> Vec<u8> {
    let body = message.to_string();
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

/// A message the server sent that is not an answer to one of ours.
#[derive(Debug)]
pub(crate) enum Incoming {
    Notification {
        method: String,
        params: Value,
    },
    /// The server asks us; the answer goes back through [`Connection::respond`].
    Request {
        id: Value,
        method: String,
        params: Value,
    },
}

type Pending = Arc<Mutex<HashMap<i64, oneshot::Sender<Result<Value, Value>>>>>;

/// Our side of a connection: sends, and routes answers to whoever asked.
#[derive(Clone)]
pub(crate) struct Connection {
    out: mpsc::UnboundedSender<Vec<u8>>,
    next_id: Arc<AtomicI64>,
    pending: Pending,
}

impl Connection {
    /// Starts the writer and the reader; what the server sends that is not an answer goes to
    /// the returned receiver, which ends when the server's output does.
    pub(crate) fn start<R, W>(
        reader: R,
        writer: W,
    ) -> (Connection, mpsc::UnboundedReceiver<Incoming>)
    where
        R: AsyncBufRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (out, mut out_rx) = mpsc::unbounded_channel::<Vec<u8>>();
        tokio::spawn(async move {
            let mut writer = writer;
            while let Some(bytes) = out_rx.recv().await {
                if writer.write_all(&bytes).await.is_err() || writer.flush().await.is_err() {
                    break;
                }
            }
        });
        let pending: Pending = Arc::default();
        let (in_tx, in_rx) = mpsc::unbounded_channel();
        let answers = pending.clone();
        tokio::spawn(async move {
            let mut reader = reader;
            while let Some(message) = read_message(&mut reader).await {
                route(message, &answers, &in_tx);
            }
            // The server is gone: everyone still waiting hears so.
            let waiting: Vec<_> = lock(&answers).drain().collect();
            for (_, tx) in waiting {
                let _ = tx.send(Err(json!({"message": "the server exited"})));
            }
        });
        let conn = Connection {
            out,
            next_id: Arc::new(AtomicI64::new(1)),
            pending,
        };
        (conn, in_rx)
    }

    /// Sends a request; the future resolves with its answer (`Err`: the error object, or the
    /// server exited).
    pub(crate) fn request(
        &self,
        method: &str,
        params: Value,
    ) -> impl std::future::Future<Output = Result<Value, Value>> + Send + 'static {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id, tx);
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let sent = self.out.send(frame(&message)).is_ok();
        async move {
            if !sent {
                return Err(json!({"message": "the server exited"}));
            }
            rx.await
                .unwrap_or_else(|_| Err(json!({"message": "the server exited"})))
        }
    }

    pub(crate) fn notify(&self, method: &str, params: Value) {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        let _ = self.out.send(frame(&message));
    }

    pub(crate) fn respond(&self, id: Value, result: Value) {
        let message = json!({"jsonrpc": "2.0", "id": id, "result": result});
        let _ = self.out.send(frame(&message));
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn route(mut message: Value, pending: &Pending, incoming: &mpsc::UnboundedSender<Incoming>) {
    let method = message
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let id = message.get("id").cloned();
    match (method, id) {
        (Some(method), Some(id)) => {
            let params = message
                .get_mut("params")
                .map(Value::take)
                .unwrap_or(Value::Null);
            let _ = incoming.send(Incoming::Request { id, method, params });
        }
        (Some(method), None) => {
            let params = message
                .get_mut("params")
                .map(Value::take)
                .unwrap_or(Value::Null);
            let _ = incoming.send(Incoming::Notification { method, params });
        }
        (None, Some(id)) => {
            let Some(waiter) = id.as_i64().and_then(|id| lock(pending).remove(&id)) else {
                return;
            };
            let answer = match message.get_mut("error") {
                Some(error) => Err(error.take()),
                None => Ok(message
                    .get_mut("result")
                    .map(Value::take)
                    .unwrap_or(Value::Null)),
            };
            let _ = waiter.send(answer);
        }
        (None, None) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn messages_round_trip_through_the_framing() {
        let message = json!({"jsonrpc": "2.0", "id": 1, "result": {"ünï": "cödé"}});
        let mut bytes = frame(&message);
        bytes.extend(b"Content-Type: x\r\ncontent-length: 2\r\n\r\n{}");
        let mut reader = tokio::io::BufReader::new(&bytes[..]);
        assert_eq!(read_message(&mut reader).await, Some(message));
        assert_eq!(read_message(&mut reader).await, Some(json!({})));
        assert_eq!(read_message(&mut reader).await, None);
    }

    #[tokio::test]
    async fn answers_go_to_who_asked_and_a_gone_server_ends_the_wait() {
        let (server_out, client_in) = tokio::io::duplex(1 << 16);
        let (client_out, _server_in) = tokio::io::duplex(1 << 16);
        let (conn, mut incoming) =
            Connection::start(tokio::io::BufReader::new(client_in), client_out);
        let first = conn.request("a", json!({}));
        let second = conn.request("b", json!({}));
        let mut server_out = server_out;
        let reply = |id: i64, v: Value| frame(&json!({"jsonrpc": "2.0", "id": id, "result": v}));
        server_out.write_all(&reply(2, json!("two"))).await.unwrap();
        server_out
            .write_all(&frame(
                &json!({"jsonrpc": "2.0", "method": "n", "params": [1]}),
            ))
            .await
            .unwrap();
        assert_eq!(second.await, Ok(json!("two")));
        assert!(
            matches!(incoming.recv().await, Some(Incoming::Notification { method, .. }) if method == "n")
        );
        drop(server_out);
        assert!(first.await.is_err());
    }
}
