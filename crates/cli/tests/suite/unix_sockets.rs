//! Issue 34: a sandboxed command reached the user's daemons (tmux, docker.sock, D-Bus,
//! ssh-agent) through UNIX sockets. Here the "daemon" is a listener outside the workspace,
//! created before the command (as the user's tmux socket in /tmp is), and the model runs an
//! allowed command that connects to it, with the network off and on.

use std::io::Read;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::path::{Path, PathBuf};

use super::sandbox_escape::{Rig, canon, rig_at};

/// A listener that records whether anyone connected.
struct Daemon {
    listener: UnixListener,
}

impl Daemon {
    fn at(path: &Path) -> Self {
        let listener = UnixListener::bind(path).unwrap();
        listener.set_nonblocking(true).unwrap();
        Daemon { listener }
    }

    fn abstract_named(name: &str) -> Self {
        let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let listener = UnixListener::bind_addr(&addr).unwrap();
        listener.set_nonblocking(true).unwrap();
        Daemon { listener }
    }

    /// What the first connection sent, or None when nobody connected.
    fn received(&self) -> Option<String> {
        let (mut stream, _) = self.listener.accept().ok()?;
        stream.set_nonblocking(false).unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        Some(text)
    }
}

/// A command that connects to `target` (a path, or `@name` for an abstract socket) and sends
/// `message`.
fn connect_and_send(target: &str, message: &str) -> String {
    format!(
        "python3 -c 'import socket,sys; a=sys.argv[1]; a=\"\\0\"+a[1:] if a[0]==\"@\" else a; \
         s=socket.socket(socket.AF_UNIX); s.connect(a); s.sendall(sys.argv[2].encode())' \
         {target} {message}"
    )
}

const SOCKETPAIR: &str = "python3 -c 'import socket; a,b=socket.socketpair(); a.send(b\"p\"); \
                          print(\"pair-\" + b.recv(1).decode())'";
const PIPELINE: &str = "echo piped | cat | tr a-z A-Z";

struct Setup {
    rig: Rig,
    outside: Daemon,
    allowed: Daemon,
    abstract_daemon: Daemon,
    outside_path: PathBuf,
    allowed_path: PathBuf,
    abstract_name: String,
    _dirs: Vec<tempfile::TempDir>,
}

async fn setup(mode: &str, config_extra: &str, tag: &str) -> Setup {
    let daemons = tempfile::tempdir().unwrap();
    let dir = canon(daemons.path());
    let outside_path = dir.join("daemon.sock");
    let allowed_path = dir.join("dev-server.sock");
    let outside = Daemon::at(&outside_path);
    let allowed = Daemon::at(&allowed_path);
    let abstract_name = format!("ferrite-test-{}-{tag}", std::process::id());
    let abstract_daemon = Daemon::abstract_named(&abstract_name);
    let home_dir = tempfile::tempdir().unwrap();
    let ws_dir = tempfile::tempdir().unwrap();
    let home = canon(home_dir.path());
    std::fs::write(
        home.join("config.toml"),
        format!(
            "[permissions]\nallow = [\"bash(python3:*)\", \"bash(echo:*)\", \"bash(cat:*)\", \"bash(tr:*)\"]\n\n[sandbox]\n\
             allow_unix_sockets = [\"{}\"]\n{config_extra}",
            allowed_path.display()
        ),
    )
    .unwrap();
    let ws = canon(ws_dir.path());
    let rig = rig_at(home, ws, mode, vec![home_dir, ws_dir]).await;
    Setup {
        rig,
        outside,
        allowed,
        abstract_daemon,
        outside_path,
        allowed_path,
        abstract_name,
        _dirs: vec![daemons],
    }
}

async fn attack(mode: &str, config_extra: &str, tag: &str) {
    let mut s = setup(mode, config_extra, tag).await;
    let results = s
        .rig
        .run_commands(&[
            &connect_and_send(&s.outside_path.display().to_string(), "pwned"),
            &connect_and_send(&format!("@{}", s.abstract_name), "pwned"),
            &connect_and_send(&s.allowed_path.display().to_string(), "hello"),
            SOCKETPAIR,
            PIPELINE,
        ])
        .await;
    let why = format!("{mode} {config_extra}: {results:#?}");
    assert_eq!(s.outside.received(), None, "{why}");
    assert_eq!(s.abstract_daemon.received(), None, "{why}");
    if results[0].contains("was not run") {
        // No sandbox on this machine: commands are refused, nothing else to check.
        return;
    }
    assert!(results[0].contains("Permission denied"), "{why}");
    assert!(results[1].contains("Permission denied"), "{why}");
    assert_eq!(s.allowed.received().as_deref(), Some("hello"), "{why}");
    assert!(results[3].contains("pair-p"), "{why}");
    assert!(results[4].contains("PIPED"), "{why}");
}

#[tokio::test]
async fn unix_sockets_outside_the_roots_are_unreachable_with_the_network_off() {
    attack("auto", "", "off").await;
}

#[tokio::test]
async fn unix_sockets_outside_the_roots_are_unreachable_with_the_network_on() {
    attack("auto", "network = true\n", "on").await;
}

#[tokio::test]
async fn unix_sockets_outside_the_roots_are_unreachable_in_ask_mode() {
    attack("ask", "", "ask").await;
}

/// The command's own sockets (a test suite's server in a temp directory, Python's
/// `forkserver`) keep working.
#[tokio::test]
async fn a_command_reaches_the_sockets_it_creates() {
    let mut s = setup("auto", "network = true\n", "own").await;
    let own = "python3 -c 'import socket,tempfile,os; p=os.path.join(tempfile.mkdtemp(), \"s\"); \
               l=socket.socket(socket.AF_UNIX); l.bind(p); l.listen(1); \
               c=socket.socket(socket.AF_UNIX); c.connect(p); print(\"own-ok\")'";
    let results = s.rig.run_commands(&[own]).await;
    if results[0].contains("was not run") {
        return;
    }
    assert!(results[0].contains("own-ok"), "{results:#?}");
    assert_eq!(s.outside.received(), None);
}
