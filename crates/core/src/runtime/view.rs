//! The checks and defaults applied when a session opens.

use std::path::Path;

use super::error::RuntimeError;
use crate::config::Config;
use crate::mcp::{McpServerSpec, McpTransport};

/// The client's servers, then those of config whose names the client did not use.
pub(super) fn mcp_specs(
    config: &Config,
    mut from_client: Vec<McpServerSpec>,
    cwd: &Path,
) -> Vec<McpServerSpec> {
    for (name, s) in &config.mcp_servers {
        if from_client.iter().any(|c| c.name == *name) {
            continue;
        }
        let transport = match (&s.command, &s.url) {
            (Some(command), _) => McpTransport::Stdio {
                command: command.clone(),
                args: s.args.clone(),
                env: s.env.clone(),
            },
            (None, Some(url)) => McpTransport::Http {
                url: url.clone(),
                headers: s.headers.clone(),
            },
            (None, None) => continue,
        };
        from_client.push(McpServerSpec {
            name: name.clone(),
            transport,
            cwd: None,
            env_remove: vec![],
        });
    }
    let secret = crate::exec::secret_env_names(config);
    for s in &mut from_client {
        s.cwd.get_or_insert_with(|| cwd.to_owned());
        s.env_remove.clone_from(&secret);
    }
    from_client
}

pub(super) fn check_dir(p: &Path, what: &str) -> Result<(), RuntimeError> {
    if !p.is_absolute() {
        return Err(RuntimeError::Invalid(format!(
            "`{what}` must be an absolute path"
        )));
    }
    if !p.is_dir() {
        return Err(RuntimeError::Invalid(format!(
            "`{what}` is not an existing directory: {}",
            p.display()
        )));
    }
    Ok(())
}
