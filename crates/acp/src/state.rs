//! The server's state, shared by every handler: the runtime, the stdout queue, the prompts
//! waiting for their turn, the client's capabilities and the requests waiting on the client.

use std::sync::Arc;

use ferrite_core::runtime::Runtime;

use crate::calls::Caller;
use crate::client::Client;
use crate::out::Out;
use crate::prompts::Prompts;

pub(crate) struct Server {
    pub runtime: Arc<Runtime>,
    pub out: Out,
    pub prompts: Arc<Prompts>,
    pub client: Arc<Client>,
    pub caller: Arc<Caller>,
    pub version: String,
}
