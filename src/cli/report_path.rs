//! Where a run's report goes, settled before the run starts: `-o` naming a folder (one that
//! exists, a path ending in `/`, or a new path with no extension: a report is a `.json`
//! file, and `-o reports/trials` meant a folder) means the default file name inside it, and the nearest
//! existing folder on the way is proved writable, so a long run never ends unable to write
//! its report. Nothing is created until there is something to write. The agent's log
//! (`agent.command`) goes beside the report.

use std::path::{Path, PathBuf};

/// The report file for `-o arg` (or `default_dir/file`), checked: it can be written.
pub fn resolve(arg: Option<&Path>, default_dir: &Path, file: &str) -> Result<PathBuf, String> {
    let path = match arg {
        None => default_dir.join(file),
        Some(p) if folder(p) => p.join(file),
        Some(p) => p.to_path_buf(),
    };
    let bad = |why: String| format!("report path {}: {why}", path.display());
    if path.is_dir() {
        return Err(bad("is a folder".into()));
    }
    // The nearest folder that exists on the way must be one, and writable.
    let mut dir = path.parent();
    while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
        dir = d.parent();
    }
    let dir = dir
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        let why = format!("{} is not a folder, so it cannot hold one", dir.display());
        return Err(bad(why));
    }
    let probe = dir.join(format!(".flakestorm-write-test-{}", std::process::id()));
    std::fs::write(&probe, b"")
        .map_err(|e| bad(format!("{} is not writable: {e}", dir.display())))?;
    let _ = std::fs::remove_file(&probe);
    if path.exists() {
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(|e| bad(format!("cannot be overwritten: {e}")))?;
    }
    Ok(path)
}

/// Whether `-o p` names a folder: it is one, it ends in `/`, or it is new and has no
/// extension.
fn folder(p: &Path) -> bool {
    p.is_dir()
        || p.as_os_str().to_string_lossy().ends_with('/')
        || (p.extension().is_none() && !p.exists())
}

/// The agent's log beside `report`: `contract.json` → `contract.agent.log`.
pub fn agent_log(report: &Path) -> PathBuf {
    let stem = report
        .file_stem()
        .map_or_else(|| "report".into(), |s| s.to_string_lossy().into_owned());
    report.with_file_name(format!("{stem}.agent.log"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_means_inside_it_and_bad_paths_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir(d.join("existing")).unwrap();
        let got = |arg: &str| resolve(Some(&d.join(arg)), d, "contract.json");
        assert_eq!(got("existing").unwrap(), d.join("existing/contract.json"));
        assert_eq!(got("new/").unwrap(), d.join("new/contract.json"));
        assert!(
            !d.join("new").exists(),
            "nothing is created before there is a report"
        );
        assert_eq!(got("out/r.json").unwrap(), d.join("out/r.json"));
        // A new path without an extension is a folder to make, not a file named `trials`.
        assert_eq!(
            got("reports/trials").unwrap(),
            d.join("reports/trials/contract.json")
        );
        std::fs::write(d.join("plain"), "x").unwrap();
        assert_eq!(
            got("plain").unwrap(),
            d.join("plain"),
            "an existing file stays one"
        );
        assert_eq!(resolve(None, d, "ci.json").unwrap(), d.join("ci.json"));
        std::fs::write(d.join("file"), "x").unwrap();
        let err = got("file/r.json").unwrap_err();
        assert!(
            err.starts_with(&format!("report path {}", d.join("file/r.json").display()))
                && err.contains("is not a folder"),
            "{err}"
        );
        assert_eq!(agent_log(&d.join("out/r.json")), d.join("out/r.agent.log"));
    }
}
