//! Which server handles a file: the built-in definitions merged with `[lsp.servers]`, the
//! language of a file by its extension, the project root by marker files, the program on `PATH`,
//! and what a server needs to be safe in an untrusted workspace (`docs/lsp.md`).

use std::path::{Path, PathBuf};

use ferrite_core::config::LspConfig;
use serde_json::{Value, json};

/// One server as it will be started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerDef {
    pub name: String,
    pub command: Vec<String>,
    pub languages: Vec<String>,
    pub root_markers: Vec<String>,
    /// A built-in (its untrusted settings are known) or the user's own.
    pub builtin: bool,
}

fn def(name: &str, command: &[&str], languages: &[&str], markers: &[&str]) -> ServerDef {
    let owned = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect();
    ServerDef {
        name: name.to_owned(),
        command: owned(command),
        languages: owned(languages),
        root_markers: owned(markers),
        builtin: true,
    }
}

fn builtins() -> Vec<ServerDef> {
    vec![
        def(
            "rust-analyzer",
            &["rust-analyzer"],
            &["rust"],
            &["Cargo.toml"],
        ),
        def(
            "pyright",
            &["pyright-langserver", "--stdio"],
            &["python"],
            &[
                "pyrightconfig.json",
                "pyproject.toml",
                "setup.py",
                "setup.cfg",
                "requirements.txt",
            ],
        ),
        def(
            "typescript",
            &["typescript-language-server", "--stdio"],
            &[
                "typescript",
                "typescriptreact",
                "javascript",
                "javascriptreact",
            ],
            &["tsconfig.json", "jsconfig.json", "package.json"],
        ),
        def("gopls", &["gopls"], &["go"], &["go.work", "go.mod"]),
        def(
            "clangd",
            &["clangd"],
            &["c", "cpp"],
            &["compile_commands.json", "compile_flags.txt", ".clangd"],
        ),
    ]
}

/// The servers in use: built-ins changed by `[lsp.servers.NAME]`, the user's own added before
/// them (a user who adds a server for a language wants it used), the ones turned off left out.
pub(crate) fn servers(config: &LspConfig) -> Vec<ServerDef> {
    let mut all = builtins();
    let builtin_count = all.len();
    for (name, c) in &config.servers {
        let i = match all.iter().position(|d| d.name == *name) {
            Some(i) => i,
            None => {
                // A new server needs a command and languages; without them it names nothing.
                let (Some(command), Some(languages)) = (&c.command, &c.languages) else {
                    continue;
                };
                all.push(ServerDef {
                    name: name.clone(),
                    command: command.clone(),
                    languages: languages.clone(),
                    root_markers: vec![],
                    builtin: false,
                });
                all.len() - 1
            }
        };
        let d = &mut all[i];
        if let Some(command) = &c.command {
            // A changed command is the user's program: nothing is known of it when untrusted.
            d.builtin &= *command == d.command;
            d.command = command.clone();
        }
        if let Some(languages) = &c.languages {
            d.languages = languages.clone();
        }
        if let Some(markers) = &c.root_markers {
            d.root_markers = markers.clone();
        }
    }
    all.rotate_left(builtin_count);
    all.retain(|d| {
        config
            .servers
            .get(&d.name)
            .and_then(|c| c.enabled)
            .unwrap_or(true)
    });
    all
}

/// The LSP language id of a file, by its extension.
pub(crate) fn language_of(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "rs" => "rust",
        "py" | "pyi" => "python",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "typescriptreact",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "javascriptreact",
        "go" => "go",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" => "cpp",
        _ => return None,
    })
}

/// The project root of `file`: the nearest directory at or above it, inside the workspace root
/// that holds it, with one of `markers`; else that workspace root. `None` outside the workspace.
pub(crate) fn root_for(file: &Path, markers: &[String], roots: &[PathBuf]) -> Option<PathBuf> {
    let ws = roots
        .iter()
        .filter(|r| file.starts_with(r))
        .max_by_key(|r| r.components().count())?;
    let mut dir = file.parent();
    while let Some(d) = dir {
        if !d.starts_with(ws) {
            break;
        }
        if markers.iter().any(|m| d.join(m).exists()) {
            return Some(d.to_owned());
        }
        dir = d.parent();
    }
    Some(ws.clone())
}

