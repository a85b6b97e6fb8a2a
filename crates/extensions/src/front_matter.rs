//! Markdown files that start with front matter, as prompt files, skills and custom agents are
//! written: reading their fields and body, and the names they may give themselves. Below all
//! three, so none of them depends on another for it.

/// `---`-delimited `key: value` lines at the top (the subset of YAML prompt files, skills and
/// agents use), and the body after them. A value that is only `>` or `|` takes the indented lines
/// after it, joined (YAML's folded and literal blocks, as skill descriptions are written).
pub fn parse(text: &str) -> (Vec<(String, String)>, String) {
    let none = (Vec::new(), text.to_owned());
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return none;
    };
    let Some(end) = rest.find("\n---") else {
        return none;
    };
    let mut fields: Vec<(String, String)> = Vec::new();
    let mut lines = rest[..end].lines().peekable();
    while let Some(line) = lines.next() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let mut value = value.trim().to_owned();
        if matches!(value.as_str(), ">" | "|" | ">-" | "|-" | "") {
            let mut block = Vec::new();
            while let Some(next) = lines.peek() {
                if !next.starts_with([' ', '\t']) {
                    break;
                }
                block.push(next.trim());
                lines.next();
            }
            value = block.join(if value.starts_with('|') { "\n" } else { " " });
        }
        let value = value.trim_matches('"').trim_matches('\'').to_owned();
        if !value.is_empty() {
            fields.push((key.trim().to_owned(), value));
        }
    }
    let after = &rest[end + 4..];
    let body = after
        .strip_prefix("\r\n")
        .or_else(|| after.strip_prefix('\n'))
        .unwrap_or(after)
        .to_owned();
    (fields, body)
}

/// A name a command, skill or agent may have: letters, digits, `-` and `_`, at most 64 (what
/// `/name` can run).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}
