//! The queue to the single stdout writer (`transport::write_lines`).

use agent_client_protocol_schema::v1 as acp;
use ferrite_store::ids::SessionId;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::fail::Fail;
use crate::{mapping, rpc};

#[derive(Clone)]
pub(crate) struct Out(pub(crate) mpsc::Sender<String>);

impl Out {
    pub async fn line(&self, line: String) {
        if line.is_empty() {
            return;
        }
        // Fails only when stdout is gone; then there is no one to tell.
        let _ = self.0.send(line).await;
    }

    pub async fn result(&self, id: &Value, result: Value) {
        self.line(rpc::result_line(id, result)).await;
    }

    pub async fn fail(&self, id: &Value, fail: &Fail) {
        self.line(fail.to_line(id)).await;
    }

    pub async fn update(&self, session: &SessionId, update: acp::SessionUpdate) {
        self.line(mapping::update_line(session, update)).await;
    }
}
