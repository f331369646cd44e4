//! Paths in a config are relative to its file's folder (like compose files): the CA's
//! files, `data_dir`, reports, the upstream CA, session files and tapes.

use std::path::{Path, PathBuf};

use super::schema::Config;

/// Relative paths are relative to the config file's folder (like compose files).
pub(super) fn resolve_paths(c: &mut Config, base: &Path) {
    let fix = |p: &mut PathBuf| {
        if p.is_relative() {
            *p = base.join(&*p);
        }
    };
    fix(&mut c.ca.dir);
    for p in [
        &mut c.ca.cert_file,
        &mut c.ca.key_file,
        &mut c.ca.bundle_file,
    ]
    .into_iter()
    .flatten()
    {
        fix(p);
    }
    fix(&mut c.data_dir);
    fix(&mut c.output.path);
    if let Some(p) = c.proxy.upstream_ca_file.as_mut() {
        fix(p);
    }
    c.replays.base = base.to_path_buf();
    for s in &mut c.replays.sessions {
        match s {
            super::replays::SessionEntry::File(p) => fix(p),
            super::replays::SessionEntry::Inline(s) => {
                if let Some(t) = s.tape.as_mut() {
                    fix(t);
                }
            }
        }
    }
}
