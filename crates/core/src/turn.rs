//! The turn: send the conversation to the model, stream its answer to the editor, run the tools
//! it calls, feed the results back, until the model stops or `max_turn_requests`.
//!
//! This file only sequences the stages, each in its own module with one job:
//! [`intake`] (the prompt expanded, recorded, the session named) → [`resolve`] (the turn's
//! settings, read once) → [`compact`] when asked or due → then per model request
//! [`stream`] (one model call) → [`dispatch`] (the response's tool calls).

mod ask;
mod call;
mod compact;
mod dispatch;
mod env;
mod exit_plan;
mod hooks;
mod intake;
mod mcp_intake;
mod model_call;
mod permission;
mod resolve;
mod sandbox;
mod stream;
mod subagent;
mod trust_ask;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::checkpointing::TurnCheckpoint;
use crate::content::UserContent;
use crate::events::{TurnOptions, TurnOutcome};
use crate::log::{StopReason, StoreError};
use crate::model::StopKind;
use crate::own_files::OwnFiles;
use crate::services::Services;
use crate::session::{Recorder, TurnStart};
use crate::steering::Inbox;

use env::{CallEnv, ChildRun, EnvParts, Limits};
use resolve::TurnModel;
use stream::Streamed;

pub(crate) struct TurnRequest {
    pub content: Vec<UserContent>,
    pub options: TurnOptions,
    /// Steering messages for this turn (`crate::steering`).
    pub inbox: Inbox,
    /// The session's background commands (they outlive the turn).
    pub background: crate::background::BackgroundJobs,
    /// The session's language servers (they outlive the turn).
    pub lsp: Option<Arc<dyn crate::lsp::LanguageServers>>,
}

/// Runs one turn to its outcome. The caller records `TurnEnd`, syncs and emits `TurnEnded`.
pub(crate) async fn run_turn(
    services: Arc<Services>,
    rec: Recorder,
    req: TurnRequest,
    cancel: CancellationToken,
) -> TurnOutcome {
    let checkpoint = TurnCheckpoint::new(&services.home, rec.session_id());
    let inbox = req.inbox.clone();
    let staged = match req.options.rewind.clone() {
        Some(to) => rewind_only(&services, &rec, &to, &cancel).await,
        None => run_stages(&services, &rec, req, &cancel, &checkpoint).await,
    };
    let mut outcome = match staged {
        Ok(outcome) => outcome,
        // A log that cannot be written ends the turn: what the editor would see could not be
        // replayed.
        Err(e) => call::log_failed(&e.to_string()),
    };
    // Steering messages the turn never took (it was cancelled or failed first) are the user's
    // words all the same: recorded, so the next turn's model sees them.
    let roots = rec.start().roots;
    if let Err(e) = take_steering(&rec, &roots, inbox.close()).await {
        outcome = call::log_failed(&e.to_string());
    }
    checkpoint.finish_turn(&rec).await;
    outcome
}

/// What reaches a running turn from outside it between model requests.
struct Steering<'a> {
    inbox: &'a Inbox,
    roots: &'a [std::path::PathBuf],
    background: &'a crate::background::BackgroundJobs,
}

/// Background commands that ended since the last request: the model is told in the
/// conversation (a note in the user's turn, logged, naming the command by its id), the user by a
/// notice unless an idle session showed it already (`crate::runtime`).
async fn tell_ended(
    rec: &Recorder,
    background: &crate::background::BackgroundJobs,
) -> Result<(), StoreError> {
    for ended in background.take_ended() {
        // The id only, never the command: the model wrote that text, and this note stands in
        // the user's turn (and is replayed as the user's).
        let note = format!(
            "[Ferrite: the background command {} {}; bash_output shows what it wrote since the \
             last read.]",
            ended.id, ended.how
        );
        rec.record(crate::log::EntryKind::UserMessage {
            id: None,
            content: vec![UserContent::Text {
                text: note.as_str().into(),
            }],
        })?;
        if !ended.shown {
            rec.emit(ended_notice(&ended)).await;
        }
    }
    Ok(())
}

