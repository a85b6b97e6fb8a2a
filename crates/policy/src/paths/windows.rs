//! Windows path syntax, as pure string functions so that they are compiled and tested on every
//! system (std only parses drive letters and `\\?\` prefixes when built for Windows).
//!
//! Windows compares names case-insensitively, accepts `/` and `\` alike, and spells one
//! directory several ways: `C:\w`, `c:/w`, `\\?\C:\w` (what `canonicalize` returns), and for a
//! share `\\server\share\w` or `\\?\UNC\server\share\w`. The policy must treat them as one, or a
//! model could step out of the workspace (or into FERRITE_HOME) by changing case or prefix.

/// The root a Windows prefix stands for, in its plain spelling: `C:\` for `c:`, `\\?\C:` and
/// `\\.\C:`; `\\server\share\` for `\\server\share` and `\\?\UNC\server\share`; any other verbatim
/// or device prefix as written, with a trailing `\`.
pub fn plain_root(prefix: &str) -> String {
    let unified = prefix.replace('/', "\\");
    let rest = unified
        .strip_prefix(r"\\?\")
        .or_else(|| unified.strip_prefix(r"\\.\"));
    let plain = match rest {
        Some(rest) => match rest.get(..4) {
            Some(unc) if unc.eq_ignore_ascii_case(r"UNC\") => format!(r"\\{}", &rest[4..]),
            _ if is_drive(rest) => rest.to_owned(),
            _ => unified.clone(),
        },
        None => unified.clone(),
    };
    let mut root = if is_drive(&plain) {
        plain.to_ascii_uppercase()
    } else {
        plain
    };
    if !root.ends_with('\\') {
        root.push('\\');
    }
    root
}

/// Whether `path` is `root` or lies below it, comparing as Windows does: either separator, any
/// case, verbatim and plain prefixes alike, `.` segments ignored. Both must be absolute and
/// already resolved (no `..`).
pub fn is_under(path: &str, root: &str) -> bool {
    let (path, root) = (key(path), key(root));
    path.len() >= root.len() && path[..root.len()] == root[..]
}

/// `path` as comparable components: the plain root first, then each name, all lowercased.
fn key(path: &str) -> Vec<String> {
    let (prefix, rest) = split_prefix(path);
    let mut parts = vec![plain_root(prefix).to_lowercase()];
    parts.extend(
        rest.split(['\\', '/'])
            .filter(|part| !part.is_empty() && *part != ".")
            .map(str::to_lowercase),
    );
    parts
}

/// Splits `path` into its prefix (drive, share, or verbatim/device prefix) and the rest.
fn split_prefix(path: &str) -> (&str, &str) {
    // Same byte offsets as `path`: both separators are one byte.
    let text = path.replace('/', "\\");
    let end = if let Some(rest) = text
        .strip_prefix(r"\\?\")
        .or_else(|| text.strip_prefix(r"\\.\"))
    {
        // `\\?\C:`, `\\?\UNC\server\share`, `\\.\PIPE`…: up to the end of the drive, the share,
        // or the first name.
        let skip = 4;
        if is_drive(rest) {
            skip + 2
        } else if rest
            .get(..4)
            .is_some_and(|u| u.eq_ignore_ascii_case(r"UNC\"))
        {
            skip + 4 + names_len(&rest[4..], 2)
        } else {
            skip + names_len(rest, 1)
        }
    } else if let Some(rest) = text.strip_prefix(r"\\") {
        2 + names_len(rest, 2)
    } else if is_drive(&text) {
        2
    } else {
        0
    };
    // Byte offsets: the prefix is ASCII up to the names, whose lengths were counted in bytes.
    path.split_at(end.min(path.len()))
}

/// The byte length of the first `count` `\`-separated names of `text`, with the separator
/// between them.
fn names_len(text: &str, count: usize) -> usize {
    let mut len = 0;
    for (i, name) in text.split('\\').take(count).enumerate() {
        len += name.len() + usize::from(i > 0);
    }
    len
}

fn is_drive(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':'
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn prefixes_have_one_plain_root() {
        for (prefix, root) in [
            ("c:", r"C:\"),
            (r"C:\", r"C:\"),
            (r"\\?\C:", r"C:\"),
            (r"\\?\d:\", r"D:\"),
            (r"\\.\C:", r"C:\"),
            (r"\\server\share", r"\\server\share\"),
            (r"\\?\UNC\server\share", r"\\server\share\"),
            (r"\\?\unc\server\share", r"\\server\share\"),
            ("//server/share", r"\\server\share\"),
            (r"\\.\PIPE", r"\\.\PIPE\"),
        ] {
            assert_eq!(plain_root(prefix), root, "{prefix}");
        }
    }

    #[test]
    fn spellings_of_one_directory_compare_equal() {
        let root = r"C:\Users\Me\project";
        for path in [
            r"C:\Users\Me\project",
            r"c:\users\me\PROJECT\src\main.rs",
            "C:/Users/Me/project/src",
            r"\\?\C:\Users\Me\project\Cargo.toml",
            r"C:\Users\Me\.\project\x",
        ] {
            assert!(is_under(path, root), "{path}");
        }
        assert!(is_under(r"C:\Users\Me\project", r"\\?\c:\users\me\project"));
    }

    #[test]
    fn neighbours_and_other_drives_are_outside() {
        let root = r"C:\Users\Me\project";
        for path in [
            r"C:\Users\Me\project2\x",
            r"C:\Users\Me",
            r"D:\Users\Me\project",
            r"\\server\share\Users\Me\project",
            r"\\?\UNC\C:\Users\Me\project",
        ] {
            assert!(!is_under(path, root), "{path}");
        }
    }

    #[test]
    fn shares_compare_in_both_spellings() {
        let root = r"\\Server\Share\repo";
        assert!(is_under(r"\\?\UNC\server\share\repo\a.txt", root));
        assert!(is_under("//server/share/REPO", root));
        assert!(!is_under(r"\\server\other\repo", root));
    }

    #[test]
    fn ferrite_home_is_found_whatever_the_case() {
        let home = r"C:\Users\Me\.ferrite";
        assert!(is_under(r"c:\users\me\.FERRITE\credentials.json", home));
        assert!(is_under(r"\\?\C:\Users\Me\.ferrite\sessions", home));
    }
}
