//! `ferrite mcp login|logout <name-or-url>`: signs in to a remote MCP server that uses OAuth
//! (or forgets its token) from a terminal, for editors that cannot open the sign-in page
//! themselves. Also the terminal's browser step of `ferrite run`: the link goes to stderr.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use ferrite_core::config::Config;
use ferrite_core::elicit::{Elicitor, Page, Question, Reply};
use ferrite_core::mcp::Browser;
use ferrite_mcp::OAuthConfig;
use ferrite_mcp::oauth::{SignInError, TokenFile};
use ferrite_store::ids::SessionId;
use futures::future::BoxFuture;

/// Shows sign-in links on stderr: a person at a terminal opens them. Asks no questions (forms
/// are for editors: `ask_user` stays unavailable).
pub struct TerminalLinks;

impl TerminalLinks {
    fn show(page: &Page) {
        let _ = writeln!(
            std::io::stderr(),
            "{}\nOpen this link in a browser to sign in:\n\n  {}\n",
            page.message,
            page.url
        );
    }
}

impl Elicitor for TerminalLinks {
    fn available(&self) -> bool {
        false
    }

    fn ask(
        &self,
        _session: &SessionId,
        _question: Question,
    ) -> BoxFuture<'_, Result<Reply, String>> {
        Box::pin(async { Err("no editor to show a form in".to_owned()) })
    }

    fn opens_pages(&self) -> bool {
        true
    }

    fn open_page(&self, _session: &SessionId, page: Page) -> BoxFuture<'_, Result<Reply, String>> {
        Self::show(&page);
        Box::pin(async { Ok(Reply::Answered(vec![])) })
    }
}

impl Browser for TerminalLinks {
    fn can_open(&self) -> bool {
        true
    }

    fn open(&self, page: Page) -> BoxFuture<'_, Result<Reply, String>> {
        Self::show(&page);
        Box::pin(async { Ok(Reply::Answered(vec![])) })
    }

    fn done(&self, _id: &str) {}
}

/// The server's URL: `target` itself when it is one, else the `url` of `[mcp_servers.<target>]`
/// in config (the workspace's of the current directory included).
fn resolve(home: &Path, target: &str) -> anyhow::Result<(String, String)> {
    if target.starts_with("http://") || target.starts_with("https://") {
        return Ok((target.to_owned(), target.to_owned()));
    }
    let cwd = std::env::current_dir().ok();
    let config = Config::load(home, cwd.as_deref()).map_err(|e| anyhow::anyhow!("{e}"))?;
    match config.mcp_servers.get(target) {
        Some(server) => match &server.url {
            Some(url) => Ok((target.to_owned(), url.clone())),
            None => anyhow::bail!(
                "MCP server `{target}` is a local command, not a remote server: it has nothing to sign in to"
            ),
        },
        None => anyhow::bail!(
            "no MCP server `{target}` in config.toml; give its URL instead (`ferrite mcp login https://…`)"
        ),
    }
}

pub fn login(home: &Path, target: &str) -> anyhow::Result<ExitCode> {
    let (name, url) = resolve(home, target)?;
    let config = OAuthConfig::new(home);
    let rt = super::runtime()?;
    let browser: Arc<dyn Browser> = Arc::new(TerminalLinks);
    let signed = rt.block_on(ferrite_mcp::oauth::sign_in(
        &config,
        &url,
        &name,
        None,
        Some(browser),
    ));
    match signed {
        Ok(()) => {
            let file = TokenFile::new(&config.dir, &url);
            let _ = writeln!(
                std::io::stderr(),
                "Signed in to `{name}`; its token is stored in {} and used by every session.",
                file.path().display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(SignInError::NotOAuth) => anyhow::bail!(
            "{url} does not publish OAuth metadata: if it needs credentials, set them as `headers` of the server"
        ),
        Err(e) => anyhow::bail!("signing in to `{name}` failed: {e}"),
    }
}

pub fn logout(home: &Path, target: &str) -> anyhow::Result<ExitCode> {
    let (name, url) = resolve(home, target)?;
    let file = TokenFile::new(&OAuthConfig::new(home).dir, &url);
    let removed = file
        .remove()
        .with_context(|| format!("removing {}", file.path().display()))?;
    let what = if removed {
        format!("Removed the stored token of `{name}`.")
    } else {
        format!("No token stored for `{name}`.")
    };
    let _ = writeln!(std::io::stderr(), "{what}");
    Ok(ExitCode::SUCCESS)
}
