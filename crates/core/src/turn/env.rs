//! What every tool call of a turn shares, built once when the turn starts: the tools, the
//! workspace, the rules, who to ask, and the parts of each call's [`ToolContext`] (limits,
//! spill directory, the sandboxing runner, the editor's file system, the web).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::catalog::Catalog;
use crate::checkpointing::TurnCheckpoint;
use crate::config::{Config, FsDelegation};
use crate::exec::{CommandRunner, Sandbox, Shell};
use crate::model::ToolSpec;
use crate::modes::{Harness, Mode};
use crate::permissions::Approver;
use crate::protected::Protected;
use crate::services::Services;
use crate::session::{Recorder, TurnStart};
use crate::tools::{OutputLimits, ReadDeny, ToolContext, ToolRegistry};

use super::resolve::SubagentModel;
use super::resolve::TurnRules;
use super::sandbox::{ModeAwareRunner, TurnRunner};

/// What every tool call of a turn shares.
pub(crate) struct CallEnv {
    pub tools: ToolRegistry,
    pub cwd: PathBuf,
    pub roots: Vec<PathBuf>,
    /// The shell the turn's commands run with (the permission rules read them with its
    /// grammar); `sh` when there is no runner.
    pub shell: Shell,
    pub home: PathBuf,
    pub harness: Harness,
    /// FERRITE_HOME, which tools may not change and read only with the user's consent.
    pub protected: Protected,
    /// Shared with the turn's subagents: an "always" answer to one holds for all.
    pub rules: Arc<TurnRules>,
    /// `_meta.permission_mode = "ask"` for this turn.
    pub force_ask: bool,
    /// A command that may only look (`/review`): the turn runs as in `plan` mode.
    pub read_only: bool,
    pub permission_timeout: Duration,
    pub approver: Option<Arc<dyn Approver>>,
    /// The session's mode ceiling (harness and `max_mode`).
    pub ceiling: Mode,
    pub catalog: Arc<Catalog>,
    /// Keeps what the turn's tools are about to change, for `/undo`.
    pub checkpoint: Option<TurnCheckpoint>,
    /// The model `task` subagents use; `None` where there is none (no `task` tool offered).
    pub subagent: Option<SubagentModel>,
    /// How many `task` calls of one response run at once (`subagent.max_parallel`).
    pub subagent_parallel: usize,
    /// The parts of every call's context.
    pub base: ToolBase,
    /// The hooks that run in this turn (`crate::hooks`).
    pub hooks: Arc<crate::hooks::Hooks>,
    /// The custom agents `task` may hand work to (`crate::agents`).
    pub agents: Arc<Vec<crate::agents::AgentDef>>,
    /// The models of the agents that name one (resolved when the turn starts).
    pub agent_models: Vec<(String, SubagentModel)>,
    /// The session log's path (`transcript_path` of hook events).
    pub transcript: PathBuf,
    /// Where subagents' sessions are written.
    pub store: crate::log::SessionStore,
    /// The subagent sessions running in the process.
    pub children: Arc<crate::children::Children>,
    /// `compaction_threshold` of config (a subagent's turn compacts by it too).
    pub compaction_threshold: f64,
    /// Runs a subagent's turn: the turn's own request loop, handed down so that `task` does not
    /// depend on the module that depends on it.
    pub child_turn: Option<ChildTurn>,
}

/// How a turn's request loop is bounded.
#[derive(Clone, Copy)]
pub(crate) struct Limits {
    pub max_requests: u32,
    pub compaction_threshold: f64,
    /// The hook event of the model's stopping (`Stop`, `SubagentStop` for a subagent).
    pub stop_event: crate::hooks::HookEvent,
    /// The last request offers no tools (a subagent must answer).
    pub answer_last: bool,
}

impl Limits {
    /// A user's turn: the config's limits; the model's stopping is `Stop`.
    pub fn of_turn(config: &crate::config::Config) -> Self {
        Self {
            max_requests: config.max_turn_requests,
            compaction_threshold: config.compaction_threshold,
            stop_event: crate::hooks::HookEvent::Stop,
            answer_last: false,
        }
    }
}

