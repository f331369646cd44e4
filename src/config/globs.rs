//! Glob semantics shared by validation and the runtime matchers: URL globs match the whole
//! URL (`scheme://host[:port]/path?query`) and `*` crosses `/`; host globs match a host
//! name case-insensitively.

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};

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
}
