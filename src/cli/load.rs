//! Loading the config a command names (or `flakestorm.yaml` in the working directory):
//! warnings printed, errors printed and turned into exit code 2; `validate`.

use std::path::Path;
use std::process::ExitCode;

use super::{ConfigArg, DEFAULT_CONFIG, OpenProxyArg};
use crate::config::{self, Loaded, Overrides};

/// The config a command names, else `flakestorm.yaml` in the working directory if any.
fn config_file(arg: &ConfigArg) -> Option<std::path::PathBuf> {
    arg.config.clone().or_else(|| {
        Path::new(DEFAULT_CONFIG)
            .exists()
            .then(|| DEFAULT_CONFIG.into())
    })
}

/// Loads the config, printing warnings; errors are printed and become exit code 2.
pub(super) fn load(arg: &ConfigArg, mut overrides: Overrides) -> Result<Loaded, ExitCode> {
    overrides.ca_dir = overrides.ca_dir.or_else(|| arg.ca_dir.clone());
    let file = config_file(arg);
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

/// `contract`: the file must also have a `contract:` section (`contract validate`). A
/// `${VAR}` that is not set is a warning here, not an error (`config::unset`): validating
/// needs no secret.
pub(super) fn validate(arg: &ConfigArg, contract: bool) -> ExitCode {
    let file = config_file(arg);
    let overrides = Overrides {
        ca_dir: arg.ca_dir.clone(),
        ..Overrides::default()
    };
    let vars = std::env::vars().collect();
    let v = match config::load_for_validation(file.as_deref(), &overrides, &vars) {
        Ok(v) => v,
        Err(errors) => {
            eprint!("flakestorm: {errors}");
            return ExitCode::from(2);
        }
    };
    for w in &v.warnings {
        eprintln!("flakestorm: warning: {w}");
    }
    let name = file.map_or_else(|| "built-in defaults".into(), |f| f.display().to_string());
    let Some(loaded) = v.loaded else {
        // A field that cannot be read hides the rest of its section: say so, not "ok".
        println!(
            "{name}: not fully checked: the fields above (and the rest of their sections) need \
             their variables' values; the other sections are valid"
        );
        return ExitCode::SUCCESS;
    };
    if contract && loaded.config.contract.is_none() {
        eprintln!("flakestorm: no `contract:` section to validate");
        return ExitCode::from(2);
    }
    // Valid YAML that `serve` would still refuse: said now, not at start-up.
    if let Err(e) = crate::daemon::open_proxy_rule(&loaded.config) {
        eprintln!("flakestorm: warning: serve and runs will refuse this config: {e}");
    }
    println!("{name}: ok");
    ExitCode::SUCCESS
}
