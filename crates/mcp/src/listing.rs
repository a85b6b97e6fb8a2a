//! A server's prompts and resources, listed once when it starts: only what its capabilities
//! advertise, each listing bounded in pages, items and time. A server that lists forever, very
//! slowly or a flood of items cannot stall the session or swamp the editor's command list; one
//! whose listing fails still offers its tools.

use std::collections::{BTreeSet, HashSet};
use std::future::Future;
use std::time::Duration;

use ferrite_core::mcp::NoticeSink;
use rmcp::model::{PaginatedRequestParams, Prompt};
use rmcp::service::{Peer, RoleClient, ServiceError};

/// Prompts offered from one server; more are left out (the user is told).
pub(crate) const MAX_PROMPTS: usize = 100;
/// Resources (and, separately, resource templates) remembered from one server.
pub(crate) const MAX_RESOURCES: usize = 1000;
/// Pages followed in one listing: a server that always has a next cursor stops here.
const MAX_PAGES: usize = 20;
/// How long one listing may take, all its pages together.
const LIST_TIMEOUT: Duration = Duration::from_secs(10);

/// What a server offers besides tools.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    pub(crate) prompts: Vec<Prompt>,
    pub(crate) resources: Resources,
}

/// The resources a server claims: the URIs it lists, and the schemes of those and of its
/// templates (`test://notes/{id}` claims `test:` URIs).
#[derive(Debug, Default)]
pub(crate) struct Resources {
    uris: HashSet<String>,
    schemes: BTreeSet<String>,
}

impl Resources {
    /// The server lists exactly `uri`.
    pub(crate) fn lists(&self, uri: &str) -> bool {
        self.uris.contains(uri)
    }

    /// The server lists resources (or templates) of `uri`'s scheme.
    pub(crate) fn claims_scheme(&self, uri: &str) -> bool {
        scheme(uri).is_some_and(|s| self.schemes.contains(&s))
    }

    fn add_uri(&mut self, uri: String) {
        self.add_scheme_of(&uri);
        self.uris.insert(uri);
    }

    fn add_scheme_of(&mut self, uri: &str) {
        if let Some(s) = scheme(uri) {
            self.schemes.insert(s);
        }
    }
}

/// Schemes no server claims as a whole, only URI by URI: local files are never a server's to
/// read in place of the workspace, and a server listing one web page must not be sent every
/// web link the user attaches.
const UNCLAIMABLE_SCHEMES: &[&str] = &["file", "http", "https"];

/// `uri`'s scheme, lower-cased, when a server may claim it; `None` for anything without a
/// scheme.
fn scheme(uri: &str) -> Option<String> {
    let (scheme, _) = uri.split_once(':')?;
    let valid = !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    let scheme = scheme.to_ascii_lowercase();
    (valid && !UNCLAIMABLE_SCHEMES.contains(&scheme.as_str())).then_some(scheme)
}

/// Lists what the server's capabilities advertise.
pub(crate) async fn list(peer: &Peer<RoleClient>, server: &str, notices: &NoticeSink) -> Listing {
    let caps = peer.peer_info().map(|info| info.capabilities.clone());
    let mut listing = Listing::default();
    let Some(caps) = caps else {
        return listing;
    };
    let say = |what: &str, outcome: Paged<()>| match outcome {
        Paged::Done(()) => {}
        Paged::Capped(()) => {
            tracing::warn!(server, what, "MCP listing capped");
            notices(format!(
                "MCP server `{server}` lists too many {what}; only the first ones are used."
            ));
        }
        Paged::Failed(reason) => {
            tracing::warn!(server, what, %reason, "MCP listing failed");
            notices(format!(
                "MCP server `{server}`: listing its {what} failed ({reason}); they are not \
                 offered."
            ));
        }
    };
    if caps.prompts.is_some() {
        let outcome = pages(MAX_PROMPTS, |cursor| async move {
            let page = peer.list_prompts(params(cursor)).await?;
            Ok((page.prompts, page.next_cursor))
        })
        .await;
        say("prompts", outcome.map(|items| listing.prompts = items));
    }
    if caps.resources.is_some() {
        let outcome = pages(MAX_RESOURCES, |cursor| async move {
            let page = peer.list_resources(params(cursor)).await?;
            Ok((page.resources, page.next_cursor))
        })
        .await;
        let resources = &mut listing.resources;
        say(
            "resources",
            outcome.map(|items| items.into_iter().for_each(|r| resources.add_uri(r.uri))),
        );
        let outcome = pages(MAX_RESOURCES, |cursor| async move {
            let page = peer.list_resource_templates(params(cursor)).await?;
            Ok((page.resource_templates, page.next_cursor))
        })
        .await;
        // Templates are optional: a server without them answers "method not found".
        if let Paged::Done(items) | Paged::Capped(items) = outcome {
            for t in items {
                resources.add_scheme_of(&t.uri_template);
            }
        }
    }
    listing
}

