//! What happens when the sandbox a mode asks for cannot be enforced on this machine
//! (`docs/sandbox.md`): `ask` warns once per session and runs the command unsandboxed (the user approves every
//! command there anyway); `auto` and `plan` refuse, saying why and how to choose `full`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::events::Event;
use crate::exec::{
    CommandOutput, CommandRunner, CommandSpec, ExecError, Sandbox, SandboxSupport, Shell,
};
use crate::git_guard::GitGuard;
use crate::modes::Mode;
use crate::session::Recorder;

/// A turn's command runner, built once per turn.
pub(crate) struct TurnRunner {
    pub inner: Arc<dyn CommandRunner>,
    /// Key variables commands must not inherit (see `exec::secret_env_names`).
    pub env_remove: Vec<String>,
    /// Set once the session was told it runs unsandboxed.
    pub warned: Arc<AtomicBool>,
    /// Where the warning goes.
    pub rec: Recorder,
    /// Each command holds a share of it while it runs (`crate::clientfs::CommandGate`).
    pub gate: crate::clientfs::CommandGate,
    /// The session's budget for spilled output (`tools.spill_max_bytes`).
    pub spill_budget: crate::spill_budget::SpillBudget,
    /// What git runs and the `.git` folders, put back after a command below `full`
    /// (`crate::git_guard`).
    pub git_guarded: (Vec<std::path::PathBuf>, Vec<std::path::PathBuf>),
}

/// The turn's runner for one call, in the mode that call runs in.
pub(crate) struct ModeAwareRunner {
    pub turn: Arc<TurnRunner>,
    pub mode: Mode,
}

impl CommandRunner for ModeAwareRunner {
    fn run<'a>(
        &'a self,
        spec: CommandSpec,
        cancel: CancellationToken,
        on_output: &'a (dyn Fn(&str) + Send + Sync),
    ) -> BoxFuture<'a, Result<CommandOutput, ExecError>> {
        let turn = &self.turn;
        let mut spec = spec;
        spec.env_remove.extend(turn.env_remove.iter().cloned());
        if spec.spill_budget.is_none() {
            spec.spill_budget = Some(turn.spill_budget.clone());
        }
        Box::pin(async move {
            // Held until the command (and a background one is a command) has ended: no write
            // goes through the editor meanwhile.
            let _running = turn.gate.command().await;
            let guard = (self.mode < Mode::Full)
                .then(|| GitGuard::take(&turn.git_guarded.0, &turn.git_guarded.1))
                .flatten();
            let ran = self.run_sandboxed(spec, cancel, on_output).await;
            match guard.map(|g| g.restore()).filter(|r| !r.is_empty()) {
                Some(restored) => self.tell(ran, &restored).await,
                None => ran,
            }
        })
    }

    fn sandbox_support(&self) -> SandboxSupport {
        self.turn.inner.sandbox_support()
    }

    fn shell(&self) -> Shell {
        self.turn.inner.shell()
    }
}

impl ModeAwareRunner {
    /// A command changed what git runs and it was put back: the model reads it after the
    /// output, the user as a notice.
    async fn tell(
        &self,
        ran: Result<CommandOutput, ExecError>,
        restored: &crate::git_guard::Restored,
    ) -> Result<CommandOutput, ExecError> {
        let text = restored.text();
        tracing::warn!(put_back = ?restored.put_back, failed = ?restored.failed, "a command changed what git runs");
        self.turn
            .rec
            .emit(Event::Notice { text: text.clone() })
            .await;
        ran.map(|mut out| {
            out.excerpt.push_str(&format!("\n{text}"));
            out
        })
    }

    /// Runs `spec` in the mode's sandbox, or says why it cannot (`ask` runs it unsandboxed after
    /// warning once).
    async fn run_sandboxed(
        &self,
        spec: CommandSpec,
        cancel: CancellationToken,
        on_output: &(dyn Fn(&str) + Send + Sync),
    ) -> Result<CommandOutput, ExecError> {
        let turn = &self.turn;
        {
            let first = turn
                .inner
                .run(spec.clone(), cancel.clone(), on_output)
                .await;
            let why = match first {
                Err(ExecError::SandboxUnavailable(why)) => why,
                other => return other,
            };
            match self.mode {
                Mode::Ask => {
                    if !turn.warned.swap(true, Ordering::Relaxed) {
                        let text = format!(
                            "Commands run without a sandbox in this session: {why}. Each command still needs your approval in ask mode."
                        );
                        turn.rec.emit(Event::Notice { text }).await;
                    }
                    let spec = CommandSpec {
                        sandbox: Sandbox::None,
                        ..spec
                    };
                    turn.inner.run(spec, cancel, on_output).await
                }
                Mode::Plan | Mode::Auto | Mode::Full => {
                    Err(ExecError::SandboxUnavailable(format!(
                        "Refused: {why}. In `{}` mode commands only run sandboxed. Switch the session to `full` mode \
                     (no sandbox, no questions) or `ask` mode (approve each command) to run it.",
                        self.mode
                    )))
                }
            }
        }
    }
}
