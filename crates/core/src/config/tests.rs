use super::*;

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

#[test]
fn absent_file_gives_defaults() {
    let home = tempfile::tempdir().unwrap();
    assert_eq!(Config::load(home.path(), None).unwrap(), Config::default());
}

#[test]
fn full_example_parses() {
    let text = r#"
model = "anthropic/claude-sonnet-4-5"
max_mode = "auto"
max_turn_requests = 50
fs_delegation = "never"
[permissions]
timeout_secs = 30
allow = ["bash(cargo test:*)"]
deny = ["read(**/.env)"]
[sandbox]
network = true
[tools]
output_max_bytes = 1000
output_max_lines = 10
bash_timeout_secs = 600
[compaction]
threshold = 0.5
[providers.local]
api = "openai-chat"
base_url = "http://127.0.0.1:8080/v1"
api_key_env = "LOCAL_KEY"
models = [{ id = "qwen3-coder", context_window = 131072 }]
"#;
    let c = Config::from_user_toml(text, Path::new("/h/config.toml")).unwrap();
    assert_eq!(c.max_mode, Mode::Auto);
    assert_eq!(c.max_turn_requests, 50);
    assert_eq!(c.fs_delegation, FsDelegation::Never);
    assert_eq!(c.permissions.deny, vec!["read(**/.env)".to_string()]);
    assert!(c.sandbox_network);
    assert_eq!(c.tools.bash_timeout_secs, 600);
    assert_eq!(c.providers["local"].api, Some(ApiKind::OpenAiChat));
    assert_eq!(c.providers["local"].models[0].context_window, Some(131072));
}

#[test]
fn provider_entries_built_in_names_and_model_facts() {
    // A built-in's name may only add model facts.
    let c = Config::from_user_toml(
        "[providers.anthropic]\nmodels = [{ id = \"claude-x\", max_output_tokens = 4096, reasoning = true, price = { input = 1.0, output = 2.0, cache_read = 0.1 } }]\n",
        Path::new("/c.toml"),
    )
    .unwrap();
    let m = &c.providers["anthropic"].models[0];
    assert_eq!(m.max_output_tokens, Some(4096));
    assert_eq!(m.price.unwrap().cache_read, Some(0.1));
    // Any other name needs its API and URL.
    let err = Config::from_user_toml(
        "[providers.mine]\nbase_url = \"http://127.0.0.1:1/v1\"\n",
        Path::new("/c.toml"),
    )
    .unwrap_err();
    assert!(err.to_string().contains("providers.mine.api"), "{err}");
    let err = Config::from_user_toml(
        "[providers.mine]\napi = \"openai-chat\"\n",
        Path::new("/c.toml"),
    )
    .unwrap_err();
    assert!(err.to_string().contains("providers.mine.base_url"), "{err}");
    let err = Config::from_user_toml(
        "[providers.openai]\nmodels = [{ id = \"m\", price = { input = -1.0, output = 2.0 } }]\n",
        Path::new("/c.toml"),
    )
    .unwrap_err();
    assert!(err.to_string().contains("price"), "{err}");
    let err = Config::from_user_toml(
        "[providers.openai]\nmodels = [{ id = \"m\", window = 5 }]\n",
        Path::new("/c.toml"),
    )
    .unwrap_err();
    assert!(err.to_string().contains("window"), "{err}");
}

#[test]
fn unknown_key_names_key_and_file() {
    let err = Config::from_user_toml("colour = 1\n", Path::new("/h/config.toml")).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("colour") && msg.contains("/h/config.toml"),
        "{msg}"
    );
    let err =
        Config::from_user_toml("[tools]\nbash_timeout = 3\n", Path::new("/h/c.toml")).unwrap_err();
    assert!(err.to_string().contains("bash_timeout"), "{err}");
}

