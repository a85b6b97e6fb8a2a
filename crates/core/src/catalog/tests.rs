use super::*;
use std::path::Path;

#[test]
fn no_keys_means_no_default() {
    let c = Catalog::build(&Config::default(), &Env::default(), &Credentials::default());
    assert_eq!(
        c.default_model(&Config::default(), &Env::default()),
        DefaultModel::NoneConfigured
    );
    assert!(
        c.unusable_reason("anthropic/claude-sonnet-4-5")
            .unwrap()
            .contains("ANTHROPIC_API_KEY")
    );
    assert_eq!(c.unusable_reason("ollama/qwen3-coder"), None);
    let need = c.nothing_configured();
    assert!(need.env.contains(&"ANTHROPIC_API_KEY".to_owned()));
    assert!(need.env.contains(&"FERRITE_MODEL".to_owned()));
    assert_eq!(need.login_providers, ["anthropic", "openai", "openai-chat"]);
}

#[test]
fn first_provider_with_a_key_wins_and_env_beats_config() {
    let env = Env::from_pairs([("OPENAI_API_KEY", "k")]);
    let c = Catalog::build(&Config::default(), &env, &Credentials::default());
    assert_eq!(
        c.default_model(&Config::default(), &env),
        DefaultModel::Chosen("openai/gpt-5.5".into())
    );
    let cfg = Config {
        model: Some("openai/gpt-4.1".into()),
        ..Config::default()
    };
    assert_eq!(
        c.default_model(&cfg, &env),
        DefaultModel::Chosen("openai/gpt-4.1".into())
    );
    let env2 = Env::from_pairs([
        ("OPENAI_API_KEY", "k"),
        ("FERRITE_MODEL", "ollama/qwen3-coder"),
    ]);
    assert_eq!(
        c.default_model(&cfg, &env2),
        DefaultModel::Chosen("ollama/qwen3-coder".into())
    );
}

#[test]
fn any_model_of_a_known_provider_resolves() {
    let c = Catalog::build(&Config::default(), &Env::default(), &Credentials::default());
    let m = c.resolve("ollama/qwen3-coder:30b").unwrap();
    assert_eq!(
        (m.provider.as_str(), m.model.as_str()),
        ("ollama", "qwen3-coder:30b")
    );
    assert_eq!(m.source, FactSource::Default);
    assert_eq!(m.max_output_tokens, None);
    assert_eq!(m.context_window, DEFAULT_CONTEXT_WINDOW);
    let m = c.resolve("openai-chat/anthropic/claude-x:free").unwrap();
    assert_eq!(m.model, "anthropic/claude-x:free");
    let m = c.resolve("anthropic/claude-haiku-4-5-20251001").unwrap();
    assert_eq!(m.source, FactSource::Catalog);
    assert_eq!(m.model, "claude-haiku-4-5-20251001");
    assert_eq!(m.max_output_tokens, Some(64_000));
    let m = c.resolve("anthropic/claude-someday-9").unwrap();
    assert_eq!(m.max_output_tokens, Some(DEFAULT_ANTHROPIC_MAX_OUTPUT));
    assert_eq!(m.reasoning, ReasoningStyle::Adaptive);
    let m = c.resolve("openai-chat/gpt-4o").unwrap();
    assert!(!m.web_search);
    assert_eq!(m.max_output_tokens, Some(16_384));
    let e = c.resolve("nobody/x").unwrap_err().to_string();
    assert!(e.contains("anthropic, openai, openai-chat, ollama"), "{e}");
    assert!(matches!(
        c.resolve("gpt-5"),
        Err(ModelIdError::Malformed(_))
    ));
    assert!(matches!(
        c.resolve("openai/"),
        Err(ModelIdError::Malformed(_))
    ));
}

