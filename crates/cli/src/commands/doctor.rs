//! `ferrite doctor`: what works here, and what to fix.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use ferrite_core::agents::Agents;
use ferrite_core::catalog::Catalog;
use ferrite_core::config::Config;
use ferrite_core::credentials::Credentials;
use ferrite_core::display::visible;
use ferrite_core::env::Env;
use ferrite_core::hooks::Hooks;
use ferrite_core::hooks::shown::hook_terminal;
use ferrite_core::own_files::OwnFiles;
use ferrite_core::permissions::StoredRules;
use ferrite_core::trust::Approved;

pub fn run(home: &Path, env: &Env) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "FERRITE_HOME: {}", home.display())?;
    let cwd = std::env::current_dir().ok();
    let (config, creds, mut problems) = write_own_files(&mut out, home, cwd.as_deref())?;
    let catalog = Catalog::build(&config, env, &creds);
    problems += super::reachability::write_providers_and_default(&mut out, &catalog, &config, env)?;
    write_commands(&mut out)?;
    if let Some(cwd) = cwd.as_deref() {
        write_hooks(&mut out, home, env, &config, cwd)?;
    }
    write_remote_mcp(&mut out, home, &config)?;

    if problems == 0 {
        writeln!(out, "\nAll good.")?;
        Ok(ExitCode::SUCCESS)
    } else {
        writeln!(out, "\n{problems} problem(s) found.")?;
        Ok(ExitCode::FAILURE)
    }
}

/// Ferrite's own files: the config (defaults when it does not load), the permission rules
/// stored for `cwd`, the credentials; with the number of them that failed to load.
fn write_own_files(
    out: &mut impl Write,
    home: &Path,
    cwd: Option<&Path>,
) -> std::io::Result<(Config, Credentials, usize)> {
    let mut problems = 0;
    let config = match Config::load(home, cwd) {
        Ok(c) => {
            writeln!(out, "config: ok")?;
            for w in &c.warnings {
                writeln!(out, "  warning: {w}")?;
            }
            c
        }
        Err(e) => {
            problems += 1;
            writeln!(out, "config: ERROR {e}")?;
            Config::default()
        }
    };
    if let Some(cwd) = cwd {
        match StoredRules::load(home, cwd) {
            Ok(_) => writeln!(out, "permission rules stored for this directory: ok")?,
            Err(e) => {
                problems += 1;
                writeln!(out, "permission rules stored for this directory: ERROR {e}")?;
            }
        }
    }
    let creds = match Credentials::load(home) {
        Ok(c) => c,
        Err(e) => {
            problems += 1;
            writeln!(out, "credentials: ERROR {e}")?;
            Credentials::default()
        }
    };
    Ok((config, creds, problems))
}

/// How commands run here: the shell, the sandbox and what it cannot guarantee.
fn write_commands(out: &mut impl Write) -> std::io::Result<()> {
    let (support, risks, shell, sockets) = match std::env::current_exe() {
        Ok(exe) => {
            let runner = ferrite_exec::ExecRunner::new(exe);
            let shell = runner.command_shell().clone();
            (
                runner.sandbox_support(),
                runner.residual_risks(),
                Some(shell),
                Some(runner.unix_socket_confinement()),
            )
        }
        Err(e) => (
            ferrite_core::exec::SandboxSupport {
                filesystem: false,
                network: false,
                summary: format!("cannot locate the ferrite binary ({e})"),
            },
            vec![],
            None,
            None,
        ),
    };
    match shell {
        Some(ferrite_exec::CommandShell {
            path,
            kind: ferrite_core::exec::Shell::Bash,
        }) => writeln!(out, "commands run with: {} -c", path.display())?,
        Some(ferrite_exec::CommandShell {
            path,
            kind: ferrite_core::exec::Shell::Sh,
        }) => writeln!(
            out,
            "commands run with: {} -c — no bash found, so allow rules for commands match \
             nothing (every command asks) and deny rules refuse what `sh` reads differently \
             from bash; install bash to use them (docs/permissions.md)",
            path.display()
        )?,
        None => {}
    }
    writeln!(out, "sandbox: {}", support.summary)?;
    if let Some(sockets) = sockets {
        writeln!(out, "unix sockets: {sockets}")?;
    }
    if !risks.is_empty() {
        writeln!(out, "  not guaranteed here (see docs/sandbox.md):")?;
        for risk in &risks {
            writeln!(out, "  - {risk}")?;
        }
    }
    if !support.filesystem {
        writeln!(
            out,
            "  commands in `auto` and `plan` mode will be refused; `ask` runs them unsandboxed after approval"
        )?;
    }
    Ok(())
}

/// What the workspace of `cwd` brings (hooks, with the user's; agents, with the user's) as a
/// turn there would find them, without the session's deny rules (`doctor` and `trust` only list
/// them), and what the user trusted there. Here, not in `core::trust`: trust is what hooks and
/// agents are checked against, so it cannot gather them itself.
fn extensions_of(
    home: &Path,
    config: &Config,
    cwd: &Path,
    user_home: Option<&Path>,
) -> (Hooks, Agents, Approved) {
    let approved = ferrite_core::trust::approved(home, cwd);
    let roots = [cwd.to_owned()];
    let own = OwnFiles::new(home, &roots, Ok(Default::default())).with_user_home(user_home);
    let hooks = ferrite_core::hooks::table::load(&config.hooks, &own, cwd, &approved);
    let agents = ferrite_core::agents::discover(&own, cwd, &approved);
    (hooks, agents, approved)
}

