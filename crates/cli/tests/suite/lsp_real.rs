//! The real servers `.ci/run` installs (pinned pyright, typescript-language-server and
//! TypeScript): an edit that brings a type error gets it, with its line, in the same tool result;
//! the fix clears it. A repository whose own TypeScript (`node_modules/typescript`) would run when
//! the server starts: nothing of it runs while the workspace is untrusted, and once trusted it
//! runs only inside the sandbox (no write outside the workspace, no network).

use std::time::Duration;

use serde_json::json;

use super::common::*;
use super::lsp::{lsp_rig, path_with_servers, result_of, trust, turn};

/// Long enough for a cold server's first analysis on a busy machine: the tests check what is
/// reported, not how fast (`bench/lsp.py` measures that).
const CONFIG: &str = "[lsp]\nwait_ms = 30000\n";

#[tokio::test]
async fn pyright_reports_a_type_error_on_its_line_and_the_fix_clears_it() {
    let path = path_with_servers();
    let mut r = lsp_rig(CONFIG, false, &[("PATH", &path)]).await;
    std::fs::write(
        r.world.ws().join("pyproject.toml"),
        "[project]\nname = \"p\"\n",
    )
    .unwrap();
    turn(
        &mut r,
        vec![(
            "c1",
            "write",
            json!({"path": "a.py", "content": "def f(x: int) -> int:\n    return x\n\ny: int = \"no\"\n"}),
        )],
    )
    .await;
    let text = result_of(&r, 1);
    assert!(
        text.contains("The edit was applied. pyright reports 1 error in a.py (1 new with this edit, marked [new]):\n4:10 [new] Type \"Literal['no']\" is not assignable to declared type \"int\""),
        "{text}"
    );
    turn(
        &mut r,
        vec![(
            "c2",
            "edit",
            json!({"path": "a.py", "old_string": "y: int = \"no\"", "new_string": "y: int = f(3)"}),
        )],
    )
    .await;
    let text = result_of(&r, 3);
    assert!(
        text.ends_with("The edit was applied. pyright reports no errors in a.py."),
        "{text}"
    );
    stop(r.client).await;
}

#[tokio::test]
async fn typescript_reports_a_type_error_on_its_line_and_the_fix_clears_it() {
    let path = path_with_servers();
    let mut r = lsp_rig(CONFIG, false, &[("PATH", &path)]).await;
    turn(
        &mut r,
        vec![(
            "c1",
            "write",
            json!({"path": "a.ts", "content": "export const ok = 1;\nexport const n: number = \"s\";\n"}),
        )],
    )
    .await;
    let text = result_of(&r, 1);
    assert!(
        text.contains("typescript reports 1 error in a.ts (1 new with this edit, marked [new]):\n2:14 [new] Type 'string' is not assignable to type 'number'."),
        "{text}"
    );
    turn(
        &mut r,
        vec![(
            "c2",
            "edit",
            json!({"path": "a.ts", "old_string": "\"s\"", "new_string": "2"}),
        )],
    )
    .await;
    let text = result_of(&r, 3);
    assert!(
        text.ends_with("typescript reports no errors in a.ts."),
        "{text}"
    );
    stop(r.client).await;
}

/// A workspace whose `node_modules/typescript/lib/tsserver.js` (which typescript-language-server
/// prefers to its own) leaves marks of what it could do: run at all, write into FERRITE_HOME,
/// connect to `port`.
fn plant_repository_typescript(ws: &std::path::Path, home: &std::path::Path, port: u16) {
    let lib = ws.join("node_modules/typescript/lib");
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::write(
        ws.join("node_modules/typescript/package.json"),
        r#"{"name": "typescript", "version": "5.9.3"}"#,
    )
    .unwrap();
    let escape = home.join("escaped");
    std::fs::write(
        lib.join("tsserver.js"),
        format!(
            r#"const fs = require("fs"), path = require("path"), net = require("net");
const ws = path.resolve(__dirname, "../../..");
fs.writeFileSync(path.join(ws, "ran-in-workspace"), "yes");
try {{ fs.writeFileSync({escape:?}, "escaped"); }} catch (e) {{ fs.writeFileSync(path.join(ws, "write-refused"), String(e)); }}
const s = net.connect({port}, "127.0.0.1");
s.on("connect", () => fs.writeFileSync(path.join(ws, "connected"), "yes"));
s.on("error", (e) => fs.writeFileSync(path.join(ws, "connect-refused"), String(e)));
setTimeout(() => process.exit(0), 3000);
"#
        ),
    )
    .unwrap();
    std::fs::write(ws.join("package.json"), r#"{"name": "w"}"#).unwrap();
}

#[tokio::test]
async fn a_repository_typescript_runs_nowhere_untrusted_and_only_sandboxed_when_trusted() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let path = path_with_servers();
    let mut r = lsp_rig(CONFIG, false, &[("PATH", &path)]).await;
    let ws = r.world.ws();
    plant_repository_typescript(&ws, r.world.home(), port);
    turn(
        &mut r,
        vec![(
            "c1",
            "write",
            json!({"path": "a.ts", "content": "export const n: number = \"s\";\n"}),
        )],
    )
    .await;
    let text = result_of(&r, 1);
    assert!(
        text.contains("1:14 [new] Type 'string' is not assignable to type 'number'."),
        "untrusted, the TypeScript installed beside the server checks the file: {text}"
    );
    assert!(
        !ws.join("ran-in-workspace").exists(),
        "the repository's code ran untrusted"
    );

    // Trusted: the repository's TypeScript is what the server runs, in the sandbox. It answers
    // nothing, so the edit waits its whole bound: a short one (what it ran is the point here).
    trust(&r.world);
    r.world.write_config("[lsp]\nwait_ms = 2000\n");
    let seen = turn(
        &mut r,
        vec![(
            "c2",
            "write",
            json!({"path": "b.ts", "content": "export const m = 1;\n"}),
        )],
    )
    .await;
    let _ = seen;
    let mut ran = false;
    for _ in 0..100 {
        if ws.join("connect-refused").exists() || ws.join("connected").exists() {
            ran = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        ran && ws.join("ran-in-workspace").exists(),
        "trusted, the repository's tsserver runs"
    );
    assert!(
        ws.join("write-refused").exists(),
        "a write outside the workspace was refused"
    );
    assert!(!r.world.home().join("escaped").exists());
    assert!(!ws.join("connected").exists(), "the network is off");
    assert!(listener.accept().is_err(), "nothing connected");
    stop(r.client).await;
}
