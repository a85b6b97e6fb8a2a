//! `ferrite login` / `ferrite logout`.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use ferrite_core::credentials::Credentials;

pub fn login(home: &Path, provider: Option<&str>) -> anyhow::Result<ExitCode> {
    let provider = provider.unwrap_or("anthropic");
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        let mut err = std::io::stderr();
        write!(err, "API key for {provider}: ")?;
        err.flush()?;
    }
    let mut key = String::new();
    stdin
        .lock()
        .read_line(&mut key)
        .context("reading the key from stdin")?;
    let key = key.trim();
    if key.is_empty() {
        anyhow::bail!("no key given (paste it, or pipe it on stdin)");
    }
    Credentials::store(home, provider, key)?;
    writeln!(
        std::io::stderr(),
        "Stored the {provider} key in {}",
        ferrite_core::credentials::credentials_path(home).display()
    )?;
    Ok(ExitCode::SUCCESS)
}

pub fn logout(home: &Path, provider: Option<&str>) -> anyhow::Result<ExitCode> {
    let removed = Credentials::remove(home, provider)?;
    let mut err = std::io::stderr();
    if removed.is_empty() {
        writeln!(err, "No stored credentials to remove.")?;
    } else {
        writeln!(err, "Removed: {}", removed.join(", "))?;
    }
    Ok(ExitCode::SUCCESS)
}
