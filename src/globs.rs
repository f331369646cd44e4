//! Glob semantics shared by validation and the runtime matchers: URL globs match the whole
//! URL (`scheme://host[:port]/path?query`) and `*` crosses `/`; host globs match a host
//! name case-insensitively. `HostGlobs` (`proxy.intercept`, `proxy.passthrough`) and
//! `UrlGlobs` (`tools[].match_url`, `llm[].match_url`) are compiled once, as the config is
//! read: validation reports their bad patterns, the proxy builds its matchers from the
//! compiled globs.

use std::sync::Arc;

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Why a pattern is not a glob: globset's reason alone (the caller names the pattern).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct GlobError(globset::ErrorKind);

impl From<globset::Error> for GlobError {
    fn from(e: globset::Error) -> GlobError {
        GlobError(e.kind().clone())
    }
}

pub fn url_glob(pattern: &str) -> Result<Glob, GlobError> {
    Ok(GlobBuilder::new(pattern).literal_separator(false).build()?)
}

pub fn host_glob(pattern: &str) -> Result<Glob, GlobError> {
    Ok(GlobBuilder::new(pattern)
        .case_insensitive(true)
        .literal_separator(false)
        .build()?)
}

/// Host globs (`proxy.intercept`, `proxy.passthrough`), compiled when read. Reads and
/// compares as the list of patterns it was written as.
#[derive(Clone)]
pub struct HostGlobs(Arc<HostGlobsInner>);

struct HostGlobsInner {
    patterns: Vec<String>,
    /// The set of every pattern, or the first bad one: (index, why).
    set: Result<GlobSet, (usize, GlobError)>,
    /// Every bad pattern: (index, why).
    bad: Vec<(usize, GlobError)>,
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
            None => b.build().map_err(|e| (0, e.into())),
        };
        HostGlobs(Arc::new(HostGlobsInner { patterns, set, bad }))
    }

    /// The compiled set; Err names the first bad pattern (loading reported them all).
    pub fn set(&self) -> Result<&GlobSet, (usize, GlobError)> {
        self.0.set.as_ref().map_err(Clone::clone)
    }

    /// Every pattern that did not compile: (index, why).
    pub fn bad(&self) -> &[(usize, GlobError)] {
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

/// One string or a list of strings (`match_url: "https://x/*"` or a list).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    pub fn as_slice(&self) -> &[String] {
        match self {
            OneOrMany::One(s) => std::slice::from_ref(s),
            OneOrMany::Many(v) => v,
        }
    }
}

/// URL globs (`tools[].match_url`, `llm[].match_url`), compiled when read. Reads, writes
/// and compares as it was written (one pattern or a list).
#[derive(Clone)]
pub struct UrlGlobs(Arc<UrlGlobsInner>);

struct UrlGlobsInner {
    written: OneOrMany,
    /// Each pattern's glob, in order, or why it is not one.
    globs: Vec<Result<Glob, GlobError>>,
}

impl UrlGlobs {
    pub fn new(written: OneOrMany) -> UrlGlobs {
        let globs = written.as_slice().iter().map(|p| url_glob(p)).collect();
        UrlGlobs(Arc::new(UrlGlobsInner { written, globs }))
    }

    /// The compiled globs, in order (loading reported the bad ones; they are left out).
    pub fn globs(&self) -> impl Iterator<Item = &Glob> {
        self.0.globs.iter().filter_map(|g| g.as_ref().ok())
    }

    /// Every pattern that did not compile: (index, why).
    pub fn bad(&self) -> Vec<(usize, GlobError)> {
        let bad = self.0.globs.iter().enumerate();
        bad.filter_map(|(i, g)| g.as_ref().err().map(|e| (i, e.clone())))
            .collect()
    }
}

impl From<&str> for UrlGlobs {
    fn from(pattern: &str) -> UrlGlobs {
        UrlGlobs::new(OneOrMany::One(pattern.into()))
    }
}

impl std::ops::Deref for UrlGlobs {
    type Target = [String];

    fn deref(&self) -> &[String] {
        self.0.written.as_slice()
    }
}

impl std::fmt::Debug for UrlGlobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.written.fmt(f)
    }
}

impl PartialEq for UrlGlobs {
    fn eq(&self, other: &Self) -> bool {
        self.0.written == other.0.written
    }
}

impl Serialize for UrlGlobs {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.written.serialize(s)
    }
}

/// Read as one string or a list (same errors), compiled as it is read; a bad pattern is
/// kept for validation to report with its index.
impl<'de> Deserialize<'de> for UrlGlobs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        OneOrMany::deserialize(d).map(UrlGlobs::new)
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

    #[test]
    fn url_globs_compile_once_and_keep_every_bad_pattern() {
        let one = UrlGlobs::from("https://api.x/*");
        assert_eq!(one.globs().count(), 1);
        assert!(
            one.globs()
                .next()
                .unwrap()
                .compile_matcher()
                .is_match("https://api.x/a/b")
        );
        assert_eq!(serde_json::to_value(&one).unwrap(), "https://api.x/*");
        let many = UrlGlobs::new(OneOrMany::Many(vec!["a[".into(), "ok".into(), "b{".into()]));
        assert_eq!(many.globs().count(), 1);
        let at: Vec<usize> = many.bad().iter().map(|(i, _)| *i).collect();
        assert_eq!(at, [0, 2]);
        assert_eq!(&*many, ["a[", "ok", "b{"]);
    }
}
