//! Prompt attachments: a `resource_link` to a local text file inside the workspace is read when
//! the prompt arrives, so the model sees the file the user pointed at.

use std::path::{Path, PathBuf};

use crate::content::UserContent;

/// Larger linked files are not inlined (the model can still `read` them).
pub const MAX_INLINE_BYTES: u64 = 256 * 1024;

/// Fills in the text of `resource_link`s to local text files under one of `roots`.
pub fn expand_links(content: Vec<UserContent>, roots: &[PathBuf]) -> Vec<UserContent> {
    content
        .into_iter()
        .map(|c| match c {
            UserContent::ResourceLink {
                uri,
                name,
                mime_type,
                text: None,
            } => {
                let text = local_path(&uri).and_then(|p| read_inside(&p, roots));
                UserContent::ResourceLink {
                    uri,
                    name,
                    mime_type,
                    text,
                }
            }
            other => other,
        })
        .collect()
}

/// The path of a `file://` URI (or a bare absolute path).
fn local_path(uri: &str) -> Option<PathBuf> {
    let raw = match uri.strip_prefix("file://") {
        // `file://host/path` names another machine; only the local form is ours.
        Some(rest) => rest.strip_prefix("localhost").unwrap_or(rest),
        None if uri.starts_with('/') => uri,
        None => return None,
    };
    let decoded = percent_decode(raw)?;
    let p = PathBuf::from(decoded);
    p.is_absolute().then_some(p)
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn read_inside(path: &Path, roots: &[PathBuf]) -> Option<String> {
    let real = std::fs::canonicalize(path).ok()?;
    if !roots.iter().any(|r| real.starts_with(r)) {
        return None;
    }
    let meta = std::fs::metadata(&real).ok()?;
    if !meta.is_file() || meta.len() > MAX_INLINE_BYTES {
        return None;
    }
    let bytes = std::fs::read(&real).ok()?;
    if bytes.iter().take(8192).any(|&b| b == 0) {
        return None;
    }
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(uri: &str) -> UserContent {
        UserContent::ResourceLink {
            uri: uri.into(),
            name: "f".into(),
            mime_type: None,
            text: None,
        }
    }

    fn text_of(c: &UserContent) -> Option<&str> {
        match c {
            UserContent::ResourceLink { text, .. } => text.as_deref(),
            _ => None,
        }
    }

    #[test]
    fn reads_workspace_files_only() {
        let ws = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(ws.path()).unwrap();
        std::fs::write(root.join("a b.rs"), "fn main() {}").unwrap();
        std::fs::write(root.join("bin"), [0u8, 1, 2]).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "no").unwrap();
        let roots = vec![root.clone()];
        let got = expand_links(
            vec![
                link(&format!("file://{}/a%20b.rs", root.display())),
                link(&format!("{}/bin", root.display())),
                link(&format!("file://{}/secret", outside.path().display())),
                link("https://example.com/x"),
            ],
            &roots,
        );
        assert_eq!(text_of(&got[0]), Some("fn main() {}"));
        assert_eq!(text_of(&got[1]), None);
        assert_eq!(text_of(&got[2]), None);
        assert_eq!(text_of(&got[3]), None);
    }
}
