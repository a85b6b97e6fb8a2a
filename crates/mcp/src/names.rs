//! The names MCP tools are offered under: `mcp__<server>__<tool>`.
//!
//! Providers accept only `[a-zA-Z0-9_-]{1,64}` as a tool name, while MCP servers and tools may
//! be called anything. Names are sanitized, and a name that is too long (or that collides with
//! another after sanitizing) gets a short hash of the real names as a suffix, so the same
//! server and tool always get the same name. The tool keeps its real name for the call itself.

/// Providers' limit on a tool name (Anthropic and OpenAI both).
pub const MAX_TOOL_NAME_LEN: usize = 64;

const PREFIX: &str = "mcp__";
const SEPARATOR: &str = "__";
/// `_` and 8 hex digits.
const SUFFIX_LEN: usize = 9;

/// The name the model sees for `tool` of `server`.
pub fn tool_name(server: &str, tool: &str) -> String {
    let full = format!("{PREFIX}{}{SEPARATOR}{}", sanitize(server), sanitize(tool));
    if full.len() <= MAX_TOOL_NAME_LEN {
        full
    } else {
        hashed(&full, server, tool, 0)
    }
}

/// A name for `tool` of `server` that is not in `taken`: [`tool_name`] unless another tool
/// already has it, then a hashed variant. Deterministic for the same order of tools.
pub(crate) fn unique_tool_name(
    server: &str,
    tool: &str,
    taken: &std::collections::HashSet<String>,
) -> String {
    let base = tool_name(server, tool);
    if !taken.contains(&base) {
        return base;
    }
    let full = format!("{PREFIX}{}{SEPARATOR}{}", sanitize(server), sanitize(tool));
    (1..)
        .map(|salt| hashed(&full, server, tool, salt))
        .find(|name| !taken.contains(name))
        .unwrap_or(base)
}

/// `[a-zA-Z0-9_-]` only: anything else becomes `_`. Never empty.
pub fn sanitize(part: &str) -> String {
    let s: String = part
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() { "_".to_owned() } else { s }
}

/// `full` cut to fit with `_<hash>` appended. The hash is over the real (unsanitized) names,
/// so two tools that only differ in characters sanitizing removed still get different names.
fn hashed(full: &str, server: &str, tool: &str, salt: u32) -> String {
    let mut key = Vec::with_capacity(server.len() + tool.len() + 5);
    key.extend_from_slice(server.as_bytes());
    key.push(0);
    key.extend_from_slice(tool.as_bytes());
    if salt > 0 {
        key.extend_from_slice(&salt.to_le_bytes());
    }
    let hash = fnv1a(&key) as u32;
    // `full` is ASCII after sanitizing, so any byte index is a char boundary.
    let keep = full.len().min(MAX_TOOL_NAME_LEN - SUFFIX_LEN);
    format!("{}_{hash:08x}", &full[..keep])
}

/// FNV-1a: tiny, stable across Rust versions and platforms (unlike `DefaultHasher`), which
/// matters because the names end up in permission rules and session logs.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn plain_names_are_kept() {
        assert_eq!(
            tool_name("github", "create_issue"),
            "mcp__github__create_issue"
        );
        assert_eq!(tool_name("my-srv", "do-it"), "mcp__my-srv__do-it");
    }

    #[test]
    fn other_characters_become_underscores() {
        assert_eq!(
            tool_name("my.server", "read file"),
            "mcp__my_server__read_file"
        );
        assert_eq!(tool_name("", "é/x"), "mcp_______x");
        assert_eq!(sanitize(""), "_");
    }

    #[test]
    fn long_names_are_cut_with_a_stable_hash() {
        let server = "a-server-with-a-rather-long-name";
        let tool = "and_a_tool_whose_name_goes_on_and_on_and_on";
        let name = tool_name(server, tool);
        assert_eq!(name.len(), MAX_TOOL_NAME_LEN);
        assert!(name.starts_with("mcp__a-server-with-a-rather-long-name__and_a_tool"));
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        );
        // Deterministic, and different for a different tool with the same prefix.
        assert_eq!(name, tool_name(server, tool));
        assert_ne!(
            name,
            tool_name(server, "and_a_tool_whose_name_goes_on_and_on_and_onX")
        );
    }

    #[test]
    fn collisions_after_sanitizing_get_distinct_names() {
        let mut taken = HashSet::new();
        let first = unique_tool_name("s", "a.b", &taken);
        taken.insert(first.clone());
        let second = unique_tool_name("s", "a/b", &taken);
        assert_eq!(first, "mcp__s__a_b");
        assert_ne!(second, first);
        assert!(second.starts_with("mcp__s__a_b_"));
        assert!(second.len() <= MAX_TOOL_NAME_LEN);
    }
}