/// `program` found on `PATH` (absolute entries only), or as given when it is a path.
pub(crate) fn find_program(program: &str) -> Option<PathBuf> {
    let p = Path::new(program);
    if p.components().count() > 1 {
        return p
            .is_absolute()
            .then(|| p.to_owned())
            .filter(|p| p.is_file());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// What a server starts with: `initializationOptions` and the answers to its
/// `workspace/configuration` requests.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Launch {
    pub init_options: Value,
    pub settings: Value,
    /// Diagnostics asked of tsserver through `typescript.tsserverRequest` (`tsserver.rs`):
    /// typescript-language-server neither pulls nor says which version it pushes on.
    pub tsserver_pull: bool,
}

/// How a server starts in a workspace of this trust (`docs/lsp.md`): the settings that keep it
/// from running the repository's code when untrusted, or why it does not start at all.
pub(crate) fn launch(def: &ServerDef, program: &Path, trusted: bool) -> Result<Launch, String> {
    let refuse = |why: &str| {
        Err(format!(
            "{} is not started in an untrusted workspace: {why}. Trust the workspace to use it.",
            def.name
        ))
    };
    if !trusted && !def.builtin {
        return refuse("nothing is known of what it runs");
    }
    match def.name.as_str() {
        "pyright" => Ok(Launch {
            tsserver_pull: false,
            init_options: Value::Null,
            settings: json!({"python": {"analysis": {
                "diagnosticMode": "openFilesOnly",
                "autoSearchPaths": true,
            }}}),
        }),
        "typescript" => {
            let mut init = json!({"disableAutomaticTypingAcquisition": true});
            if !trusted {
                // typescript-language-server prefers the workspace's `node_modules/typescript`:
                // that is the repository's code. Untrusted, the one installed beside it runs.
                let Some(tsserver) = bundled_tsserver(program) else {
                    return refuse(
                        "no TypeScript is installed beside it, and the workspace's own would run",
                    );
                };
                init["tsserver"] = json!({"path": tsserver});
            }
            Ok(Launch {
                tsserver_pull: def.command[0] == "typescript-language-server",
                init_options: init,
                settings: Value::Null,
            })
        }
        "rust-analyzer" if trusted => Ok(Launch {
            tsserver_pull: false,
            init_options: json!({"checkOnSave": false}),
            settings: Value::Null,
        }),
        "rust-analyzer" => refuse(
            "`cargo metadata` alone runs what the repository's `.cargo/config.toml` and \
             `rust-toolchain.toml` name",
        ),
        "gopls" if !trusted => {
            refuse("`go list` runs what the repository's go.mod and cgo directives name")
        }
        "clangd" if !trusted => {
            refuse("the repository's compile commands name the compiler it queries")
        }
        _ => Ok(Launch {
            tsserver_pull: false,
            init_options: Value::Null,
            settings: Value::Null,
        }),
    }
}

/// `lib/tsserver.js` of the `typescript` package installed beside `typescript-language-server`
/// (`<prefix>/node_modules/typescript-language-server/lib/cli.mjs`).
fn bundled_tsserver(program: &Path) -> Option<PathBuf> {
    let real = std::fs::canonicalize(program).ok()?;
    let modules = real
        .ancestors()
        .find(|d| d.file_name().is_some_and(|n| n == "node_modules"))?;
    let tsserver = modules.join("typescript/lib/tsserver.js");
    tsserver.is_file().then_some(tsserver)
}

/// The value at `section` (`python.analysis`) of `settings`, `null` when absent.
pub(crate) fn section<'a>(settings: &'a Value, section: Option<&str>) -> &'a Value {
    let mut v = settings;
    for key in section
        .unwrap_or_default()
        .split('.')
        .filter(|k| !k.is_empty())
    {
        match v.get(key) {
            Some(next) => v = next,
            None => return &Value::Null,
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrite_core::config::LspServerConfig;

    #[test]
    fn config_changes_adds_and_turns_off_servers() {
        let mut config = LspConfig::default();
        config.servers.insert(
            "pyright".into(),
            LspServerConfig {
                command: Some(vec!["basedpyright-langserver".into(), "--stdio".into()]),
                ..Default::default()
            },
        );
        config.servers.insert(
            "clangd".into(),
            LspServerConfig {
                enabled: Some(false),
                ..Default::default()
            },
        );
        config.servers.insert(
            "zls".into(),
            LspServerConfig {
                command: Some(vec!["zls".into()]),
                languages: Some(vec!["zig".into()]),
                ..Default::default()
            },
        );
        let all = servers(&config);
        let names: Vec<&str> = all.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(
            names,
            ["zls", "rust-analyzer", "pyright", "typescript", "gopls"]
        );
        let pyright = &all[2];
        assert_eq!(pyright.command[0], "basedpyright-langserver");
        assert!(!pyright.builtin && pyright.root_markers.contains(&"pyproject.toml".into()));
        assert!(!all[0].builtin);
    }

    #[test]
    fn the_root_is_the_nearest_marked_directory_inside_the_workspace() {
        let dir = std::env::temp_dir().join(format!("ferrite-lsp-root-{}", std::process::id()));
        let pkg = dir.join("ws/pkg/src");
        std::fs::create_dir_all(&pkg).unwrap();
        std::fs::write(dir.join("pyproject.toml"), "").unwrap();
        std::fs::write(dir.join("ws/pkg/pyproject.toml"), "").unwrap();
        let markers = vec!["pyproject.toml".to_owned()];
        let roots = vec![dir.join("ws")];
        let file = pkg.join("a.py");
        assert_eq!(root_for(&file, &markers, &roots), Some(dir.join("ws/pkg")));
        let top = dir.join("ws/b.py");
        assert_eq!(
            root_for(&top, &markers, &roots),
            Some(dir.join("ws")),
            "never above the workspace"
        );
        assert_eq!(root_for(&dir.join("c.py"), &markers, &roots), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn untrusted_servers_start_safe_or_not_at_all() {
        let all = servers(&LspConfig::default());
        let by = |n: &str| all.iter().find(|d| d.name == n).unwrap().clone();
        let p = Path::new("/nonexistent/bin/x");
        assert!(launch(&by("pyright"), p, false).is_ok());
        let refused = launch(&by("rust-analyzer"), p, false).unwrap_err();
        assert!(refused.contains("untrusted"), "{refused}");
        assert!(
            launch(&by("typescript"), p, false).is_err(),
            "no bundled tsserver: refused"
        );
        assert!(launch(&by("typescript"), p, true).is_ok());
        assert!(launch(&by("gopls"), p, false).is_err());
        assert_eq!(language_of(Path::new("a/b.TSX")), Some("typescriptreact"));
        let settings = json!({"python": {"analysis": {"x": 1}}});
        assert_eq!(
            section(&settings, Some("python.analysis")),
            &json!({"x": 1})
        );
        assert_eq!(section(&settings, Some("nope")), &Value::Null);
    }
}
