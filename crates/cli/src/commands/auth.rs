//! `ferrite login` / `ferrite logout`.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use ferrite_core::catalog::KeySource;
use ferrite_core::config::Config;
use ferrite_core::credentials::Credentials;
use ferrite_core::env::Env;

pub fn login(home: &Path, env: &Env, provider: Option<&str>) -> anyhow::Result<ExitCode> {
    let stdin = std::io::stdin();
    let interactive = stdin.is_terminal();
    let mut input = stdin.lock();
    let mut err = std::io::stderr();
    let providers = keyed_providers(home, env);
    let provider = match provider {
        Some(p) => {
            if !providers.iter().any(|(name, _)| name == p) {
                anyhow::bail!(
                    "provider `{p}` takes no key here; providers that do: {}",
                    names(&providers)
                );
            }
            p.to_owned()
        }
        // Piped input is the key itself: guessing a provider (or reading the key as one) would
        // be wrong, so the provider must be named.
        None if !interactive => anyhow::bail!(
            "name the provider: `ferrite login PROVIDER` ({})",
            names(&providers)
        ),
        None => pick_provider(&mut input, &mut err, &providers)?,
    };
    if interactive {
        write!(err, "API key for {provider} (not shown): ")?;
        err.flush()?;
    }
    let key = {
        // The key is typed at a terminal: it must not be echoed (shoulder-surfing, screen
        // recordings, terminal scrollback).
        let quiet = interactive.then(NoEcho::start).flatten();
        if interactive && quiet.is_none() && cfg!(windows) {
            anyhow::bail!(
                "typing a key at the terminal is not supported on Windows yet (it would be \
                 echoed); pipe it instead (`ferrite login {provider} < key.txt`) or set the \
                 provider's key variable"
            );
        }
        let mut key = String::new();
        input
            .read_line(&mut key)
            .context("reading the key from stdin")?;
        key
    };
    if interactive {
        writeln!(err)?;
    }
    let key = key.trim();
    if key.is_empty() {
        anyhow::bail!("no key given (paste it, or pipe it on stdin)");
    }
    // A key the provider refuses is not stored: the one stored before (if any) stays.
    let checked = check_key(home, env, &provider, key)?;
    if let Some(rejected) = checked.rejection {
        anyhow::bail!("{rejected}; the key was not stored");
    }
    Credentials::store(home, &provider, key)?;
    writeln!(
        err,
        "{} Stored the {provider} key in {}",
        checked.said,
        ferrite_core::credentials::credentials_path(home).display()
    )?;
    Ok(ExitCode::SUCCESS)
}

/// What checking a key found: what to say, and why the key was refused (if it was).
struct KeyCheck {
    said: String,
    rejection: Option<String>,
}

/// Lists the provider's models with `key`, a cheap authenticated request: accepted, rejected,
/// or not checked (the provider unreachable, or its listing failing otherwise).
fn check_key(home: &Path, env: &Env, provider: &str, key: &str) -> anyhow::Result<KeyCheck> {
    use super::reachability::{Contact, cause_in_words, contact};
    let cwd = std::env::current_dir().ok();
    let config = Config::load(home, cwd.as_deref()).unwrap_or_default();
    let catalog = ferrite_core::catalog::Catalog::build(&config, env, &Credentials::default());
    let (Some(p), Some(connector)) = (catalog.provider(provider), super::connector(env)) else {
        return Ok(KeyCheck {
            said: "Could not check the key (no HTTP client).".into(),
            rejection: None,
        });
    };
    let at = format!("{provider} at {}", p.base_url);
    let found = super::runtime()?.block_on(contact(connector.as_ref(), p, Some(key)));
    let (said, rejection) = match found {
        Contact::Accepted(_) => (format!("The key was accepted by {at}."), None),
        Contact::Rejected(e) => (
            String::new(),
            Some(format!(
                "{at} rejected the key: {} ({e})",
                cause_in_words(&e)
            )),
        ),
        Contact::Unreachable(e) => (
            format!(
                "Could not check the key: {at} is unreachable ({}).",
                cause_in_words(&e)
            ),
            None,
        ),
        Contact::Unchecked(e) => (format!("Could not check the key ({e})."), None),
    };
    Ok(KeyCheck { said, rejection })
}