/// What the user is shown of a background command's end: news when it exited with code 0,
/// a warning otherwise.
pub(crate) fn ended_notice(ended: &crate::background::Ended) -> crate::events::Event {
    let text = format!(
        "Background command {} (`{}`) {}.",
        ended.id, ended.command, ended.how
    );
    match ended.ok {
        true => crate::events::Event::Info { text },
        false => crate::events::Event::Notice { text },
    }
}

/// Records steering messages in the conversation, each as the user's message, and shows them.
async fn take_steering(
    rec: &Recorder,
    roots: &[std::path::PathBuf],
    messages: Vec<Vec<UserContent>>,
) -> Result<(), StoreError> {
    for content in messages {
        let content = crate::attachments::expand_links(content, roots);
        let id = Some(ferrite_store::ids::new_message_id());
        rec.record(crate::log::EntryKind::UserMessage {
            id: id.clone(),
            content: content.clone(),
        })?;
        rec.emit(crate::events::Event::UserMessage {
            message_id: id,
            content,
        })
        .await;
    }
    Ok(())
}

/// A stage's verdict: go on with the value, or the turn ends with this outcome.
type Stage<T> = Result<T, TurnOutcome>;

async fn run_stages(
    services: &Services,
    rec: &Recorder,
    req: TurnRequest,
    cancel: &CancellationToken,
    checkpoint: &TurnCheckpoint,
) -> Result<TurnOutcome, StoreError> {
    let start = rec.start();
    // Read before the prompt is taken in: a prompt file is read under the turn's deny rules.
    let settings = resolve::settings(&services.home, &start.cwd);
    let deny = match &settings {
        Ok(s) => s.rules.in_force(),
        Err(_) => Err("the config or the permission rules could not be read".into()),
    };
    let own = OwnFiles::new(&services.home, &start.roots, deny).with_user_home(services.env.home());
    // The prompt is read once: what it invokes, against the skills found once for the turn.
    let skills = Arc::new(crate::skills::discover(&own, &start.cwd));
    let invoked = crate::commands::Invoked::read(&req.content, &own, &start.cwd, &skills);
    let intake = match take_in(rec, &start, (&invoked, &skills), &req.content, cancel).await? {
        Ok(intake) => intake,
        Err(outcome) => return Ok(outcome),
    };
    let resolve::Settings { config, rules } = match settings {
        Ok(s) => s,
        Err(outcome) => return Ok(outcome),
    };
    if let Some(command) = intake.checkpoint_command {
        let roots = start.roots.clone();
        let run =
            crate::checkpointing::command::run(services, rec, &config, roots, command, cancel);
        return Ok(TurnOutcome::ended(run.await?));
    }
    checkpoint.configure(rec, start.roots.clone(), config.checkpoints);
    // `/name` of a skill with `allowed-tools`: the turn keeps only those of its tools.
    let narrowed = invoked.skill(&skills).and_then(|s| s.allowed_tools.clone());
    let model = match resolve::model(services, &config, &start, &req.options) {
        Ok(m) => m,
        Err(outcome) => return Ok(outcome),
    };
    tell_of_unsent_images(rec, &req, &model).await;
    let extensions = trust_ask::for_turn(services, rec, &config, &own, &start, cancel).await;
    let parts = EnvParts {
        services,
        rec,
        config: &config,
        start: &start,
        rules,
        catalog: model.catalog.clone(),
        force_ask: req.options.force_ask,
        model_images: model.info.images,
        background: req.background.clone(),
        lsp: req.lsp.clone(),
        skills: skills.clone(),
        hooks: Arc::new(extensions.hooks),
        agents: Arc::new(extensions.agents.active),
    };
    let read_only = invoked.read_only();
    let mut env = match call_env(parts, read_only, &model, checkpoint, cancel).await {
        Ok(env) => env,
        Err(outcome) => return Ok(outcome),
    };
    add_turn_tools(&mut env, &skills);
    if let Some(keep) = narrowed {
        keep_only(&mut env, &keep);
    }
    let system = system_prompt(&own, &start, &skills, &mut env);
    if let Some(extra) = intake.compact {
        return compact::on_request(rec, &model, cancel, &extra).await;
    }
    if let Some(outcome) = hooks::before_prompt(rec, &env, &start, &req.content, cancel).await? {
        return Ok(outcome);
    }
    let steering = Steering {
        inbox: &req.inbox,
        roots: start.roots.as_slice(),
        background: &req.background,
    };
    let limits = Limits::of_turn(&config);
    request_loop(rec, &model, &env, &system, limits, steering, cancel).await
}

