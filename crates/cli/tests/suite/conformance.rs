//! ACP v1 conformance, by requirement id: the ids, tiers and capability gates of acp-tck's v1
//! registry (agentclientprotocol/acp-tck, `src/tck/v1/requirements.py`), each checked here in
//! our own words against the real binary and the loopback fake provider, plus `FERRITE-ACP-*`
//! ids for spec rules acp-tck v1 does not cover yet (the permission flow, -32602). Every id
//! gets a verdict in `target/acp-conformance.txt`; the test fails when a requirement fails, when
//! an id was never exercised, or when a capability Ferrite advertises was not exercised.

mod handshake;
mod history;
mod probes;
mod sessions;
mod turns;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::Value;

use super::common::BIN;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Tier {
    Mandatory,
    Capability,
    Advisory,
    Informational,
}

/// One requirement: its id, tier, the `initialize` result path that gates it (CAPABILITY
/// only; `inferred:` gates are decided by what `session/new` or `authMethods` show) and what
/// it asks.
struct Req(&'static str, Tier, Option<&'static str>, &'static str);

use Tier::{Advisory as A, Capability as C, Informational as I, Mandatory as M};

#[rustfmt::skip]
const REQUIREMENTS: &[Req] = &[
    Req("ACP-TRANSPORT-001", M, None, "every stdout line is one JSON-RPC 2.0 message"),
    Req("ACP-TRANSPORT-002", M, None, "stdout is UTF-8"),
    Req("ACP-JSONRPC-001", M, None, "a response echoes the request id, integer or string"),
    Req("ACP-JSONRPC-002", M, None, "a response has exactly one of result/error; errors have an integer code and a string message"),
    Req("ACP-JSONRPC-003", M, None, "notifications get no response"),
    Req("ACP-JSONRPC-004", A, None, "an unknown method answers -32601"),
    Req("ACP-JSONRPC-005", A, None, "the connection stays usable after erroneous requests"),
    Req("ACP-INIT-001", M, None, "initialize succeeds, schema-valid, integer protocolVersion"),
    Req("ACP-INIT-002", M, None, "protocolVersion 1 is answered with 1"),
    Req("ACP-INIT-003", M, None, "an unsupported version (65535) is answered with a supported one, not echoed"),
    Req("ACP-INIT-004", A, None, "agentInfo has name and version"),
    Req("ACP-SCHEMA-001", M, None, "every message validates against the schema"),
    Req("ACP-SCHEMA-002", A, None, "no custom root keys outside the schema's properties (besides _meta)"),
    Req("ACP-SESSION-001", M, None, "session/new with an absolute cwd answers a non-empty sessionId"),
    Req("ACP-SESSION-002", M, None, "two session/new calls answer distinct ids"),
    Req("ACP-PROMPT-001", M, None, "a text prompt answers a defined stopReason"),
    Req("ACP-PROMPT-002", M, None, "the turn's session/update notifications carry the prompted sessionId"),
    Req("ACP-PROMPT-003", A, None, "text + resource_link is accepted"),
    Req("ACP-CANCEL-001", M, None, "session/cancel during a turn answers stopReason cancelled, not an error"),
    Req("ACP-CANCEL-002", M, None, "no session/update of the cancelled turn after its answer"),
    Req("ACP-LOAD-001", C, Some("agentCapabilities.loadSession"), "session/load succeeds"),
    Req("ACP-LOAD-002", C, Some("agentCapabilities.loadSession"), "the replay comes before the load answer, none of it after"),
    Req("ACP-LOAD-003", A, None, "the load result is an object, not null"),
    Req("ACP-RESUME-001", C, Some("agentCapabilities.sessionCapabilities.resume"), "session/resume succeeds"),
    Req("ACP-RESUME-002", C, Some("agentCapabilities.sessionCapabilities.resume"), "no history update before the resume answer"),
    Req("ACP-LIST-001", C, Some("agentCapabilities.sessionCapabilities.list"), "session/list {} answers a sessions array"),
    Req("ACP-LIST-002", C, Some("agentCapabilities.sessionCapabilities.list"), "a cwd no session uses lists []"),
    Req("ACP-DELETE-001", C, Some("agentCapabilities.sessionCapabilities.delete"), "deleting a session of this connection answers {}"),
    Req("ACP-DELETE-002", A, None, "deleting an unknown or already-deleted id succeeds silently"),
    Req("ACP-CLOSE-001", C, Some("agentCapabilities.sessionCapabilities.close"), "closing an idle session answers {}"),
    Req("ACP-CLOSE-002", C, Some("agentCapabilities.sessionCapabilities.close"), "closing a session mid-turn answers the prompt cancelled"),
    Req("ACP-ADDDIRS-001", C, Some("agentCapabilities.sessionCapabilities.additionalDirectories"), "session/new with an absolute additionalDirectories entry is accepted"),
    Req("ACP-MODES-001", C, Some("inferred:modes"), "modes are valid and currentModeId is one of them"),
    Req("ACP-MODES-002", C, Some("inferred:modes"), "session/set_mode succeeds; a current_mode_update carries currentModeId"),
    Req("ACP-CONFIG-001", C, Some("inferred:configOptions"), "every config option's currentValue is valid for its type"),
    Req("ACP-CONFIG-002", C, Some("inferred:configOptions"), "set_config_option answers the complete list with the new value"),
    Req("ACP-CONFIG-003", M, None, "no boolean config option unless the client advertised it"),
    Req("ACP-PROMPTCAP-001", C, Some("agentCapabilities.promptCapabilities.image"), "an image block is accepted"),
    Req("ACP-PROMPTCAP-002", C, Some("agentCapabilities.promptCapabilities.audio"), "an audio block is accepted"),
    Req("ACP-PROMPTCAP-003", C, Some("agentCapabilities.promptCapabilities.embeddedContext"), "an embedded resource is accepted"),
    Req("ACP-AUTH-001", A, None, "authMethods ids are unique"),
    Req("ACP-AUTH-002", M, None, "no terminal auth method unless the client advertised auth.terminal"),
    Req("ACP-AUTH-003", C, Some("inferred:authMethods"), "authenticate answers an object and session/new then is not -32000"),
    Req("ACP-AUTH-004", C, Some("agentCapabilities.auth.logout"), "logout answers an object"),
    Req("ACP-AUTH-005", A, None, "with no authMethods, session/new is not -32000"),
    Req("ACP-CLIENTCAP-001", M, None, "no fs/* request to a client that did not advertise fs"),
    Req("ACP-CLIENTCAP-002", M, None, "no terminal/* request to a client that did not advertise terminal"),
    Req("ACP-CLIENTCAP-003", M, None, "no elicitation/create to a client that did not advertise elicitation"),
    Req("ACP-EXT-001", M, None, "an unknown _-prefixed request gets a response"),
    Req("ACP-META-001", A, None, "a prompt with _meta (traceparent) ends normally"),
    Req("ACP-ERROR-001", A, None, "error messages are non-empty single lines"),
    Req("ACP-SHUTDOWN-001", A, None, "the agent exits on its own after stdin closes"),
    Req("ACP-STDERR-001", I, None, "stderr bytes during an exchange (recorded)"),
    Req("ACP-INFO-PARSE-001", I, None, "reply to a non-JSON line, and whether the connection stays usable (recorded)"),
    Req("ACP-INFO-INVALIDREQ-001", I, None, "reply to JSON that is no JSON-RPC envelope (recorded)"),
    Req("ACP-INFO-UNKNOWNSESSION-001", I, None, "reply to a prompt for a never-created session (recorded)"),
    Req("FERRITE-ACP-PERM-001", M, None, "a permission request names an announced tool call, offers options of the defined kinds, and the chosen option is obeyed"),
    Req("FERRITE-ACP-PERM-002", M, None, "a cancel while a permission is pending answers cancelled and does nothing the question was about"),
    Req("FERRITE-ACP-PARAMS-001", A, None, "invalid params answer -32602"),
];

#[derive(Clone, Debug)]
enum Outcome {
    Pass(String),
    Fail(String),
    Skip(String),
}

/// Where the probes write their findings, and what `initialize` advertised.
#[derive(Clone, Default)]
pub(super) struct Record {
    outcomes: Arc<Mutex<BTreeMap<&'static str, Vec<Outcome>>>>,
    advertised: Arc<Mutex<Value>>,
}

impl Record {
    fn push(&self, id: &'static str, o: Outcome) {
        assert!(
            REQUIREMENTS.iter().any(|r| r.0 == id),
            "{id} is not a registered requirement"
        );
        self.outcomes.lock().unwrap().entry(id).or_default().push(o);
    }

    pub fn pass(&self, id: &'static str, note: impl Into<String>) {
        self.push(id, Outcome::Pass(note.into()));
    }

    pub fn fail(&self, id: &'static str, why: impl Into<String>) {
        self.push(id, Outcome::Fail(why.into()));
    }

    pub fn skip(&self, id: &'static str, why: impl Into<String>) {
        self.push(id, Outcome::Skip(why.into()));
    }

    /// Pass when `ok`, else fail with `why`.
    pub fn check(&self, id: &'static str, ok: bool, why: impl Into<String>) {
        if ok {
            self.pass(id, "")
        } else {
            self.fail(id, why)
        }
    }

    /// Whether the `initialize` result advertises `path` (true, or an object marker).
    pub fn advertises(&self, path: &str) -> bool {
        let init = self.advertised.lock().unwrap();
        let v = path.split('.').fold(&*init, |v, k| &v[k]);
        v.as_bool().unwrap_or(v.is_object())
    }
}

type Probe = fn(Record) -> BoxFuture<'static, ()>;

/// Each probe starts its own agent (one crash cannot spoil the others) and the ids it may
/// record; a panic in a probe fails those of its ids.
fn probes() -> Vec<(&'static [&'static str], Probe)> {
    vec![
        (handshake::HANDSHAKE, |r| Box::pin(handshake::handshake(r))),
        (sessions::SESSIONS, |r| Box::pin(sessions::sessions(r))),
        (turns::TURNS, |r| Box::pin(turns::turns(r))),
        (turns::CANCELS, |r| Box::pin(turns::cancels(r))),
        (history::HISTORY, |r| Box::pin(history::history(r))),
    ]
}