/// Built-in and configured providers that take a key, with the variables that hold it.
fn keyed_providers(home: &Path, env: &Env) -> Vec<(String, Vec<String>)> {
    let cwd = std::env::current_dir().ok();
    let config = Config::load(home, cwd.as_deref()).unwrap_or_default();
    let catalog = ferrite_core::catalog::Catalog::build(&config, env, &Credentials::default());
    catalog
        .keyed_providers()
        .into_iter()
        .map(|p| {
            let vars = match &p.key_source {
                KeySource::Env(v) => v.clone(),
                KeySource::NotNeeded => vec![],
            };
            (p.name.clone(), vars)
        })
        .collect()
}

fn names(providers: &[(String, Vec<String>)]) -> String {
    providers
        .iter()
        .map(|(n, _)| n.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// What tells two built-in providers apart that share a key: the API they speak.
fn about_provider(name: &str) -> Option<&'static str> {
    match name {
        "anthropic" => Some("Claude models, Anthropic's Messages API"),
        "openai" => Some(
            "OpenAI's own API (Responses API, api.openai.com): GPT-5 and the o-series; pick this \
             for an OpenAI key",
        ),
        "openai-chat" => Some(
            "the Chat Completions API at OPENAI_BASE_URL: OpenAI-compatible servers (vLLM, \
             LiteLLM, OpenRouter, ...); shares the openai key",
        ),
        _ => None,
    }
}

/// Asks at the terminal which provider the key is for: a number or a name from the list.
fn pick_provider(
    input: &mut impl BufRead,
    err: &mut impl Write,
    providers: &[(String, Vec<String>)],
) -> anyhow::Result<String> {
    writeln!(err, "Which provider is the key for?")?;
    for (i, (name, vars)) in providers.iter().enumerate() {
        writeln!(err, "  {}. {name:<14} (or set {})", i + 1, vars.join(" / "))?;
        if let Some(about) = about_provider(name) {
            writeln!(err, "     {about}")?;
        }
    }
    write!(err, "Provider [1-{}, or a name]: ", providers.len())?;
    err.flush()?;
    let mut line = String::new();
    input.read_line(&mut line).context("reading the provider")?;
    let answer = line.trim();
    let by_number = answer
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|i| providers.get(i));
    let by_name = providers.iter().find(|(n, _)| n == answer);
    match by_number.or(by_name) {
        Some((name, _)) => Ok(name.clone()),
        None => anyhow::bail!(
            "`{answer}` is not one of the providers: {}",
            names(providers)
        ),
    }
}

/// Terminal echo off until dropped (restored even when reading fails).
#[cfg(unix)]
struct NoEcho {
    saved: rustix::termios::Termios,
}

/// Windows: console modes need the Win32 console API, not here yet; `login` refuses to read a
/// typed key rather than echo it.
#[cfg(windows)]
struct NoEcho;

#[cfg(windows)]
impl NoEcho {
    fn start() -> Option<Self> {
        None
    }
}

#[cfg(unix)]
impl NoEcho {
    fn start() -> Option<Self> {
        let stdin = std::io::stdin();
        let saved = rustix::termios::tcgetattr(&stdin).ok()?;
        let mut quiet = saved.clone();
        quiet.local_modes.remove(rustix::termios::LocalModes::ECHO);
        rustix::termios::tcsetattr(&stdin, rustix::termios::OptionalActions::Now, &quiet).ok()?;
        Some(Self { saved })
    }
}

#[cfg(unix)]
impl Drop for NoEcho {
    fn drop(&mut self) {
        let _ = rustix::termios::tcsetattr(
            std::io::stdin(),
            rustix::termios::OptionalActions::Now,
            &self.saved,
        );
    }
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
