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

/// The longest path and message a listed problem keeps: a 500 KB key quoted in a
/// duplicate-key error (and in the path of everything under it) would otherwise make the
/// answer ten times the size of the body that caused it. 50 of them stay under 64 KiB.
const MAX_PATH_CHARS: usize = 300;
const MAX_MESSAGE_CHARS: usize = 600;

/// Problems as they are found, kept as answers list them: repeats (the same message at the
/// same path) dropped, each path and message cut to a few hundred characters, the first
/// [`MAX_LISTED`] kept and the rest counted. Memory stays bounded whatever the count: a
/// 1 MiB text can hold 250,000 duplicate keys.
#[derive(Debug, Default)]
pub struct Found {
    pub errors: Vec<ConfigError>,
    /// Problems found beyond those kept.
    pub omitted: usize,
    /// Hashes of the problems met, for repeats: 8 bytes each however long the problem.
    seen: std::collections::HashSet<u64>,
}

impl Found {
    pub fn push(&mut self, e: ConfigError) {
        let e = trimmed(e);
        if !self.seen.insert(hash(&e)) {
            return;
        }
        if self.errors.len() >= MAX_LISTED {
            self.omitted += 1;
        } else {
            self.errors.push(e);
        }
    }

    /// The problem that ended the search (a syntax error), listed even past the cap, so
    /// that a reader filtering it out is left with an exact count.
    pub fn push_final(&mut self, e: ConfigError) {
        let e = trimmed(e);
        if self.seen.insert(hash(&e)) {
            self.errors.push(e);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    /// The problems kept as one line (`; ` between them) with the count of the rest: for
    /// answers that carry problems in a message rather than a list.
    pub fn one_line(&self) -> String {
        let mut text: Vec<String> = self.errors.iter().map(ToString::to_string).collect();
        if self.omitted > 0 {
            text.push(format!("… and {} more, not listed", self.omitted));
        }
        text.join("; ")
    }
}

fn hash(e: &ConfigError) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    BuildHasherDefault::<DefaultHasher>::default().hash_one(e)
}

fn trimmed(e: ConfigError) -> ConfigError {
    ConfigError {
        path: crate::text::cut(&e.path, MAX_PATH_CHARS),
        message: crate::text::cut(&e.message, MAX_MESSAGE_CHARS),
    }
}

impl FromIterator<ConfigError> for Found {
    fn from_iter<I: IntoIterator<Item = ConfigError>>(errors: I) -> Found {
        let mut found = Found::default();
        errors.into_iter().for_each(|e| found.push(e));
        found
    }
}

/// `errors` as [`Found`] keeps them, and how many more there were.
pub fn capped(errors: Vec<ConfigError>) -> (Vec<ConfigError>, usize) {
    let found: Found = errors.into_iter().collect();
    (found.errors, found.omitted)
}

/// `errors` as one line, capped as [`Found`] keeps them.
pub fn one_line(errors: Vec<ConfigError>) -> String {
    errors.into_iter().collect::<Found>().one_line()
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
    /// `errors` of `source_name`, repeats dropped and capped (`Found`).
    pub fn new(source_name: impl Into<String>, errors: Vec<ConfigError>) -> ConfigErrors {
        Self::found(source_name, errors.into_iter().collect())
    }

    /// The problems `found` of `source_name`.
    pub fn found(source_name: impl Into<String>, found: Found) -> ConfigErrors {
        ConfigErrors {
            source_name: source_name.into(),
            errors: found.errors,
            omitted: found.omitted,
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

    #[test]
    fn long_paths_and_messages_are_cut_so_fifty_stay_small() {
        let key = "k".repeat(100_000);
        let many: Vec<ConfigError> = (0..500)
            .map(|i| ConfigError::new(format!("{i}.{key}"), format!("{i}: bad `{key}`")))
            .collect();
        let (kept, more) = capped(many.clone());
        assert_eq!((kept.len(), more), (MAX_LISTED, 450));
        assert!(kept[0].path.ends_with('…') && kept[0].message.ends_with('…'));
        let line = one_line(many);
        assert!(line.len() < 64 * 1024, "{} bytes", line.len());
        assert!(line.ends_with("; … and 450 more, not listed"), "{line}");
        // Short ones are left whole.
        assert_eq!(one_line(vec![ConfigError::new("a.b", "bad")]), "a.b: bad");
    }
}
