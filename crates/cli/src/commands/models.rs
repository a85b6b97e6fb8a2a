//! `ferrite models`: the models that can be used here, with their provider, context window and
//! where those facts come from (`docs/models.md`). Asks local and configured servers first, like the
//! editor's model list does in the background.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use ferrite_core::catalog::KeySource;
use ferrite_core::display::visible;
use ferrite_core::env::Env;
use ferrite_core::runtime::discovery;

pub fn run(home: PathBuf, env: Env) -> anyhow::Result<ExitCode> {
    let services = super::services(home, env);
    let cwd = std::env::current_dir().ok();
    let (config, catalog) = services.context(cwd.as_deref())?;
    let rt = super::runtime()?;
    rt.block_on(discovery::run(
        &services,
        &config,
        &catalog,
        discovery::DEFAULT_TIMEOUT,
    ));
    // Again, with what the servers just said.
    let (_, catalog) = services.context(cwd.as_deref())?;
    let mut out = std::io::stdout().lock();
    // The default model is listed whether or not a catalog or a listing knows it.
    let default = match catalog.default_model(&config, &services.env) {
        ferrite_core::catalog::DefaultModel::Chosen(m) => Some(m),
        ferrite_core::catalog::DefaultModel::NoneConfigured => None,
    };
    let usable = catalog.pickable_models(default.as_deref());
    if usable.is_empty() {
        writeln!(
            out,
            "No usable models. {}",
            ferrite_core::catalog::NO_PROVIDER_MESSAGE
        )?;
    } else {
        writeln!(
            out,
            "{:<44} {:<12} {:>9} {:>9}  SOURCE",
            "MODEL", "PROVIDER", "WINDOW", "MAX OUT"
        )?;
        for m in &usable {
            let max_out = m
                .max_output_tokens
                .map_or_else(|| "-".to_owned(), |v| v.to_string());
            // Ids from config or a listing: escaped so that none can rewrite the terminal.
            writeln!(
                out,
                "{:<44} {:<12} {:>9} {:>9}  {}",
                visible(&m.id),
                m.provider,
                m.context_window,
                max_out,
                m.source.id()
            )?;
        }
    }
    for p in catalog.keyed_providers() {
        if let KeySource::Env(vars) = &p.key_source
            && catalog.key(&p.name).is_none()
        {
            writeln!(
                out,
                "({}: no key; set {} or run `ferrite login {}` to use its models)",
                p.name,
                vars.join(" or "),
                p.name
            )?;
        }
    }
    writeln!(
        out,
        "Any other model of a known provider works too: provider/model (see docs/models.md)."
    )?;
    Ok(ExitCode::SUCCESS)
}
