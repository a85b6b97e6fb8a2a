//! Starting one server: connect, and for a remote server that answers 401 with OAuth, sign in
//! and connect again.

use std::sync::Arc;
use std::time::Duration;

use ferrite_core::mcp::{Browser, McpServerSpec, NoticeSink};

use crate::oauth::{OAuthConfig, SignInError};
use crate::server::{Server, StartError};

/// Why a server is not running.
pub(crate) enum Failure {
    /// To be told as "failed to start: <reason>".
    Failed(String),
    /// Already the whole message for the user (a sign-in that did not happen).
    Told(String),
}

/// Each connection is bounded by `timeout`; a sign-in is not (it waits for the user, within
/// its own timeout), so a server signed in to late joins the turns after it.
pub(crate) async fn start(
    spec: &McpServerSpec,
    notices: &NoticeSink,
    oauth: Option<&OAuthConfig>,
    browser: Option<Arc<dyn Browser>>,
    timeout: Duration,
) -> Result<Server, Failure> {
    let connect = || tokio::time::timeout(timeout, Server::connect(spec, notices.clone(), oauth));
    let too_slow = || {
        Failure::Failed(format!(
            "it did not finish starting (initialize, tools/list) within {} s",
            timeout.as_secs_f64()
        ))
    };
    let (url, challenge, failure) = match connect().await {
        Ok(Ok(server)) => return Ok(server),
        Ok(Err(StartError::Failed(reason))) => return Err(Failure::Failed(reason)),
        Ok(Err(StartError::Unauthorized {
            url,
            challenge,
            failure,
        })) => (url, challenge, failure),
        Err(_) => return Err(too_slow()),
    };
    let Some(oauth) = oauth else {
        return Err(Failure::Failed(failure));
    };
    match crate::oauth::sign_in(oauth, &url, &spec.name, challenge.as_deref(), browser).await {
        Ok(()) => match connect().await {
            Ok(Ok(server)) => Ok(server),
            Ok(Err(
                StartError::Failed(reason)
                | StartError::Unauthorized {
                    failure: reason, ..
                },
            )) => Err(Failure::Failed(reason)),
            Err(_) => Err(too_slow()),
        },
        // No OAuth (that can be read) behind the 401: it fails as it always did.
        Err(SignInError::NotOAuth) => Err(Failure::Failed(failure)),
        Err(SignInError::NoMetadata(why)) => {
            tracing::info!(server = %spec.name, %why, "no usable OAuth metadata");
            Err(Failure::Failed(failure))
        }
        Err(e) => Err(Failure::Told(sign_in_notice(&spec.name, &url, &e))),
    }
}

/// What the user is told when a server that wants a sign-in did not get one: its name, why,
/// and the command that signs in from a terminal (by URL: it works for servers the editor sent
/// as well as those of config).
fn sign_in_notice(name: &str, url: &str, e: &SignInError) -> String {
    let how = format!("run `ferrite mcp login {url}` in a terminal, then start a new session");
    match e {
        SignInError::NoBrowser => format!(
            "MCP server `{name}` needs you to sign in (OAuth), and this editor cannot open the \
             sign-in page: {how}. Its tools are unavailable until then."
        ),
        SignInError::NotOAuth
        | SignInError::NoMetadata(_)
        | SignInError::Declined
        | SignInError::TimedOut
        | SignInError::Failed(_) => format!(
            "MCP server `{name}` needs you to sign in (OAuth), and the sign-in did not \
             complete ({e}); its tools are unavailable. To sign in: {how}."
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_notice_names_the_server_and_the_command() {
        let url = "https://mcp.example.com/mcp";
        let text = sign_in_notice("linear", url, &SignInError::NoBrowser);
        assert!(
            text.starts_with("MCP server `linear` needs you to sign in"),
            "{text}"
        );
        assert!(
            text.contains("`ferrite mcp login https://mcp.example.com/mcp`"),
            "{text}"
        );
        let text = sign_in_notice("linear", url, &SignInError::Declined);
        assert!(text.contains("declined"), "{text}");
    }
}
