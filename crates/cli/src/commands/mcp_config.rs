//! `ferrite mcp add|list|remove`: the `[mcp_servers.NAME]` tables of the user's config.toml,
//! edited in place (toml_edit): the user's comments, order and layout stay as they were.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use ferrite_core::config::Config;
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table};

fn config_path(home: &Path) -> PathBuf {
    home.join("config.toml")
}

/// The user config as a document (empty when there is no file yet).
fn read(home: &Path) -> anyhow::Result<(PathBuf, String, DocumentMut)> {
    let path = config_path(home);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let doc = text
        .parse::<DocumentMut>()
        .map_err(|e| anyhow::anyhow!("{} is not valid TOML:\n{e}", path.display()))?;
    Ok((path, text, doc))
}

/// Writes the edited document, then checks that Ferrite still reads the config; if not, the
/// file is put back as it was and the reason given.
fn write(home: &Path, path: &Path, before: &str, doc: &DocumentMut) -> anyhow::Result<()> {
    std::fs::create_dir_all(home).with_context(|| format!("creating {}", home.display()))?;
    std::fs::write(path, doc.to_string()).with_context(|| format!("writing {}", path.display()))?;
    if let Err(e) = Config::load(home, None) {
        let restored = if before.is_empty() {
            std::fs::remove_file(path)
        } else {
            std::fs::write(path, before)
        };
        restored.with_context(|| format!("restoring {}", path.display()))?;
        anyhow::bail!("the change was not kept: {e}");
    }
    Ok(())
}

/// Server names become part of tool names (`mcp__NAME__tool`).
fn check_name(name: &str) -> anyhow::Result<()> {
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !ok {
        anyhow::bail!("`{name}`: a server name is letters, digits, `_` and `-`");
    }
    Ok(())
}

/// `KEY=VALUE` pairs as an inline table.
fn pairs(list: &[String], what: &str) -> anyhow::Result<InlineTable> {
    let mut table = InlineTable::new();
    for item in list {
        let Some((k, v)) = item.split_once('=') else {
            anyhow::bail!("{what} `{item}`: expected NAME=VALUE");
        };
        table.insert(k.trim(), v.into());
    }
    Ok(table)
}

/// The server's table: `url` (and `headers`) for a URL, else `command`, `args` (and `env`).
fn server_table(target: &[String], env: &[String], headers: &[String]) -> anyhow::Result<Table> {
    let mut table = Table::new();
    let first = target.first().context("no URL or command given")?;
    if first.starts_with("http://") || first.starts_with("https://") {
        if target.len() > 1 || !env.is_empty() {
            anyhow::bail!("a remote server is its URL alone (`--header` for its headers)");
        }
        table.insert("url", first.as_str().into());
        if !headers.is_empty() {
            table.insert("headers", Item::Value(pairs(headers, "--header")?.into()));
        }
        return Ok(table);
    }
    if !headers.is_empty() {
        anyhow::bail!("`--header` is for remote servers (a URL); a command takes `--env`");
    }
    table.insert("command", first.as_str().into());
    if target.len() > 1 {
        let args: Array = target[1..].iter().map(String::as_str).collect();
        table.insert("args", Item::Value(args.into()));
    }
    if !env.is_empty() {
        table.insert("env", Item::Value(pairs(env, "--env")?.into()));
    }
    Ok(table)
}

pub fn add(
    home: &Path,
    name: &str,
    target: &[String],
    env: &[String],
    headers: &[String],
) -> anyhow::Result<ExitCode> {
    check_name(name)?;
    let server = server_table(target, env, headers)?;
    let (path, before, mut doc) = read(home)?;
    let servers = doc
        .entry("mcp_servers")
        .or_insert_with(|| {
            let mut t = Table::new();
            t.set_implicit(true);
            Item::Table(t)
        })
        .as_table_mut()
        .context("`mcp_servers` in config.toml is not a table")?;
    if servers.contains_key(name) {
        anyhow::bail!(
            "MCP server `{name}` is already in {}; `ferrite mcp remove {name}` first",
            path.display()
        );
    }
    servers.insert(name, Item::Table(server));
    write(home, &path, &before, &doc)?;
    let _ = writeln!(
        std::io::stderr(),
        "Added MCP server `{name}` to {}; new sessions start it.",
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}

pub fn remove(home: &Path, name: &str) -> anyhow::Result<ExitCode> {
    let (path, before, mut doc) = read(home)?;
    let removed = doc
        .get_mut("mcp_servers")
        .and_then(Item::as_table_like_mut)
        .and_then(|t| t.remove(name));
    if removed.is_none() {
        anyhow::bail!("no MCP server `{name}` in {}", path.display());
    }
    write(home, &path, &before, &doc)?;
    let _ = writeln!(
        std::io::stderr(),
        "Removed MCP server `{name}` from {}.",
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Every server a session here would have: the user's and this directory's workspace's.
pub fn list(home: &Path) -> anyhow::Result<ExitCode> {
    let cwd = std::env::current_dir().ok();
    let config = Config::load(home, cwd.as_deref()).map_err(|e| anyhow::anyhow!("{e}"))?;
    if config.mcp_servers.is_empty() {
        let _ = writeln!(
            std::io::stderr(),
            "No MCP servers configured (`ferrite mcp add NAME URL|COMMAND…` adds one)."
        );
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    for (name, server) in &config.mcp_servers {
        let what = match (&server.url, &server.command) {
            (Some(url), _) => url.clone(),
            (None, Some(command)) => std::iter::once(command.as_str())
                .chain(server.args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            (None, None) => "(no command or url)".to_owned(),
        };
        writeln!(out, "{name}\t{what}")?;
    }
    Ok(ExitCode::SUCCESS)
}