/// The remote MCP servers of config and whether a sign-in is stored for them (no network: a
/// server that needs none is fine without; one that does says so when a session starts).
fn write_remote_mcp(out: &mut impl Write, home: &Path, config: &Config) -> anyhow::Result<()> {
    let remote: Vec<(&String, &String)> = config
        .mcp_servers
        .iter()
        .filter_map(|(name, s)| s.url.as_ref().map(|url| (name, url)))
        .collect();
    if remote.is_empty() {
        return Ok(());
    }
    writeln!(out, "remote MCP servers:")?;
    let dir = ferrite_mcp::OAuthConfig::new(home).dir;
    for (name, url) in remote {
        let file = ferrite_mcp::oauth::TokenFile::new(&dir, url);
        let state = if file.read().is_some() {
            format!(
                "OAuth sign-in stored ({}); `ferrite mcp logout {name}` forgets it",
                file.path().display()
            )
        } else {
            format!("no OAuth sign-in stored; if it asks for one: `ferrite mcp login {name}`")
        };
        writeln!(out, "  {name:<12} {url}  [{state}]")?;
    }
    Ok(())
}

/// The hooks a session here would have, and the repository's that wait for trust.
fn write_hooks(
    out: &mut impl Write,
    home: &Path,
    env: &Env,
    config: &Config,
    cwd: &Path,
) -> std::io::Result<()> {
    let (hooks, agents, approved) = extensions_of(home, config, cwd, env.home());
    let ws = ferrite_core::trust::workspace_of(cwd);
    let trust = if approved.folder {
        "trusted"
    } else {
        "not trusted"
    };
    writeln!(out, "workspace: {} ({trust})", ws.display())?;
    if hooks.active.is_empty() && hooks.inert.is_empty() {
        writeln!(out, "hooks: none")?;
    }
    for h in &hooks.active {
        writeln!(out, "hook: {}", hook_terminal(h))?;
    }
    for h in &hooks.inert {
        writeln!(
            out,
            "hook NOT RUN (not trusted as it is now; `ferrite trust` turns it on): {}",
            hook_terminal(h)
        )?;
    }
    for p in &hooks.problems {
        writeln!(out, "  warning: {}", visible(p))?;
    }
    for a in &agents.active {
        writeln!(out, "agent: {} ({})", visible(&a.name), shown_path(&a.file))?;
    }
    for a in &agents.inert {
        writeln!(
            out,
            "agent NOT USED (not trusted as it is now; `ferrite trust` turns it on): {} ({})",
            visible(&a.name),
            shown_path(&a.file)
        )?;
    }
    Ok(())
}

fn shown_path(path: &Path) -> String {
    visible(&path.to_string_lossy()).into_owned()
}

/// `ferrite trust [DIR]`: what the folder brings that would run, then trusts it.
pub fn trust(home: &Path, env: &Env, dir: Option<std::path::PathBuf>) -> anyhow::Result<ExitCode> {
    let dir = match dir {
        Some(d) => d,
        None => std::env::current_dir()?,
    };
    let dir = dir
        .canonicalize()
        .map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
    let config = Config::load(home, Some(&dir))?;
    let (hooks, agents, _) = extensions_of(home, &config, &dir, env.home());
    // Trust covers these hooks and agents as they are now; one added or changed later is asked
    // about again.
    let project = ferrite_core::hooks::Origin::Project;
    let project_hooks: Vec<_> = (hooks.inert.iter().chain(&hooks.active))
        .filter(|h| h.origin == project)
        .collect();
    let project_agents: Vec<_> = (agents.inert.iter().chain(&agents.active))
        .filter(|a| a.origin == project)
        .collect();
    let mut out = std::io::stdout().lock();
    for h in project_hooks.iter().filter(|h| h.unverifiable().is_some()) {
        writeln!(
            out,
            "  left off (a file it runs cannot be checked): {}",
            hook_terminal(h)
        )?;
    }
    let project_hooks: Vec<_> = project_hooks
        .into_iter()
        .filter(|h| h.unverifiable().is_none())
        .collect();
    let fingerprints = (project_hooks.iter().map(|h| h.fingerprint()))
        .chain(project_agents.iter().map(|a| a.fingerprint()));
    let files = project_hooks
        .iter()
        .flat_map(|h| &h.runs)
        .map(|r| (r.path.clone(), r.digest.as_record()));
    let ws = ferrite_core::trust::trust(home, &dir, fingerprints, files)?;
    writeln!(out, "Trusted {}.", shown_path(&ws))?;
    for h in project_hooks {
        writeln!(out, "  now on: {}", hook_terminal(h))?;
        for r in &h.runs {
            writeln!(out, "        runs {}", shown_path(&r.path))?;
        }
    }
    for a in project_agents {
        writeln!(
            out,
            "  now on: agent {} ({})",
            visible(&a.name),
            shown_path(&a.file)
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