/// What a subagent's turn runs with.
pub(crate) struct ChildRun<'a> {
    pub rec: &'a Recorder,
    pub model: &'a super::resolve::TurnModel,
    pub env: &'a CallEnv,
    pub system: &'a str,
    pub limits: Limits,
    /// What the user sends the subagent while it works.
    pub inbox: &'a crate::steering::Inbox,
    pub cancel: &'a CancellationToken,
}

pub(crate) type ChildTurn = for<'a> fn(
    ChildRun<'a>,
) -> futures::future::BoxFuture<
    'a,
    Result<crate::events::TurnOutcome, crate::log::StoreError>,
>;

/// What a call's [`ToolContext`] is made of, apart from the call itself.
#[derive(Clone)]
pub(crate) struct ToolBase {
    pub limits: OutputLimits,
    pub spill_dir: PathBuf,
    /// The turn's runner; each call gets it with the mode the call runs in.
    pub runner: Option<Arc<TurnRunner>>,
    pub bash_timeout: Duration,
    pub sandbox_network: bool,
    /// `sandbox.deny_read` with `~` expanded: hidden from commands.
    pub deny_read: Vec<PathBuf>,
    /// `sandbox.allow_unix_sockets` with `~` expanded: connectable by commands.
    pub unix_sockets: Vec<PathBuf>,
    pub client_fs: Option<Arc<dyn crate::clientfs::ClientFs>>,
    pub fs_delegation: FsDelegation,
    /// The session's: every command holds a share, a write through the editor all of it.
    pub command_gate: crate::clientfs::CommandGate,
    pub web: Option<Arc<dyn crate::web::WebFetch>>,
    pub web_reach: crate::web::Reach,
    /// Whether the turn's model takes images.
    pub model_images: bool,
    pub image_decodes: crate::tools::DecodeGate,
    pub background: crate::background::BackgroundJobs,
    pub max_background: usize,
    pub skills: Arc<Vec<crate::skills::Skill>>,
    pub user_home: Option<PathBuf>,
    pub elicitor: Option<Arc<dyn crate::elicit::Elicitor>>,
    /// The session's language servers, what they may do but the sandbox (which is the call's
    /// mode's), and the turn's budget for their diagnostics.
    pub lsp: Option<LspBase>,
}

#[derive(Clone)]
pub(crate) struct LspBase {
    pub servers: Arc<dyn crate::lsp::LanguageServers>,
    pub config: Arc<crate::config::LspConfig>,
    pub trusted: bool,
    pub env_remove: Vec<String>,
    pub budget: crate::lsp::Budget,
}

/// The parts of a [`CallEnv`] that come from the turn's settings.
pub(super) struct EnvParts<'a> {
    pub services: &'a Services,
    pub rec: &'a Recorder,
    pub config: &'a Config,
    pub start: &'a TurnStart,
    pub rules: TurnRules,
    pub catalog: Arc<Catalog>,
    pub force_ask: bool,
    pub model_images: bool,
    pub background: crate::background::BackgroundJobs,
    pub lsp: Option<Arc<dyn crate::lsp::LanguageServers>>,
    pub skills: Arc<Vec<crate::skills::Skill>>,
    pub hooks: Arc<crate::hooks::Hooks>,
    pub agents: Arc<Vec<crate::agents::AgentDef>>,
}

/// What every tool call of the turn gets: limits, where output spills, the runner, the ports.
fn tool_base(p: &EnvParts<'_>, spill_dir: PathBuf, runner: Option<Arc<TurnRunner>>) -> ToolBase {
    let (services, config, start) = (p.services, p.config, p.start);
    ToolBase {
        limits: OutputLimits {
            max_bytes: config.tools.output_max_bytes,
            max_lines: config.tools.output_max_lines,
        },
        spill_dir,
        runner,
        bash_timeout: Duration::from_secs(config.tools.bash_timeout_secs),
        background: p.background.clone(),
        max_background: config.tools.max_background_commands,
        skills: p.skills.clone(),
        user_home: services.env.home().map(Path::to_path_buf),
        sandbox_network: config.sandbox_network,
        deny_read: config.deny_read_paths(services.env.home()),
        unix_sockets: config.allowed_unix_socket_paths(services.env.home()),
        client_fs: services.client_fs.get().cloned(),
        elicitor: services.elicitor.get().cloned(),
        fs_delegation: config.fs_delegation,
        command_gate: start.command_gate.clone(),
        web: services.web.clone(),
        web_reach: if config.web_fetch_allow_private {
            crate::web::Reach::Anywhere
        } else {
            crate::web::Reach::PublicOnly
        },
        model_images: p.model_images,
        image_decodes: services.image_decodes.clone(),
        lsp: p.lsp.clone().map(|servers| LspBase {
            servers,
            config: Arc::new(config.lsp.clone()),
            trusted: crate::trust::approved(&services.home, &start.cwd).folder,
            env_remove: crate::exec::secret_env_names(config),
            budget: crate::lsp::Budget::per_turn(),
        }),
    }
}