#[test]
fn bad_values_say_what_is_accepted() {
    let err = Config::from_user_toml("max_mode = \"ultra\"\n", Path::new("/c.toml")).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("ultra") && msg.contains("plan"), "{msg}");
    let err = Config::from_user_toml("[tools]\nbash_timeout_secs = 601\n", Path::new("/c.toml"))
        .unwrap_err();
    assert!(err.to_string().contains("1 to 600"), "{err}");
}

#[test]
fn workspace_can_only_narrow() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    write(
        home.path(),
        "config.toml",
        "max_mode = \"auto\"\n[permissions]\ndeny = [\"bash(rm:*)\"]\n",
    );
    write(
        ws.path(),
        ".ferrite/config.toml",
        "max_mode = \"full\"\n[permissions]\nallow = [\"bash\"]\ndeny = [\"read(**/.env)\"]\n[sandbox]\nnetwork = true\n",
    );
    let c = Config::load(home.path(), Some(ws.path())).unwrap();
    assert_eq!(c.max_mode, Mode::Auto);
    assert!(c.permissions.allow.is_empty());
    assert_eq!(c.permissions.deny.len(), 2);
    assert!(!c.sandbox_network);
    assert_eq!(c.warnings.len(), 3, "{:?}", c.warnings);

    write(ws.path(), ".ferrite/config.toml", "max_mode = \"plan\"\n");
    let c = Config::load(home.path(), Some(ws.path())).unwrap();
    assert_eq!(c.max_mode, Mode::Plan);
    assert_eq!(c.model_set_by, None);
}

#[test]
fn workspace_cannot_raise_output_caps_and_its_model_choice_is_visible() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    write(
        home.path(),
        "config.toml",
        "workspace_models = [\"openai/gpt-5\"]\n[tools]\noutput_max_bytes = 1000\noutput_max_lines = 10\n",
    );
    write(
        ws.path(),
        ".ferrite/config.toml",
        "model = \"openai/gpt-5\"\n[tools]\noutput_max_bytes = 99999999\noutput_max_lines = 5\n",
    );
    let c = Config::load(home.path(), Some(ws.path())).unwrap();
    assert_eq!(c.tools.output_max_bytes, 1000);
    assert_eq!(c.tools.output_max_lines, 5);
    assert_eq!(c.model.as_deref(), Some("openai/gpt-5"));
    assert_eq!(c.model_set_by, Some(ws.path().join(".ferrite/config.toml")));
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("chosen by this workspace"))
    );
}

#[test]
fn a_workspace_chooses_only_models_the_user_config_allows() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let load = |user: &str, workspace: &str| {
        write(home.path(), "config.toml", user);
        write(ws.path(), ".ferrite/config.toml", workspace);
        Config::load(home.path(), Some(ws.path())).unwrap()
    };
    let user = "model = \"anthropic/claude-sonnet-4-5\"\n\
                workspace_models = [\"openai/gpt-5-mini\", \"ollama/*\"]\n\
                [subagent]\nmodel = \"anthropic/claude-haiku-4-5\"\n";
    // The user's own models and the listed ones (a whole provider with `provider/*`).
    for m in [
        "anthropic/claude-haiku-4-5",
        "openai/gpt-5-mini",
        "ollama/qwen3-coder:30b",
    ] {
        let c = load(
            user,
            &format!("model = \"{m}\"\n[subagent]\nmodel = \"{m}\"\n"),
        );
        assert_eq!(c.model.as_deref(), Some(m));
        assert_eq!(c.subagent.model.as_deref(), Some(m));
    }
    // Anything else is ignored with a warning that says what is allowed.
    let c = load(
        user,
        "model = \"anthropic/claude-opus-4-1\"\n[subagent]\nmodel = \"openai/gpt-5\"\n",
    );
    assert_eq!(c.model.as_deref(), Some("anthropic/claude-sonnet-4-5"));
    assert_eq!(
        c.subagent.model.as_deref(),
        Some("anthropic/claude-haiku-4-5")
    );
    assert_eq!(c.model_set_by, None);
    assert!(
        c.warnings.iter().any(
            |w| w.contains("`model = \"anthropic/claude-opus-4-1\"` ignored")
                && w.contains("ollama/*")
        ),
        "{:?}",
        c.warnings
    );
    assert!(c.warnings.iter().any(|w| w.contains("`subagent.model")));
    // With no model in the user config and no list, a workspace chooses none.
    let c = load("", "model = \"anthropic/claude-opus-4-1\"\n");
    assert_eq!(c.model, None);
    // Only the user config may list them; an entry must name a provider.
    let c = load(
        "",
        "workspace_models = [\"anthropic/*\"]\nmodel = \"anthropic/x\"\n",
    );
    assert_eq!(c.model, None);
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("`workspace_models` ignored"))
    );
    let bad = Config::from_user_toml("workspace_models = [\"gpt-5\"]\n", Path::new("c.toml"));
    assert!(bad.unwrap_err().to_string().contains("workspace_models"));
}

