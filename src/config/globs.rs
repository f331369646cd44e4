//! Glob semantics shared by validation and the runtime matchers: URL globs match the whole
//! URL (`scheme://host[:port]/path?query`) and `*` crosses `/`; host globs match a host
//! name case-insensitively. `HostGlobs` is a list of host globs compiled once, as the
//! config is read: validation reports its bad patterns, the proxy matches with its set.

use std::sync::Arc;

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub fn url_glob(pattern: &str) -> Result<Glob, String> {
    GlobBuilder::new(pattern)
        .literal_separator(false)
        .build()
        .map_err(|e| e.kind().to_string())
}

pub fn host_glob(pattern: &str) -> Result<Glob, String> {
    GlobBuilder::new(pattern)
        .case_insensitive(true)
        .literal_separator(false)
        .build()
        .map_err(|e| e.kind().to_string())
}

/// One set from many patterns; the error names the first bad pattern's index.
pub fn set(
    patterns: &[String],
    build: fn(&str) -> Result<Glob, String>,
) -> Result<GlobSet, (usize, String)> {
    let mut b = GlobSetBuilder::new();
    for (i, p) in patterns.iter().enumerate() {
        b.add(build(p).map_err(|e| (i, e))?);
    }
    b.build().map_err(|e| (0, e.to_string()))
}

/// Host globs (`proxy.intercept`, `proxy.passthrough`), compiled when read. Reads and
/// compares as the list of patterns it was written as.
#[derive(Clone)]
pub struct HostGlobs(Arc<HostGlobsInner>);

struct HostGlobsInner {
    patterns: Vec<String>,
    /// The set of every pattern, or the first bad one: (index, why).
    set: Result<GlobSet, (usize, String)>,
    /// Every bad pattern: (index, why).
    bad: Vec<(usize, String)>,
}

impl HostGlobs {
    pub fn new(patterns: Vec<String>) -> HostGlobs {
        let mut bad = vec![];
        let mut b = GlobSetBuilder::new();
        for (i, p) in patterns.iter().enumerate() {
            match host_glob(p) {
                Ok(g) => {
                    b.add(g);
                }
                Err(e) => bad.push((i, e)),
            }
        }
        let set = match bad.first() {
            Some(first) => Err(first.clone()),
            None => b.build().map_err(|e| (0, e.to_string())),
        };
        HostGlobs(Arc::new(HostGlobsInner { patterns, set, bad }))
    }

    /// The compiled set; Err names the first bad pattern (loading reported them all).
    pub fn set(&self) -> Result<&GlobSet, (usize, String)> {
        self.0.set.as_ref().map_err(Clone::clone)
    }

    /// Every pattern that did not compile: (index, why).
    pub fn bad(&self) -> &[(usize, String)] {
        &self.0.bad
    }
}

impl std::ops::Deref for HostGlobs {
    type Target = [String];

    fn deref(&self) -> &[String] {
        &self.0.patterns
    }
}

impl std::fmt::Debug for HostGlobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.patterns.fmt(f)
    }
}

impl PartialEq for HostGlobs {
    fn eq(&self, other: &Self) -> bool {
        self.0.patterns == other.0.patterns
    }
}

impl<const N: usize> PartialEq<[&str; N]> for HostGlobs {
    fn eq(&self, other: &[&str; N]) -> bool {
        self.0
            .patterns
            .iter()
            .map(String::as_str)
            .eq(other.iter().copied())
    }
}

impl Serialize for HostGlobs {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.patterns.serialize(s)
    }
}

/// Read as a list of strings (same errors), compiled as it is read; a bad pattern is kept
/// for validation to report with its index.
impl<'de> Deserialize<'de> for HostGlobs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<String>::deserialize(d).map(HostGlobs::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn star_crosses_slashes_in_urls() {
        let g = url_glob("https://api.search.example/*")
            .unwrap()
            .compile_matcher();
        assert!(g.is_match("https://api.search.example/v1/search?q=x"));
        assert!(!g.is_match("https://api.search.example.evil/v1"));
        let h = host_glob("*.OpenAI.com").unwrap().compile_matcher();
        assert!(h.is_match("api.openai.com"));
        assert!(!h.is_match("openai.com.evil"));
    }

    #[test]
    fn host_globs_compile_once_and_keep_every_bad_pattern() {
        let ok = HostGlobs::new(vec!["*.openai.com".into(), "api.x".into()]);
        assert!(ok.set().unwrap().is_match("API.OpenAI.com"));
        assert_eq!(ok, ["*.openai.com", "api.x"]);
        let bad = HostGlobs::new(vec!["a[".into(), "ok".into(), "b{".into()]);
        let at: Vec<usize> = bad.bad().iter().map(|(i, _)| *i).collect();
        assert_eq!(at, [0, 2]);
        assert_eq!(bad.set().unwrap_err().0, 0);
    }
}