/// The workspace files the project's hooks of this turn run (protected like their settings).
fn hook_files(hooks: &crate::hooks::Hooks) -> Vec<PathBuf> {
    hooks
        .active
        .iter()
        .flat_map(|h| &h.runs)
        .map(|r| r.path.clone())
        .collect()
}

impl CallEnv {
    /// The policy for the instruction files a call's paths bring in, under the rules in force
    /// now (a "reject always" answer of this turn included).
    pub fn own_files(&self) -> crate::own_files::OwnFiles {
        crate::own_files::OwnFiles::new(&self.home, &self.roots, self.rules.in_force())
    }

    pub(super) fn new(p: EnvParts<'_>) -> Self {
        let EnvParts {
            services,
            rec,
            config,
            start,
            ..
        } = p;
        let spill_dir = services
            .store
            .dir()
            .join(rec.session_id().as_str())
            .join("tool-output");
        let protected = Protected::new(&services.home, &spill_dir)
            .with_user_home(services.env.home())
            .with_workspace(&start.roots, &start.cwd, &hook_files(&p.hooks));
        let (git_files, dot_gits) = protected.git_guarded();
        let runner = services.runner.clone().map(|inner| {
            Arc::new(TurnRunner {
                inner,
                env_remove: crate::exec::secret_env_names(config),
                warned: start.sandbox_warned.clone(),
                gate: start.command_gate.clone(),
                rec: rec.clone(),
                spill_budget: p
                    .background
                    .spill_budget(&spill_dir, config.tools.spill_max_bytes),
                git_guarded: (git_files.to_vec(), dot_gits.to_vec()),
            })
        });
        let base = tool_base(&p, spill_dir, runner);
        Self {
            tools: crate::tools::registry_for(start.harness),
            cwd: start.cwd.clone(),
            roots: start.roots.clone(),
            shell: services.runner.as_ref().map_or(Shell::Sh, |r| r.shell()),
            home: services.home.clone(),
            harness: start.harness,
            protected,
            rules: Arc::new(p.rules),
            force_ask: p.force_ask,
            read_only: false,
            permission_timeout: Duration::from_secs(config.permissions.timeout_secs),
            approver: services.approver.get().cloned(),
            ceiling: crate::session_view::ceiling(config, start.harness),
            catalog: p.catalog,
            checkpoint: None,
            subagent: None,
            subagent_parallel: config.subagent.max_parallel,
            hooks: p.hooks.clone(),
            agents: p.agents.clone(),
            agent_models: vec![],
            transcript: services.store.path(rec.session_id()),
            store: services.store.clone(),
            children: services.children.clone(),
            compaction_threshold: config.compaction_threshold,
            child_turn: None,
            base,
        }
    }

    /// The environment of a subagent's calls: this turn's, with only the tools in `allowed`,
    /// no subagents of its own, and `transcript` for its hooks.
    pub fn for_child(&self, allowed: &[String], transcript: PathBuf) -> CallEnv {
        let mut tools = self.tools.clone();
        tools.retain(allowed);
        CallEnv {
            tools,
            cwd: self.cwd.clone(),
            roots: self.roots.clone(),
            shell: self.shell,
            home: self.home.clone(),
            harness: self.harness,
            protected: self.protected.clone(),
            rules: self.rules.clone(),
            force_ask: self.force_ask,
            read_only: self.read_only,
            permission_timeout: self.permission_timeout,
            approver: self.approver.clone(),
            ceiling: self.ceiling,
            catalog: self.catalog.clone(),
            checkpoint: self.checkpoint.clone(),
            subagent: None,
            subagent_parallel: 1,
            base: self.base.clone(),
            hooks: self.hooks.clone(),
            agents: Arc::new(vec![]),
            agent_models: vec![],
            transcript,
            store: self.store.clone(),
            children: self.children.clone(),
            compaction_threshold: self.compaction_threshold,
            child_turn: None,
        }
    }

