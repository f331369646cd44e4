//! Loading the config a command names (or `flakestorm.yaml` in the working directory):
//! warnings printed, errors printed and turned into exit code 2; `validate`.

use std::path::Path;
use std::process::ExitCode;

use super::{ConfigArg, DEFAULT_CONFIG, OpenProxyArg};
use crate::config::{self, Loaded, Overrides};

/// Loads the config, printing warnings; errors are printed and become exit code 2.
pub(super) fn load(arg: &ConfigArg, mut overrides: Overrides) -> Result<Loaded, ExitCode> {
    overrides.ca_dir = overrides.ca_dir.or_else(|| arg.ca_dir.clone());
    let file = arg.config.clone().or_else(|| {
        Path::new(DEFAULT_CONFIG)
            .exists()
            .then(|| DEFAULT_CONFIG.into())
    });
    match config::load(file.as_deref(), &overrides) {
        Ok(loaded) => {
            for w in &loaded.warnings {
                eprintln!("flakestorm: warning: {w}");
            }
            Ok(loaded)
        }
        Err(errors) => {
            eprint!("flakestorm: {errors}");
            Err(ExitCode::from(2))
        }
    }
}

/// `load` for a command that runs the daemon (`serve`, `record`): its listen addresses
/// and whether it may listen off loopback.
pub(super) fn load_daemon(
    arg: &ConfigArg,
    proxy_listen: Option<String>,
    control_listen: Option<String>,
    open: &OpenProxyArg,
) -> Result<Loaded, ExitCode> {
    let overrides = Overrides {
        proxy_listen,
        control_listen,
        ca_dir: arg.ca_dir.clone(),
    };
    let mut loaded = load(arg, overrides)?;
    loaded.config.allow_open_proxy = open.allow_open_proxy;
    Ok(loaded)
}

/// `contract`: the file must also have a `contract:` section (`contract validate`).
pub(super) fn validate(arg: &ConfigArg, contract: bool) -> ExitCode {
    match load(arg, Overrides::default()) {
        Ok(loaded) if contract && loaded.config.contract.is_none() => {
            eprintln!("flakestorm: no `contract:` section to validate");
            ExitCode::from(2)
        }
        Ok(loaded) => {
            // Valid YAML that `serve` would still refuse: said now, not at start-up.
            if let Err(e) = crate::daemon::open_proxy_rule(&loaded.config) {
                eprintln!("flakestorm: warning: serve and runs will refuse this config: {e}");
            }
            let name = loaded
                .file
                .map_or_else(|| "built-in defaults".into(), |f| f.display().to_string());
            println!("{name}: ok");
            ExitCode::SUCCESS
        }
        Err(code) => code,
    }
}
