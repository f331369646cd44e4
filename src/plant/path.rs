//! JSON paths, the `fields:` of `corrupt`: the part of JSONPath (RFC 9535) that names
//! values in a body: `$`, `.key`, `['key']` / `["key"]`, `[n]`, `[*]` / `.*` and `..key` /
//! `..*` (at any depth). Parsed once, with an error that says where and what was expected;
//! a selection gives the locations it names in document order, each once. Locations are
//! written back as paths (`$.results[2].price`) on what is recorded.

use serde_json::Value;

use super::PlantError;

/// At most this many locations a path selects (each step's), in document order.
const MAX_SELECTED: usize = 100_000;

/// A parsed JSON path.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath {
    text: String,
    steps: Vec<Step>,
}

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
    /// `[*]` / `.*`: every member or element.
    Any,
    /// `..key` (`Some`) or `..*` (`None`): at any depth below.
    Descend(Option<String>),
}

/// One step of a location in a document: an object's key or an array's index.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Seg {
    Key(String),
    Index(usize),
}

impl JsonPath {
    /// Parses `text`; the error says what is wrong and at which character (from 1).
    pub fn parse(text: &str) -> Result<JsonPath, PlantError> {
        let chars: Vec<char> = text.chars().collect();
        if chars.first() != Some(&'$') {
            return Err("a path starts with `$` (the whole body), e.g. `$.current.temp_c`".into());
        }
        let mut p = Parser { chars, at: 1 };
        let mut steps = vec![];
        while p.at < p.chars.len() {
            steps.push(p.step()?);
        }
        Ok(JsonPath {
            text: text.to_string(),
            steps,
        })
    }

    /// The path as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The locations this path names in `root`, in document order, each once.
    pub fn select(&self, root: &Value) -> Vec<Vec<Seg>> {
        let mut current: Vec<Vec<Seg>> = vec![vec![]];
        for step in &self.steps {
            let mut next = vec![];
            for loc in &current {
                if let Some(v) = get(root, loc) {
                    take(step, v, loc, &mut next);
                }
            }
            let mut seen = std::collections::HashSet::new();
            next.retain(|l| seen.insert(l.clone()));
            // `..*` on a large body names every node: what is planted is bounded anyway.
            next.truncate(MAX_SELECTED);
            current = next;
        }
        current
    }
}

/// The locations `step` takes from `v` (at `loc`), added to `out`.
fn take(step: &Step, v: &Value, loc: &[Seg], out: &mut Vec<Vec<Seg>>) {
    let with = |s: Seg| {
        let mut l = loc.to_vec();
        l.push(s);
        l
    };
    match (step, v) {
        (Step::Key(k), Value::Object(m)) if m.contains_key(k) => {
            out.push(with(Seg::Key(k.clone())))
        }
        (Step::Index(i), Value::Array(a)) if *i < a.len() => out.push(with(Seg::Index(*i))),
        (Step::Any, Value::Object(m)) => out.extend(m.keys().map(|k| with(Seg::Key(k.clone())))),
        (Step::Any, Value::Array(a)) => out.extend((0..a.len()).map(|i| with(Seg::Index(i)))),
        (Step::Descend(name), _) => descend(v, &mut loc.to_vec(), name.as_deref(), out),
        (Step::Key(_) | Step::Index(_) | Step::Any, _) => {}
    }
}

/// Every location below `v` named `name` (any with `None`), depth first in document order.
fn descend(v: &Value, loc: &mut Vec<Seg>, name: Option<&str>, out: &mut Vec<Vec<Seg>>) {
    let children: Vec<(Seg, &Value)> = match v {
        Value::Object(m) => m.iter().map(|(k, c)| (Seg::Key(k.clone()), c)).collect(),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .map(|(i, c)| (Seg::Index(i), c))
            .collect(),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => vec![],
    };
    for (seg, child) in children {
        if out.len() >= MAX_SELECTED {
            return;
        }
        let named = match (&seg, name) {
            (_, None) => true,
            (Seg::Key(k), Some(n)) => k == n,
            (Seg::Index(_), Some(_)) => false,
        };
        loc.push(seg);
        if named {
            out.push(loc.clone());
        }
        descend(child, loc, name, out);
        loc.pop();
    }
}

/// The value at `loc` in `v`.
pub fn get<'a>(v: &'a Value, loc: &[Seg]) -> Option<&'a Value> {
    loc.iter().try_fold(v, |v, seg| match seg {
        Seg::Key(k) => v.get(k.as_str()),
        Seg::Index(i) => v.get(*i),
    })
}

/// The value at `loc` in `v`, to change it.
pub fn get_mut<'a>(v: &'a mut Value, loc: &[Seg]) -> Option<&'a mut Value> {
    loc.iter().try_fold(v, |v, seg| match seg {
        Seg::Key(k) => v.get_mut(k.as_str()),
        Seg::Index(i) => v.get_mut(*i),
    })
}

