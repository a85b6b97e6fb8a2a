//! Hook matchers, compiled once per process and content. Hook files are read on every turn; a
//! repository can list many matchers whose compilation is slow (`(?:\p{L}|\p{N}){1,500}` takes
//! tens of milliseconds each). What bounds the cost: only the matchers of hooks that run are
//! compiled (an untrusted repository's never are), a compiled one is reused while its text is
//! the same, a matcher's text and compiled size are limited, and so is the number of hooks
//! (`table::MAX_PER_SOURCE`, the directories read).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use regex::Regex;

/// A matcher's text, at most (tool names are short; `Edit|Write|MultiEdit` is typical).
pub const MAX_TEXT: usize = 1024;
/// The compiled program of one matcher, at most.
const MAX_COMPILED: usize = 256 * 1024;
/// Matchers kept compiled; past it the cache starts over (a process rarely sees a hundred).
const MAX_CACHED: usize = 512;

type Compiled = Result<Option<Arc<Regex>>, String>;

fn cache() -> &'static Mutex<HashMap<String, Compiled>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Compiled>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// A matcher as Claude Code reads it: empty or `*` is every tool, anything else a regular
/// expression that must match the whole name (`Edit|Write`, `mcp__github__.*`). Compiled on
/// first use of this text in the process, then taken from the cache.
pub fn compiled(text: &str) -> Compiled {
    let text = text.trim();
    if text.is_empty() || text == "*" {
        return Ok(None);
    }
    if text.len() > MAX_TEXT {
        return Err(format!(
            "matcher of {} bytes is longer than {MAX_TEXT}",
            text.len()
        ));
    }
    let mut cache = cache().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(hit) = cache.get(text) {
        return hit.clone();
    }
    let built = regex::RegexBuilder::new(&format!("^(?:{text})$"))
        .size_limit(MAX_COMPILED)
        .dfa_size_limit(MAX_COMPILED)
        .build()
        .map(|re| Some(Arc::new(re)))
        .map_err(|e| format!("matcher {text:?} is not a regular expression: {e}"));
    if cache.len() >= MAX_CACHED {
        cache.clear();
    }
    cache.insert(text.to_owned(), built.clone());
    built
}

/// Whether `text` was compiled in this process (tests: an untrusted hook's never is).
pub fn was_compiled(text: &str) -> bool {
    cache()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .contains_key(text.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_text_is_compiled_once() {
        let a = compiled("Edit|Write|NotebookEdit").unwrap().unwrap();
        let b = compiled(" Edit|Write|NotebookEdit ").unwrap().unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert!(compiled("*").unwrap().is_none());
        assert!(compiled(&"a".repeat(MAX_TEXT + 1)).is_err());
        assert!(compiled("(").is_err());
    }
}