    /// The mode this turn's calls run in: the session's now (the editor or an approved
    /// `exit_plan` may change it mid-turn), capped at `plan` for a read-only command (`/review`).
    pub fn mode(&self, rec: &Recorder) -> Mode {
        let mode = rec.mode();
        if self.read_only {
            mode.min(Mode::Plan)
        } else {
            mode
        }
    }

    /// The tools offered to the model for the next request.
    /// (`task` is not among them: `subagent::offered` adds it.) `bash_output` and `bash_kill`
    /// only once the session has a background command: before that they cannot be used, and
    /// every request would pay for their definitions.
    pub fn specs(&self, rec: &Recorder) -> Vec<ToolSpec> {
        let mut specs = self.tools.specs_in(self.mode(rec));
        if !self.base.background.any() {
            use crate::tools::{BASH_KILL, BASH_OUTPUT};
            specs.retain(|s| s.name != BASH_OUTPUT && s.name != BASH_KILL);
        }
        // `diagnostics` only where a language server can run.
        if !self
            .base
            .lsp
            .as_ref()
            .is_some_and(|l| l.servers.can_run(&l.config, l.trusted, &self.roots))
        {
            specs.retain(|s| s.name != crate::tools::DIAGNOSTICS);
        }
        specs
    }

    /// What a tool may use for call `id`, running in `mode`: the turn's shared parts, the
    /// sandbox of `mode`, and the rules in force now.
    pub fn tool_context<'a>(
        &self,
        rec: &'a Recorder,
        id: &str,
        mode: Mode,
        cancel: &CancellationToken,
    ) -> ToolContext<'a> {
        let base = &self.base;
        let sandbox = Sandbox::for_mode(
            mode,
            &self.roots,
            (&self.home, &self.protected.sandbox_paths()),
            &base.deny_read,
            base.sandbox_network,
        )
        .allowing_unix_sockets(base.unix_sockets.clone());
        ToolContext {
            lsp: base.lsp.as_ref().map(|l| crate::lsp::LspCall {
                servers: l.servers.clone(),
                scope: crate::lsp::LspScope {
                    roots: self.roots.clone(),
                    sandbox: crate::lsp::server_sandbox(&sandbox),
                    trusted: l.trusted,
                    config: l.config.clone(),
                    env_remove: l.env_remove.clone(),
                },
                budget: l.budget.clone(),
            }),
            cwd: self.cwd.clone(),
            roots: self.roots.clone(),
            call_id: id.to_owned(),
            cancel: cancel.child_token(),
            recorder: rec,
            limits: base.limits,
            spill_dir: base.spill_dir.clone(),
            runner: base
                .runner
                .clone()
                .map(|turn| -> Arc<dyn CommandRunner> { Arc::new(ModeAwareRunner { turn, mode }) }),
            sandbox,
            bash_timeout: base.bash_timeout,
            client_fs: base.client_fs.clone(),
            fs_delegation: base.fs_delegation,
            command_gate: base.command_gate.clone(),
            web: base.web.clone(),
            web_reach: base.web_reach,
            model_images: base.model_images,
            image_decodes: base.image_decodes.clone(),
            background: base.background.clone(),
            max_background: base.max_background,
            skills: base.skills.clone(),
            own_files: self.own_files().with_user_home(base.user_home.as_deref()),
            elicitor: base.elicitor.clone(),
            read_deny: ReadDeny::new(
                // A call whose rules cannot be used was refused before it got here.
                self.rules.in_force().unwrap_or_default(),
                self.roots.clone(),
                (mode < Mode::Full).then(|| self.protected.clone()),
            ),
        }
    }
}
