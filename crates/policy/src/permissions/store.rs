//! Stored "always" answers: `FERRITE_HOME/permissions/<name>-<hash>.json`, one file per workspace.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Rule, RuleError};

/// Stored "always" answers for one workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredRules {
    pub workspace: PathBuf,
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
}

/// A rules file that cannot be used: unreadable, not JSON of the right shape, or with a rule
/// that does not parse. Never skipped (a dropped deny rule is a hole): the turn fails on it.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot read the permission rules {path}: {message}")]
    Unreadable { path: PathBuf, message: String },
    #[error("invalid permission rules {path}: {source}")]
    BadRule { path: PathBuf, source: RuleError },
}

pub fn store_path(home: &Path, workspace: &Path) -> PathBuf {
    // FNV-1a: a stable file name for the workspace path (the file also records the path).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in workspace.as_os_str().as_encoded_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let name = workspace
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("root");
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    home.join("permissions")
        .join(format!("{safe}-{h:016x}.json"))
}

impl StoredRules {
    /// The rules stored for `workspace` (none when the file does not exist), every rule checked.
    pub fn load(home: &Path, workspace: &Path) -> Result<StoredRules, StoreError> {
        let path = store_path(home, workspace);
        let unreadable = |message: String| StoreError::Unreadable {
            path: path.clone(),
            message,
        };
        let stored: StoredRules = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| unreadable(e.to_string()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => StoredRules {
                workspace: workspace.to_owned(),
                ..Default::default()
            },
            Err(e) => return Err(unreadable(e.to_string())),
        };
        for r in stored.allow.iter().chain(&stored.deny) {
            Rule::parse(r).map_err(|source| StoreError::BadRule {
                path: path.clone(),
                source,
            })?;
        }
        Ok(stored)
    }

    /// Adds a rule and saves atomically.
    pub fn add(home: &Path, workspace: &Path, rule: String, allow: bool) -> std::io::Result<()> {
        let mut stored = Self::load(home, workspace).map_err(std::io::Error::other)?;
        let list = if allow {
            &mut stored.allow
        } else {
            &mut stored.deny
        };
        if !list.contains(&rule) {
            list.push(rule);
        }
        let bytes = serde_json::to_vec_pretty(&stored).map_err(std::io::Error::other)?;
        crate::private_fs::write_atomic(&store_path(home, workspace), &bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_rules_roundtrip_per_workspace() {
        let home = tempfile::tempdir().unwrap();
        StoredRules::add(home.path(), Path::new("/ws/a"), "bash(make:*)".into(), true).unwrap();
        StoredRules::add(home.path(), Path::new("/ws/a"), "bash(make:*)".into(), true).unwrap();
        StoredRules::add(home.path(), Path::new("/ws/a"), "edit(**)".into(), false).unwrap();
        let s = StoredRules::load(home.path(), Path::new("/ws/a")).unwrap();
        assert_eq!(
            (s.allow, s.deny),
            (
                vec!["bash(make:*)".to_string()],
                vec!["edit(**)".to_string()]
            )
        );
        assert!(
            StoredRules::load(home.path(), Path::new("/ws/b"))
                .unwrap()
                .allow
                .is_empty()
        );
    }

    #[test]
    fn a_bad_stored_rule_is_an_error_naming_rule_and_file() {
        let home = tempfile::tempdir().unwrap();
        let path = store_path(home.path(), Path::new("/ws/a"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, r#"{"workspace":"/ws/a","deny":["bash(rm -rf:*"]}"#).unwrap();
        let e = StoredRules::load(home.path(), Path::new("/ws/a"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("bash(rm -rf:*") && e.contains(&path.display().to_string()),
            "{e}"
        );
        std::fs::write(&path, "{not json").unwrap();
        assert!(StoredRules::load(home.path(), Path::new("/ws/a")).is_err());
    }
}
