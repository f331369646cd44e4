//! Where each mapping key of a YAML text is (line, column, character offset), by its
//! path, and where whatever follows its value starts: for edits to a user's own file
//! (`flakestorm migrate`) that keep the rest of it as it was.

use std::collections::HashMap;

use yaml_rust2::parser::{Event, Parser};

/// A path as segments: keys, and list indexes as decimal text.
pub(super) type Path = Vec<String>;

/// Where a key is in the text (character offsets, as the YAML parser counts), whether its
/// mapping is a `{…}` one, and where whatever follows its value starts.
#[derive(Clone, Copy, Debug)]
pub(super) struct KeyAt {
    pub line: usize,
    pub col: usize,
    pub index: usize,
    pub flow: bool,
    /// The next event after the value: the next key, or the end of the mapping.
    pub next: (usize, usize),
}

/// One open mapping or list while walking the events.
enum Frame {
    Map {
        path: Path,
        flow: bool,
        key: Option<String>,
    },
    Seq {
        path: Path,
        next: usize,
    },
}

/// Every mapping key of the document, by path.
// yaml-rust2's events: a foreign enum, where a catch-all arm is the point.
#[allow(clippy::wildcard_enum_match_arm)]
pub(super) fn locate(chars: &[char]) -> Result<HashMap<Path, KeyAt>, String> {
    let text: String = chars.iter().collect();
    let mut parser = Parser::new_from_str(&text);
    let mut stack: Vec<Frame> = vec![];
    let mut keys: HashMap<Path, KeyAt> = HashMap::new();
    // Keys whose value has ended, waiting for the position of the next event.
    let mut waiting: Vec<Path> = vec![];
    loop {
        let (event, mark) = parser.next_token().map_err(|e| e.to_string())?;
        for path in waiting.drain(..) {
            if let Some(k) = keys.get_mut(&path) {
                k.next = (mark.index(), mark.line());
            }
        }
        match event {
            Event::StreamEnd => break,
            Event::Scalar(value, ..) => {
                if let Some(Frame::Map { path, flow, key }) = stack.last_mut()
                    && key.is_none()
                {
                    let mut p = path.clone();
                    p.push(value.clone());
                    let at = KeyAt {
                        line: mark.line(),
                        col: mark.col(),
                        index: mark.index(),
                        flow: *flow,
                        next: (chars.len(), usize::MAX),
                    };
                    keys.insert(p, at);
                    *key = Some(value);
                    continue;
                }
                if let Some(p) = value_of(&mut stack) {
                    waiting.push(p);
                }
            }
            Event::MappingStart(..) => {
                let path = value_of(&mut stack).unwrap_or_default();
                let flow = chars.get(mark.index()) == Some(&'{');
                stack.push(Frame::Map {
                    path,
                    flow,
                    key: None,
                });
            }
            Event::SequenceStart(..) => {
                let path = value_of(&mut stack).unwrap_or_default();
                stack.push(Frame::Seq { path, next: 0 });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                let Some(Frame::Map { path, .. } | Frame::Seq { path, .. }) = stack.pop() else {
                    continue;
                };
                if !path.is_empty() {
                    waiting.push(path);
                }
            }
            Event::Alias(_) => {
                if let Some(p) = value_of(&mut stack) {
                    waiting.push(p);
                }
            }
            _ => {}
        }
    }
    Ok(keys)
}

/// The path of a value starting now, and the key that owns it (if in a mapping).
fn value_of(stack: &mut [Frame]) -> Option<Path> {
    match stack.last_mut()? {
        Frame::Map { path, key, .. } => {
            let mut p = path.clone();
            p.push(key.take()?);
            Some(p)
        }
        Frame::Seq { path, next } => {
            let mut p = path.clone();
            p.push(next.to_string());
            *next += 1;
            Some(p)
        }
    }
}