/// `_session/rewind`: a turn without a prompt or the model (`checkpointing::rewind`).
async fn rewind_only(
    services: &Services,
    rec: &Recorder,
    to: &crate::events::RewindTo,
    cancel: &CancellationToken,
) -> Result<TurnOutcome, StoreError> {
    let start = rec.start();
    let config = match resolve::settings(&services.home, &start.cwd) {
        Ok(s) => s.config,
        Err(outcome) => return Ok(outcome),
    };
    let roots = start.roots.clone();
    crate::checkpointing::command::rewind_to(services, rec, &config, roots, to, cancel).await
}

/// The prompt taken in: its MCP resources expanded, logged, the session named; `/title TEXT`
/// is answered here (the turn ends without the model).
async fn take_in(
    rec: &Recorder,
    start: &TurnStart,
    (invoked, skills): (&crate::commands::Invoked, &[crate::skills::Skill]),
    content: &[UserContent],
    cancel: &CancellationToken,
) -> Result<Stage<intake::Intake>, StoreError> {
    let expanded = match mcp_intake::expand(rec, start, invoked, content, cancel).await? {
        Ok(expanded) => expanded,
        Err(outcome) => return Ok(Err(outcome)),
    };
    let intake = intake::record_prompt((invoked, skills), rec, &expanded, start)?;
    if let Some(message_id) = intake.message_id.clone() {
        rec.emit(crate::events::Event::MessageRecorded { message_id })
            .await;
    }
    intake::name_session(rec, content, start, &intake).await?;
    if let Some(text) = &intake.title {
        intake::retitle(rec, text).await?;
        return Ok(Err(TurnOutcome::ended(StopReason::EndTurn)));
    }
    Ok(Ok(intake))
}

/// The model does not take images: it is told in the request, and the user must hear it too.
async fn tell_of_unsent_images(rec: &Recorder, req: &TurnRequest, model: &TurnModel) {
    let attached = req
        .content
        .iter()
        .any(|c| matches!(c, crate::content::UserContent::Image { .. }));
    if attached && !model.info.images {
        let text = format!(
            "{} does not take images, so the attached image is not sent to it (the model is told \
             it was left out). Choose a model that takes images to have it looked at.",
            model.info.id
        );
        rec.emit(crate::events::Event::Notice { text }).await;
    }
}

/// The tools only a turn has: `skill` where there are skills, `ask_user` only where the editor
/// can show a question (and the session has the tools to act on the answer).
fn add_turn_tools(env: &mut CallEnv, skills: &Arc<Vec<crate::skills::Skill>>) {
    if !skills.is_empty() {
        env.tools
            .add(Arc::new(crate::tools::SkillTool::new(skills.clone())));
    }
    if env.base.elicitor.as_ref().is_some_and(|e| e.available()) && env.tools.get("read").is_some()
    {
        env.tools.add(Arc::new(crate::tools::AskUserTool));
    }
}

/// Narrows the turn's tools to `keep` (a skill's `allowed-tools`, an agent's `tools`): never
/// wider than the session, so tools it does not have stay out whatever is named.
fn keep_only(env: &mut CallEnv, keep: &[String]) {
    env.tools.retain(keep);
    env.subagent = env
        .subagent
        .take()
        .filter(|_| keep.iter().any(|k| k == "task"));
}

/// The turn's system prompt: Ferrite's (or the client's), the skills, and the custom agent the
/// user chose: its instructions, and only its tools.
fn system_prompt(
    own: &OwnFiles,
    start: &TurnStart,
    skills: &[crate::skills::Skill],
    env: &mut CallEnv,
) -> String {
    let mut system = crate::prompt::system_prompt(own, &start.cwd, start.client_prompt.as_ref());
    system.push_str(&crate::skills::section(skills));
    if let Some(agent) = start
        .agent
        .as_deref()
        .and_then(|n| env.agents.iter().find(|a| a.name == n))
        .cloned()
    {
        system.push_str(&format!(
            "\n\n# Working as the `{}` agent\n\n{}\n",
            agent.name, agent.prompt
        ));
        if let Some(keep) = &agent.tools {
            keep_only(env, keep);
        }
    }
    system
}

