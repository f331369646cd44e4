//! `flakestorm migrate FILE [-o OUT]`: a Flakestorm v2 file in the current form
//! (`config::migrate`), checked as `validate` checks before anything is written, what
//! changed said on stderr. It never writes over a file.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use crate::config::{self, Overrides};

pub(super) fn migrate(file: &Path, output: Option<&Path>) -> ExitCode {
    match run(file, output) {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("flakestorm: {why}");
            ExitCode::from(2)
        }
    }
}

fn run(file: &Path, output: Option<&Path>) -> Result<(), String> {
    if let Some(out) = output
        && out.symlink_metadata().is_ok()
    {
        return Err(format!(
            "{}: exists; migrate never writes over a file (choose another path, or remove it)",
            out.display()
        ));
    }
    let text = crate::files::read_to_string(file, crate::files::Limit::Config)
        .map_err(|e| format!("cannot read {}: {}", file.display(), e.reason()))?;
    let vars = std::env::vars().collect();
    // What does not carry over from v2 is the loader's to say, each at its path.
    if let Err(errors) = config::load_for_validation(Some(file), &Overrides::default(), &vars) {
        eprint!("flakestorm: {errors}");
        return Err(format!(
            "migrate: nothing written: {} must load before it can be migrated (the errors \
             above; docs/v2.md says what each v2 feature became)",
            file.display()
        ));
    }
    let migrated =
        config::migrate::migrate(&text).map_err(|e| format!("migrate: {}: {e}", file.display()))?;
    // The result is checked where it will live: its relative paths are read from there.
    let target = output.unwrap_or(file);
    let base = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = target.display().to_string();
    let checked = config::validate_text(&migrated.text, &name, base, &vars).map_err(|e| {
        format!(
            "migrate: nothing written: the migrated file would not load:\n{e}(relative paths \
             are read from {}: write it beside {})",
            base.display(),
            file.display()
        )
    })?;
    for change in &migrated.changes {
        eprintln!("flakestorm: migrate: {change}");
    }
    if migrated.changes.is_empty() {
        eprintln!(
            "flakestorm: migrate: nothing to change: {} is in the current form",
            file.display()
        );
    }
    for w in &checked.warnings {
        eprintln!("flakestorm: warning: {w}");
    }
    match output {
        Some(out) => {
            write_new(out, &migrated.text)
                .map_err(|e| format!("cannot write {}: {e}", out.display()))?;
            eprintln!(
                "flakestorm: migrate: wrote {} (it loads; `flakestorm validate -c {}` checks it)",
                out.display(),
                out.display()
            );
        }
        None => print!("{}", migrated.text),
    }
    Ok(())
}

/// Writes `text` to a file that must not exist yet (a file that appeared since the check
/// is not replaced either).
fn write_new(path: &Path, text: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()
}