fn params(cursor: Option<String>) -> Option<PaginatedRequestParams> {
    Some(PaginatedRequestParams::default().with_cursor(cursor))
}

/// How a bounded listing ended.
enum Paged<T> {
    Done(T),
    /// More than the cap (or more pages than [`MAX_PAGES`]): the first items, and a notice.
    Capped(T),
    Failed(String),
}

impl<T> Paged<T> {
    fn map<U>(self, f: impl FnOnce(T) -> U) -> Paged<U> {
        match self {
            Paged::Done(t) => Paged::Done(f(t)),
            Paged::Capped(t) => Paged::Capped(f(t)),
            Paged::Failed(r) => Paged::Failed(r),
        }
    }
}

/// Follows `next_cursor` until the last page, `cap` items, [`MAX_PAGES`] pages or
/// [`LIST_TIMEOUT`], whichever comes first.
async fn pages<T, F, Fut>(cap: usize, mut page: F) -> Paged<Vec<T>>
where
    F: FnMut(Option<String>) -> Fut,
    Fut: Future<Output = Result<(Vec<T>, Option<String>), ServiceError>>,
{
    let mut items = Vec::new();
    let walk = async {
        let mut cursor = None;
        for _ in 0..MAX_PAGES {
            let (mut got, next) = page(cursor).await?;
            if items.len() + got.len() > cap {
                got.truncate(cap - items.len());
                items.extend(got);
                return Ok(false);
            }
            items.extend(got);
            match next {
                Some(next) => cursor = Some(next),
                None => return Ok(true),
            }
        }
        Ok::<bool, ServiceError>(false)
    };
    match tokio::time::timeout(LIST_TIMEOUT, walk).await {
        Ok(Ok(true)) => Paged::Done(items),
        Ok(Ok(false)) => Paged::Capped(items),
        Ok(Err(e)) => Paged::Failed(e.to_string()),
        Err(_) => Paged::Failed(format!("no answer within {} s", LIST_TIMEOUT.as_secs())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_of_listed_resources_and_templates_are_claimed_but_never_files_or_the_web() {
        let mut r = Resources::default();
        r.add_uri("test://greeting".into());
        r.add_scheme_of("Notes://{id}");
        r.add_uri("file:///etc/passwd".into());
        r.add_uri("https://example.com/page".into());
        assert!(r.lists("test://greeting"));
        assert!(r.claims_scheme("test://other"));
        assert!(r.claims_scheme("notes://7"));
        assert!(!r.claims_scheme("file:///etc/shadow"));
        assert!(r.lists("https://example.com/page"));
        assert!(!r.claims_scheme("https://example.com/other"));
        assert!(!r.claims_scheme("no-scheme"));
    }

    #[tokio::test]
    async fn a_listing_that_never_ends_stops_at_the_cap() {
        let endless = pages(25, |cursor: Option<String>| async move {
            let n: usize = cursor.as_deref().map_or(0, |c| c.parse().unwrap());
            Ok::<_, ServiceError>(((n..n + 10).collect(), Some((n + 10).to_string())))
        })
        .await;
        let Paged::Capped(items) = endless else {
            panic!("not capped")
        };
        assert_eq!(items, (0..25).collect::<Vec<usize>>());
        let pages_only = pages(usize::MAX, |_| async {
            Ok::<_, ServiceError>((vec![1], Some("again".to_owned())))
        })
        .await;
        assert!(matches!(pages_only, Paged::Capped(v) if v.len() == MAX_PAGES));
    }
}
