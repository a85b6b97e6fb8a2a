//! A snapshot of the process environment, taken once by the binary and passed down explicitly
//! (no global reads, no `set_var`), so tests can build any environment they need.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Default)]
pub struct Env {
    vars: BTreeMap<String, String>,
    /// The user's home directory ([`Env::home`]).
    home: Option<PathBuf>,
}

impl Env {
    pub fn from_process() -> Self {
        let vars: BTreeMap<String, String> = std::env::vars().collect();
        // Editors may start the agent with no HOME (agentic.nvim) or an empty one (the ACP
        // agent registry): then the passwd entry says where home is (what `home_dir` reads).
        let home = home_from(&vars).or_else(|| {
            std::env::home_dir().filter(|h| h.is_absolute() && !h.as_os_str().is_empty())
        });
        Self { vars, home }
    }

    pub fn from_pairs<I, K, V>(pairs: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        let vars: BTreeMap<String, String> = pairs
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        let home = home_from(&vars);
        Self { vars, home }
    }

    /// The user's home directory: `HOME` when it is an absolute path, else (for the process's
    /// own environment) the user's passwd entry. `None` when neither says.
    pub fn home(&self) -> Option<&Path> {
        self.home.as_deref()
    }

    /// The value of `name`, treating an empty value as unset.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }
}

fn home_from(vars: &BTreeMap<String, String>) -> Option<PathBuf> {
    vars.get("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_is_an_absolute_home_variable_only() {
        assert_eq!(
            Env::from_pairs([("HOME", "/home/me")]).home(),
            Some(Path::new("/home/me"))
        );
        for home in ["", "relative/dir"] {
            assert_eq!(Env::from_pairs([("HOME", home)]).home(), None, "{home:?}");
        }
        assert_eq!(Env::from_pairs([("PATH", "/bin")]).home(), None);
    }
}