#[test]
fn a_malformed_rule_is_an_error_naming_rule_and_file() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    write(
        home.path(),
        "config.toml",
        "[permissions]\ndeny = [\"bash(rm -rf:*\"]\n",
    );
    let e = Config::load(home.path(), None).unwrap_err().to_string();
    assert!(
        e.contains("bash(rm -rf:*")
            && e.contains(&home.path().join("config.toml").display().to_string()),
        "{e}"
    );
    write(home.path(), "config.toml", "");
    write(
        ws.path(),
        ".ferrite/config.toml",
        "[permissions]\ndeny = [\"raed(**/.env)\"]\n",
    );
    let e = Config::load(home.path(), Some(ws.path()))
        .unwrap_err()
        .to_string();
    assert!(e.contains("raed(**/.env)") && e.contains(".ferrite"), "{e}");
}

#[test]
fn deny_read_defaults_expand_and_workspace_only_adds() {
    let c = Config::default();
    let paths = c.deny_read_paths(Some(Path::new("/home/me")));
    assert!(paths.contains(&PathBuf::from("/home/me/.ssh")));
    assert!(paths.contains(&PathBuf::from("/home/me/.docker/config.json")));
    assert_eq!(paths.len(), DEFAULT_DENY_READ.len());
    assert!(c.deny_read_paths(None).is_empty());

    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "[sandbox]\ndeny_read = [\"~/secret\", \"/etc/key\"]\n",
    )
    .unwrap();
    std::fs::create_dir_all(ws.path().join(".ferrite")).unwrap();
    std::fs::write(
        ws.path().join(".ferrite/config.toml"),
        "[sandbox]\ndeny_read = [\"/more\"]\n",
    )
    .unwrap();
    let c = Config::load(home.path(), Some(ws.path())).unwrap();
    assert_eq!(
        c.deny_read_paths(Some(Path::new("/h"))),
        vec![
            PathBuf::from("/h/secret"),
            PathBuf::from("/etc/key"),
            PathBuf::from("/more")
        ]
    );
    std::fs::write(
        home.path().join("config.toml"),
        "[sandbox]\ndeny_read = [\"relative\"]\n",
    )
    .unwrap();
    let err = Config::load(home.path(), None).unwrap_err().to_string();
    assert!(err.contains("deny_read"), "{err}");
}

#[test]
fn subagent_section_is_validated_and_a_workspace_only_lowers_parallelism() {
    let p = Path::new("config.toml");
    let c = Config::from_user_toml(
        "[subagent]\nmodel = \"openai/gpt-5-mini\"\nmax_parallel = 8\n",
        p,
    )
    .unwrap();
    assert_eq!(c.subagent.model.as_deref(), Some("openai/gpt-5-mini"));
    assert_eq!(c.subagent.max_parallel, 8);
    assert_eq!(Config::default().subagent.max_parallel, 4);
    for bad in ["[subagent]\nmax_parallel = 0\n", "[subagent]\nbudget = 3\n"] {
        assert!(Config::from_user_toml(bad, p).is_err(), "{bad}");
    }
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    write(home.path(), "config.toml", "[subagent]\nmax_parallel = 2\n");
    write(
        ws.path(),
        ".ferrite/config.toml",
        "[subagent]\nmax_parallel = 9\n",
    );
    let c = Config::load(home.path(), Some(ws.path())).unwrap();
    assert_eq!(c.subagent.max_parallel, 2, "a workspace cannot raise it");
}