/// A subagent's turn (`subagent`): the same loop as every turn's, in the subagent's session,
/// steered by what the user sends the child, with no background commands of its own to hear
/// about (its commands' ends are its parent's to hear).
fn child_turn(
    run: ChildRun<'_>,
) -> futures::future::BoxFuture<'_, Result<TurnOutcome, StoreError>> {
    Box::pin(async move {
        let background = crate::background::BackgroundJobs::default();
        let steering = Steering {
            inbox: run.inbox,
            roots: run.env.roots.as_slice(),
            background: &background,
        };
        request_loop(
            run.rec, run.model, run.env, run.system, run.limits, steering, run.cancel,
        )
        .await
    })
}

/// Model requests (compacting first when due), each followed by its tool calls, until the model
/// stops, a stage ends the turn, or `max_turn_requests`.
async fn request_loop(
    rec: &Recorder,
    model: &TurnModel,
    env: &CallEnv,
    system: &str,
    limits: Limits,
    Steering {
        inbox,
        roots,
        background,
    }: Steering<'_>,
    cancel: &CancellationToken,
) -> Result<TurnOutcome, StoreError> {
    // Whether the editor was last shown the previous response's text: the next response's
    // text then starts a new paragraph, or the two run together (`update_plan` shows no card).
    let mut after_text = false;
    let mut stop_continues = 0;
    // Tool results recorded and not yet synced: their sync runs while the next request is
    // built and sent (a request changes nothing). The next sync (before the response's tool
    // calls run, or the turn's end) covers them too: the log is one file, appended in order.
    // A failure of theirs ends the turn before another tool call runs.
    let mut results_unsynced = false;
    for request in 0..limits.max_requests {
        // A subagent's last request offers no tools: it must answer with what it has.
        let offer_tools = !(limits.answer_last && request + 1 == limits.max_requests);
        let threshold = limits.compaction_threshold;
        // What the user sent while the last response and its tool calls ran, and the
        // background commands that ended meanwhile.
        take_steering(rec, roots, inbox.take()).await?;
        tell_ended(rec, background).await?;
        if let Err(outcome) = compact::if_due(rec, model, threshold, cancel).await? {
            return Ok(outcome);
        }
        let results_sync = match std::mem::take(&mut results_unsynced) {
            true => rec.start_sync()?,
            false => None,
        };
        let streamed =
            stream::model_call(rec, model, env, system, after_text, offer_tools, cancel).await;
        if let Some(sync) = results_sync {
            sync.done().await?;
        }
        let response = match streamed? {
            Streamed::Response(r) => r,
            Streamed::Stopped(outcome) => return Ok(outcome),
        };
        // A subagent's hooks and tool calls act for its parent's `task` call: they wait until
        // that call is durable (started below, while the child's first request went out).
        rec.calls_durable().await?;
        after_text = crate::state::ends_in_shown_text(&response.content);
        let calls = call::calls_of(&response.content);
        if calls.is_empty() {
            // A message that came while the model answered is answered in this turn.
            // (After a refusal or a cut answer it is recorded, and the turn still ends.)
            let steered = inbox.take_or_close();
            if !steered.is_empty() {
                take_steering(rec, roots, steered).await?;
                if matches!(response.stop, StopKind::EndTurn | StopKind::ToolUse) {
                    continue;
                }
            }
            let ended = matches!(response.stop, StopKind::EndTurn | StopKind::ToolUse);
            if ended
                && let Some(note) =
                    hooks::on_stop(rec, env, limits.stop_event, &mut stop_continues, cancel).await
            {
                rec.record(crate::log::EntryKind::UserMessage {
                    id: None,
                    content: vec![UserContent::Text { text: note.into() }],
                })?;
                continue;
            }
            return Ok(TurnOutcome::ended(match response.stop {
                StopKind::EndTurn | StopKind::ToolUse => StopReason::EndTurn,
                StopKind::MaxTokens => StopReason::MaxTokens,
                StopKind::Refusal => StopReason::Refusal,
            }));
        }
        // The calls are durable before they act. `task` calls act only through their children,
        // whose model requests change nothing: their sync runs while the children start, and
        // each child waits for it before a hook or a tool call of its own runs.
        if subagent::all_tasks(env, &calls) {
            rec.start_calls_sync()?;
        } else {
            rec.sync()?;
        }
        let ran = dispatch::run_all(rec, env, &calls, cancel).await;
        rec.end_calls_sync().await?;
        if let Some(outcome) = ran? {
            return Ok(outcome);
        }
        results_unsynced = true;
    }
    Ok(TurnOutcome::ended(StopReason::MaxTurnRequests))
}

