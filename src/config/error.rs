//! Config problems, each tied to the path of the value that caused it.

use std::fmt;

/// One problem in the configuration.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ConfigError {
    /// Dotted path with list indexes, e.g. `proxy.users[1].password`; empty for the file.
    pub path: String,
    pub message: String,
}

impl ConfigError {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// The most problems an answer lists: a file or body with thousands of broken entries
/// gets the first ones and a count, not megabytes of errors.
pub const MAX_LISTED: usize = 50;

/// `errors` without repeats (the same message at the same path), at most [`MAX_LISTED`] of
/// them, and how many more there were.
pub fn capped(errors: Vec<ConfigError>) -> (Vec<ConfigError>, usize) {
    let mut kept: Vec<ConfigError> = Vec::with_capacity(errors.len().min(MAX_LISTED));
    let mut seen = std::collections::HashSet::new();
    let mut more = 0;
    for e in errors {
        if !seen.insert(e.clone()) {
            continue;
        }
        if kept.len() < MAX_LISTED {
            kept.push(e);
        } else {
            more += 1;
        }
    }
    (kept, more)
}

/// Every problem found (the first [`MAX_LISTED`]); never empty.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigErrors {
    /// Where the configuration came from (file path or "defaults").
    pub source_name: String,
    pub errors: Vec<ConfigError>,
    /// Problems found beyond those listed.
    pub omitted: usize,
}

impl ConfigErrors {
    /// `errors` of `source_name`, repeats dropped and capped (`capped`).
    pub fn new(source_name: impl Into<String>, errors: Vec<ConfigError>) -> ConfigErrors {
        let (errors, omitted) = capped(errors);
        ConfigErrors {
            source_name: source_name.into(),
            errors,
            omitted,
        }
    }
}

impl ConfigErrors {
    /// The first line alone: where, and how many problems (`… has 3 errors`).
    pub fn summary(&self) -> String {
        let n = self.errors.len() + self.omitted;
        let plural = if n == 1 { "" } else { "s" };
        format!("{} has {n} error{plural}", self.source_name)
    }
}

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}:", self.summary())?;
        for e in &self.errors {
            writeln!(f, "  - {e}")?;
        }
        if self.omitted > 0 {
            writeln!(
                f,
                "  … and {} more, not listed: fix these, then check it again",
                self.omitted
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_are_dropped_and_the_list_is_capped_with_a_count() {
        let same = ConfigError::new("a", "duplicate key");
        let many: Vec<ConfigError> = (0..200)
            .map(|i| ConfigError::new(format!("x[{i}]"), "bad"))
            .chain(std::iter::repeat_n(same, 1000))
            .collect();
        let e = ConfigErrors::new("body", many);
        assert_eq!((e.errors.len(), e.omitted), (MAX_LISTED, 151));
        let text = e.to_string();
        assert!(text.starts_with("body has 201 errors:"), "{text}");
        assert!(text.ends_with("… and 151 more, not listed: fix these, then check it again\n"));
    }
}