#[test]
fn checkpoints_section_is_validated_and_a_workspace_only_narrows_it() {
    let p = Path::new("config.toml");
    let c =
        Config::from_user_toml("[checkpoints]\nmax_count = 5\nmax_file_bytes = 100\n", p).unwrap();
    assert_eq!(
        c.checkpoints,
        CheckpointsConfig {
            max_count: 5,
            max_file_bytes: 100,
            ..CheckpointsConfig::default()
        }
    );
    let caps = "[checkpoints]\nmax_session_bytes = 3145728\nmax_total_bytes = 4194304\n";
    let c = Config::from_user_toml(caps, p).unwrap();
    assert_eq!(
        (
            c.checkpoints.max_session_bytes,
            c.checkpoints.max_total_bytes
        ),
        (3 << 20, 4 << 20)
    );
    for bad in [
        "[checkpoints]\nmax_session_bytes = 1000\n",
        "[checkpoints]\nmax_total_bytes = 0\n",
        "[checkpoints]\nmax_file_bytes = 0\n",
        "[checkpoints]\nmax_count = 10001\n",
        "[checkpoints]\nkeep = 3\n",
    ] {
        assert!(Config::from_user_toml(bad, p).is_err(), "{bad}");
    }
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    write(
        home.path(),
        "config.toml",
        "[checkpoints]\nmax_count = 5\nmax_total_bytes = 4194304\n",
    );
    write(
        ws.path(),
        ".ferrite/config.toml",
        "[checkpoints]\nmax_count = 9\nmax_file_bytes = 1000\nmax_total_bytes = 99999999\nmax_session_bytes = 2097152\n",
    );
    let c = Config::load(home.path(), Some(ws.path())).unwrap();
    assert_eq!(c.checkpoints.max_count, 5, "a workspace cannot raise it");
    assert_eq!(c.checkpoints.max_file_bytes, 1000, "but may lower it");
    assert_eq!(c.checkpoints.max_total_bytes, 4 << 20);
    assert_eq!(c.checkpoints.max_session_bytes, 2 << 20);
}

#[test]
fn unix_sockets_and_the_spill_budget_come_from_the_user_file_only() {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "[sandbox]\nallow_unix_sockets = [\"~/dev.sock\", \"/run/x.sock\"]\n\n\
         [tools]\nspill_max_bytes = 1048576\n",
    )
    .unwrap();
    std::fs::create_dir_all(ws.path().join(".ferrite")).unwrap();
    std::fs::write(
        ws.path().join(".ferrite/config.toml"),
        "[sandbox]\nallow_unix_sockets = [\"/run/docker.sock\"]\n\n\
         [tools]\nspill_max_bytes = 999999999999\n",
    )
    .unwrap();
    let c = Config::load(home.path(), Some(ws.path())).unwrap();
    assert_eq!(
        c.allowed_unix_socket_paths(Some(Path::new("/h"))),
        vec![PathBuf::from("/h/dev.sock"), PathBuf::from("/run/x.sock")]
    );
    assert_eq!(c.tools.spill_max_bytes, 1_048_576);
    let warned = c.warnings.join("\n");
    assert!(
        warned.contains("allow_unix_sockets") && warned.contains("spill_max_bytes"),
        "{warned}"
    );
    assert_eq!(Config::default().tools.spill_max_bytes, 2 << 30);
    let p = Path::new("config.toml");
    let bad = |text: &str| Config::from_user_toml(text, p).unwrap_err().to_string();
    assert!(bad("[sandbox]\nallow_unix_sockets = [\"rel.sock\"]\n").contains("allow_unix_sockets"));
    assert!(bad("[tools]\nspill_max_bytes = 10\n").contains("spill_max_bytes"));
}