/// The environment of the turn's tool calls: the harness's tools, a subagent model where there
/// are tools to give one, and the session's MCP tools (waiting for servers still starting,
/// bounded by their startup timeout).
async fn call_env(
    parts: EnvParts<'_>,
    read_only: bool,
    model: &TurnModel,
    checkpoint: &TurnCheckpoint,
    cancel: &CancellationToken,
) -> Stage<CallEnv> {
    let extra_tools = parts.start.extra_tools.clone();
    let (config, rec, connector) = (parts.config, parts.rec, parts.services.connector.as_ref());
    let mut env = CallEnv::new(parts);
    env.read_only = read_only;
    env.checkpoint = Some(checkpoint.clone());
    env.child_turn = Some(child_turn);
    // The assistant harness has no tools to give a subagent.
    if env.tools.get("read").is_some() {
        env.subagent = Some(resolve::subagent_model(config, model, connector));
        env.agent_models = resolve::agent_models(config, model, connector, &env.agents);
    }
    if let Some(provider) = extra_tools {
        let tools = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(TurnOutcome::ended(StopReason::Cancelled)),
            t = provider.tools() => t,
        };
        for t in tools {
            env.tools.add(t);
        }
    }
    let exit_plan = exit_plan::ExitPlan::new(rec, &env);
    env.tools.add(Arc::new(exit_plan));
    Ok(env)
}

/// The custom agents of the workspace of `cwd` a session there may work as (the project's only
/// when it is trusted), read under the workspace's deny rules: the editor lists them.
pub(crate) fn agents_of(
    services: &Services,
    cwd: &std::path::Path,
) -> Vec<crate::agents::AgentDef> {
    let Ok(resolve::Settings { rules, .. }) = resolve::settings(&services.home, cwd) else {
        return vec![];
    };
    let roots = [cwd.to_owned()];
    let own =
        OwnFiles::new(&services.home, &roots, rules.in_force()).with_user_home(services.env.home());
    let approved = crate::trust::approved(&services.home, cwd);
    crate::agents::discover(&own, cwd, &approved).active
}

#[cfg(test)]
mod layering {
    //! The turn's stages depend on each other one way only (issue 27: `task` used to sit in an
    //! import circle with `call`, `env`, `resolve` and `permission`).

    use std::collections::BTreeMap;

    /// `super::<module>` references of each file of `src/turn/`, to other stage modules.
    fn edges() -> BTreeMap<String, Vec<String>> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/turn");
        let files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "rs"))
            .collect();
        let modules: Vec<String> = files
            .iter()
            .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
            .collect();
        let mut out = BTreeMap::new();
        for (path, name) in files.iter().zip(&modules) {
            let text = std::fs::read_to_string(path).unwrap();
            let mut deps: Vec<String> = text
                .split("super::")
                .skip(1)
                .map(|rest| {
                    rest.chars()
                        .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                        .collect::<String>()
                })
                .filter(|d| d != name && modules.contains(d))
                .collect();
            deps.sort();
            deps.dedup();
            out.insert(name.clone(), deps);
        }
        out
    }

    #[test]
    fn the_stages_have_no_import_circle() {
        let edges = edges();
        // Depth-first search from every module; a module met again on the path is a circle.
        fn visit(m: &str, edges: &BTreeMap<String, Vec<String>>, path: &mut Vec<String>) {
            if let Some(i) = path.iter().position(|p| p == m) {
                panic!("import circle: {}", path[i..].join(" -> ") + " -> " + m);
            }
            path.push(m.to_owned());
            for d in edges.get(m).into_iter().flatten() {
                visit(d, edges, path);
            }
            path.pop();
        }
        assert!(edges.contains_key("subagent") && edges.contains_key("env"));
        for m in edges.keys() {
            visit(m, &edges, &mut vec![]);
        }
    }
}