#[test]
fn config_entries_override_catalog_facts() {
    let cfg = Config::from_user_toml(
        "[providers.anthropic]\nmodels = [{ id = \"claude-sonnet-4-5\", max_output_tokens = 1000, price = { input = 1.0, output = 2.0 } }, { id = \"claude-new\", context_window = 5000, reasoning = false }]\n",
        Path::new("/c.toml"),
    )
    .unwrap();
    let env = Env::from_pairs([("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")]);
    let c = Catalog::build(&cfg, &env, &Credentials::default());
    assert_eq!(
        c.provider("anthropic").unwrap().base_url,
        "http://127.0.0.1:1"
    );
    let m = c.resolve("anthropic/claude-sonnet-4-5").unwrap();
    assert_eq!(m.max_output_tokens, Some(1000));
    assert_eq!(m.context_window, 200_000);
    assert_eq!(m.price.unwrap().input, 1.0);
    assert_eq!(m.source, FactSource::Config);
    let m = c.resolve("anthropic/claude-new").unwrap();
    assert_eq!(m.context_window, 5000);
    assert_eq!(m.reasoning, ReasoningStyle::None);
}

#[test]
fn cost_counts_cache_reads_and_writes_at_their_rates() {
    let p = Price {
        input: 3.0,
        output: 15.0,
        cache_read: Some(0.3),
        cache_write: Some(3.75),
    };
    let u = Usage {
        input_tokens: 1_000_000 + 2_000_000 + 1_000_000,
        output_tokens: 100_000,
        cached_input_tokens: 2_000_000,
        cache_write_tokens: 1_000_000,
        reasoning_tokens: 0,
    };
    let cost = p.cost(&u);
    assert!((cost - (3.0 + 0.6 + 3.75 + 1.5)).abs() < 1e-9, "{cost}");
}

#[test]
fn listings_add_models_and_facts() {
    let env = Env::from_pairs([("OLLAMA_HOST", "127.0.0.1:5")]);
    let c = Catalog::build(&Config::default(), &env, &Credentials::default());
    let mut l = Listings::default();
    l.providers.insert(
        "ollama".into(),
        ProviderListing {
            base_url: "http://127.0.0.1:5/v1".into(),
            fetched_at: 0,
            models: vec![ListedModel {
                id: "llama3.2:latest".into(),
                context_window: Some(131_072),
                max_output_tokens: None,
                images: None,
            }],
        },
    );
    let c = c.with_listings(&l);
    assert_eq!(
        c.default_model(&Config::default(), &env),
        DefaultModel::Chosen("ollama/llama3.2:latest".into()),
        "with no key, a model a local server listed is the default"
    );
    let m = c.resolve("ollama/llama3.2:latest").unwrap();
    assert_eq!((m.context_window, m.source), (131_072, FactSource::Listing));
    assert!(
        c.usable_models()
            .iter()
            .any(|m| m.id == "ollama/llama3.2:latest")
    );
    assert!(!c.usable_models().iter().any(|m| m.provider == "anthropic"));
}

#[test]
fn configured_providers_and_base_urls() {
    let cfg = Config::from_user_toml(
        "[providers.local]\napi = \"openai-chat\"\nbase_url = \"http://127.0.0.1:9/v1/\"\nmodels = [{ id = \"m\", context_window = 1000 }]\n",
        Path::new("/c.toml"),
    )
    .unwrap();
    let env = Env::from_pairs([
        ("ANTHROPIC_BASE_URL", "http://127.0.0.1:1/"),
        ("OLLAMA_HOST", "127.0.0.1:5"),
    ]);
    let c = Catalog::build(&cfg, &env, &Credentials::default());
    assert_eq!(c.model("local/m").unwrap().context_window, 1000);
    assert_eq!(
        c.provider("local").unwrap().base_url,
        "http://127.0.0.1:9/v1"
    );
    assert_eq!(
        c.provider("anthropic").unwrap().base_url,
        "http://127.0.0.1:1"
    );
    assert_eq!(
        c.provider("ollama").unwrap().base_url,
        "http://127.0.0.1:5/v1"
    );
    assert!(c.is_usable("local"));
}
