//! `web_fetch`: read a web page (HTML as Markdown, text and JSON as they are). The HTTP side, with
//! its checks against reaching private addresses, is a [`crate::web::WebFetch`] from the binary.
//!
//! Permission: a fetch sends data out (the URL itself can carry a secret), so it asks in every
//! mode below `full` unless a `web_fetch(domain:…)` rule allows the host.

use std::path::Path;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::content::{ToolContent, ToolKind};
use crate::model::ToolSpec;
use crate::tools::output::{cap, parse_input};
use crate::tools::{
    Access, CallDescription, Tool, ToolContext, ToolError, ToolOutput, input_schema,
};

pub struct WebFetch;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    // No description: the tool's says it.
    url: String,
    /// What you are looking for.
    prompt: Option<String>,
}

/// The host a URL names, as the HTTP client will read it (the `url` crate, the parser reqwest
/// uses): a domain rule must match where the request really goes, not a look-alike string.
pub fn host_of(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url).ok()?;
    let host = match parsed.host()? {
        url::Host::Domain(d) => d.trim_end_matches('.').to_ascii_lowercase(),
        url::Host::Ipv4(ip) => ip.to_string(),
        url::Host::Ipv6(ip) => ip.to_string(),
    };
    Some(host)
}

impl Tool for WebFetch {
    fn name(&self) -> &str {
        "web_fetch"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "web_fetch".into(),
            description: "Fetch an http(s) page: HTML as Markdown (main content, links \
                kept), text and JSON as they are. For documentation, issues and API references. \
                Never put secrets or workspace content in the URL."
                .into(),
            input_schema: input_schema::<Input>(),
        }
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Fetch
    }

    fn describe(&self, input: &Value, _cwd: &Path) -> CallDescription {
        CallDescription {
            title: input
                .get("url")
                .and_then(Value::as_str)
                .map_or_else(|| "Fetch".to_owned(), str::to_owned),
            locations: vec![],
        }
    }

    fn access(&self, input: &Value, _cwd: &Path) -> Access {
        let url = input
            .get("url")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let host = host_of(&url).unwrap_or_default();
        Access::Fetch { url, host }
    }

    fn call<'a>(
        &'a self,
        input: Value,
        ctx: &'a ToolContext<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let input: Input = parse_input("web_fetch", input)?;
            let Some(fetcher) = ctx.web.as_ref() else {
                return Err(ToolError::RespondToModel(
                    "web_fetch is not available in this build of Ferrite.".into(),
                ));
            };
            let page = fetcher
                .fetch(&input.url, ctx.web_reach)
                .await
                .map_err(ToolError::RespondToModel)?;
            let mut text = format!("Fetched {} ({})", page.final_url, page.content_type);
            if page.truncated {
                text.push_str(", cut at the size limit");
            }
            text.push('\n');
            if let Some(p) = input.prompt.as_deref().filter(|p| !p.trim().is_empty()) {
                text.push_str(&format!("Looking for: {p}\n"));
            }
            text.push('\n');
            text.push_str(&page.text);
            let shown = format!(
                "Fetched {} ({} bytes of {}{})",
                page.final_url,
                page.text.len(),
                page.content_type,
                if page.truncated { ", cut" } else { "" }
            );
            Ok(ToolOutput {
                text: cap(&text, ctx.limits, &ctx.spill_dir),
                content: vec![ToolContent::Text { text: shown.into() }],
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_is_what_the_client_will_connect_to() {
        assert_eq!(host_of("https://Docs.RS/tokio").as_deref(), Some("docs.rs"));
        assert_eq!(host_of("https://docs.rs./x").as_deref(), Some("docs.rs"));
        // Userinfo and backslash tricks: the host is what follows them.
        assert_eq!(
            host_of("https://docs.rs@evil.example/x").as_deref(),
            Some("evil.example")
        );
        assert_eq!(
            host_of("https://evil.example\\@docs.rs/").as_deref(),
            Some("evil.example")
        );
        assert_eq!(host_of("http://2130706433/").as_deref(), Some("127.0.0.1"));
        assert_eq!(host_of("not a url"), None);
    }
}