/// `loc` written as a path below `root` (`$`, or where the document sits: `$.result.
/// structuredContent`): `.key` for a plain key, `['odd key']` otherwise, `[n]`.
pub fn render(root: &str, loc: &[Seg]) -> String {
    let mut out = root.to_string();
    for seg in loc {
        match seg {
            Seg::Key(k) if plain(k) => {
                out.push('.');
                out.push_str(k);
            }
            Seg::Key(k) => {
                out.push_str("['");
                out.push_str(&k.replace('\\', "\\\\").replace('\'', "\\'"));
                out.push_str("']");
            }
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// A key written `.key`: a letter or `_`, then letters, digits or `_`.
fn plain(k: &str) -> bool {
    let mut chars = k.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

struct Parser {
    chars: Vec<char>,
    at: usize,
}

impl Parser {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.at + ahead).copied()
    }

    /// `what` at the current character (counted from 1).
    fn error(&self, what: &str) -> String {
        format!("{what} at character {}", self.at + 1)
    }

    fn step(&mut self) -> Result<Step, String> {
        match (self.peek(0), self.peek(1)) {
            (Some('.'), Some('.')) => {
                self.at += 2;
                match self.peek(0) {
                    Some('*') => {
                        self.at += 1;
                        Ok(Step::Descend(None))
                    }
                    Some('[') => match self.bracket()? {
                        Step::Key(k) => Ok(Step::Descend(Some(k))),
                        Step::Any => Ok(Step::Descend(None)),
                        Step::Index(_) | Step::Descend(_) => {
                            Err("`..` takes a key or `*`, not an index".into())
                        }
                    },
                    Some(_) | None => Ok(Step::Descend(Some(self.name()?))),
                }
            }
            (Some('.'), Some('*')) => {
                self.at += 2;
                Ok(Step::Any)
            }
            (Some('.'), _) => {
                self.at += 1;
                Ok(Step::Key(self.name()?))
            }
            (Some('['), _) => self.bracket(),
            (Some(c), _) => {
                Err(self.error(&format!("unexpected `{c}`: expected `.`, `..` or `[`")))
            }
            (None, _) => Err(self.error("unexpected end")),
        }
    }

    /// A bare key after `.`: up to the next `.` or `[`.
    fn name(&mut self) -> Result<String, String> {
        let start = self.at;
        while let Some(c) = self.peek(0).filter(|c| !matches!(c, '.' | '[')) {
            if c.is_whitespace() || matches!(c, ']' | '\'' | '"' | '*') {
                return Err(self.error(&format!(
                    "`{c}` cannot be in a bare key (quote the key: `['…']`)"
                )));
            }
            self.at += 1;
        }
        if self.at == start {
            return Err(self.error("expected a key after `.`"));
        }
        Ok(self.chars[start..self.at].iter().collect())
    }

    /// `[*]`, `[n]` or `['key']` / `["key"]`.
    fn bracket(&mut self) -> Result<Step, String> {
        let open = self.at;
        self.at += 1;
        let step = match self.peek(0) {
            Some('*') => {
                self.at += 1;
                Step::Any
            }
            Some(q @ ('\'' | '"')) => Step::Key(self.quoted(q, open)?),
            Some(c) if c.is_ascii_digit() => Step::Index(self.index()?),
            Some('-') => return Err(self.error("negative indexes are not supported")),
            Some(_) => return Err(self.error("expected a number, `*` or a quoted key after `[`")),
            None => return Err(format!("unclosed `[` at character {}", open + 1)),
        };
        match self.peek(0) {
            Some(']') => {
                self.at += 1;
                Ok(step)
            }
            Some(_) => Err(self.error("expected `]`")),
            None => Err(format!("unclosed `[` at character {}", open + 1)),
        }
    }

    fn index(&mut self) -> Result<usize, String> {
        let start = self.at;
        while self.peek(0).is_some_and(|c| c.is_ascii_digit()) {
            self.at += 1;
        }
        let digits: String = self.chars[start..self.at].iter().collect();
        digits
            .parse()
            .map_err(|_| format!("index `{digits}` is too large"))
    }

    /// A quoted key; `\` escapes the next character.
    fn quoted(&mut self, quote: char, open: usize) -> Result<String, String> {
        self.at += 1;
        let mut key = String::new();
        loop {
            match self.peek(0) {
                Some('\\') => {
                    let c = self
                        .peek(1)
                        .ok_or_else(|| self.error("unfinished escape"))?;
                    key.push(c);
                    self.at += 2;
                }
                Some(c) if c == quote => {
                    self.at += 1;
                    return Ok(key);
                }
                Some(c) => {
                    key.push(c);
                    self.at += 1;
                }
                None => return Err(format!("unclosed `[` at character {}", open + 1)),
            }
        }
    }
}

#[cfg(test)]
#[path = "path_tests.rs"]
mod tests;