#[tokio::test]
async fn acp_v1_requirements_hold_by_id() {
    let record = Record::default();
    *record.advertised.lock().unwrap() = probes::advertised().await;
    for (ids, probe) in probes() {
        if let Err(e) = tokio::spawn(probe(record.clone())).await {
            let why: String = panic_text(e).chars().take(300).collect();
            for id in ids {
                record.fail(id, format!("the probe stopped: {why}"));
            }
        }
    }
    let (report, failed) = report(&record);
    let path = report_path();
    std::fs::write(&path, &report).unwrap();
    assert!(
        failed.is_empty(),
        "ACP conformance failed for {failed:?} (report: {}):\n{report}",
        path.display()
    );
}

fn panic_text(e: tokio::task::JoinError) -> String {
    match e.try_into_panic() {
        Ok(p) => p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "a panic".into()),
        Err(e) => e.to_string(),
    }
}

/// `target/acp-conformance.txt`, beside the binary's profile directory.
fn report_path() -> PathBuf {
    let bin = PathBuf::from(BIN);
    let target = bin.parent().and_then(|p| p.parent()).unwrap_or(&bin);
    target.join("acp-conformance.txt")
}

/// One line per id with its aggregated verdict (FAIL > PASS > SKIPPED; NOT_TESTED when no
/// probe reached it), and the ids that make the run fail.
fn report(record: &Record) -> (String, Vec<&'static str>) {
    let outcomes = record.outcomes.lock().unwrap();
    let mut lines = vec![format!(
        "ACP v1 conformance of {BIN} (ids of acp-tck v1; FERRITE-ACP-* are ours)"
    )];
    let mut failed = vec![];
    for Req(id, tier, gate, text) in REQUIREMENTS {
        let all = outcomes.get(id).cloned().unwrap_or_default();
        let fail = all.iter().find_map(|o| match o {
            Outcome::Fail(w) => Some(w.clone()),
            _ => None,
        });
        let notes: Vec<String> = all
            .iter()
            .filter_map(|o| match o {
                Outcome::Pass(n) | Outcome::Skip(n) if !n.is_empty() => Some(n.clone()),
                _ => None,
            })
            .collect();
        let passed = all.iter().any(|o| matches!(o, Outcome::Pass(_)));
        let advertised = gate.is_some_and(|g| !g.starts_with("inferred:") && record.advertises(g));
        let verdict = match (&fail, passed, all.is_empty()) {
            (Some(_), _, _) => "FAIL",
            (None, _, true) => "NOT_TESTED",
            (None, true, _) => "PASS",
            (None, false, _) => "SKIPPED",
        };
        // Skipping is for what does not apply: never a MUST, never an advertised capability.
        let bad = verdict == "FAIL"
            || verdict == "NOT_TESTED"
            || (verdict == "SKIPPED" && (*tier == M || advertised));
        if bad {
            failed.push(*id);
        }
        let why = fail.map(|w| vec![w]).unwrap_or(notes).join("; ");
        lines.push(format!(
            "{id:<28} {:<13} {verdict:<10} {text}{}",
            format!("{tier:?}").to_uppercase(),
            if why.is_empty() {
                String::new()
            } else {
                format!(" -- {why}")
            }
        ));
    }
    lines.push(format!(
        "VERDICT: {}",
        if failed.is_empty() {
            "CONFORMANT".to_owned()
        } else {
            format!("NOT CONFORMANT ({})", failed.join(", "))
        }
    ));
    (lines.join("\n") + "\n", failed)
}
