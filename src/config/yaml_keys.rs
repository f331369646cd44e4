//! Where each mapping key of a YAML text is (line, column, character offset), by its
//! path, and where whatever follows its value starts; and the edits that take keys out of
//! the text (commented out in a block mapping, cut from a `{…}` one): for changes to a
//! user's own file (`flakestorm migrate`) that keep the rest of it as it was.

use std::collections::{BTreeSet, HashMap};

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

/// A change to the text: at character offset `at`, `cut` characters replaced by `put`.
pub(super) struct Edit {
    pub at: usize,
    pub cut: usize,
    pub put: String,
}

/// Start offset of each line (1-based line `n` starts at `starts[n - 1]`).
/// Line ends as the YAML parser counts them: `\n`, `\r\n` and a lone `\r`.
pub(super) fn line_starts(chars: &[char]) -> Vec<usize> {
    let mut starts = vec![0];
    starts.extend(
        chars
            .iter()
            .enumerate()
            .filter(|(i, c)| **c == '\n' || (**c == '\r' && chars.get(i + 1) != Some(&'\n')))
            .map(|(i, _)| i + 1),
    );
    starts
}

/// Where line `line` (1-based) ends: before its line end, `\r\n` included.
fn line_end(chars: &[char], starts: &[usize], line: usize) -> usize {
    let Some(next) = starts.get(line) else {
        return chars.len();
    };
    let end = next - 1;
    match (
        chars.get(end),
        end.checked_sub(1).and_then(|e| chars.get(e)),
    ) {
        (Some('\n'), Some('\r')) => end - 1,
        _ => end,
    }
}

/// The edits that comment out the key at `at` (in a block mapping) and its value, the
/// first line saying `why`.
pub(super) fn comment_out(chars: &[char], at: &KeyAt, why: &str) -> Vec<Edit> {
    let starts = line_starts(chars);
    let last = if at.next.1 == usize::MAX {
        starts.len()
    } else {
        at.next.1.saturating_sub(1).max(at.line)
    };
    let mut edits = vec![];
    for line in at.line..=last {
        let start = starts[line - 1];
        let end = line_end(chars, &starts, line);
        let col = if line == at.line {
            start + at.col
        } else {
            // Continuation lines: blank ones and comments stay as they are.
            let Some(first) = (start..end).find(|&i| !chars[i].is_whitespace()) else {
                continue;
            };
            if chars[first] == '#' {
                continue;
            }
            first
        };
        edits.push(Edit {
            at: col,
            cut: 0,
            put: "# ".into(),
        });
        if line == at.line {
            edits.push(Edit {
                at: end,
                cut: 0,
                put: format!("  # flakestorm migrate: {why}"),
            });
        }
    }
    edits
}

/// The edits that cut the keys `cut` (and their values) out of the `{…}` mapping at
/// `parent`: each `key: value, ` up to the next key; a run of cut keys at the end goes from
/// the comma after the last kept value to the closing brace.
pub(super) fn flow_cuts(
    chars: &[char],
    keys: &HashMap<Path, KeyAt>,
    parent: &[String],
    cut: &BTreeSet<Path>,
) -> Vec<Edit> {
    let mut siblings: Vec<(&Path, &KeyAt)> = keys
        .iter()
        .filter(|(p, _)| p.len() == parent.len() + 1 && p.starts_with(parent))
        .collect();
    siblings.sort_by_key(|(_, k)| k.index);
    let Some(last) = siblings.iter().rposition(|(p, _)| !cut.contains(*p)) else {
        return vec![];
    };
    let mut edits = vec![];
    for (i, (path, at)) in siblings.iter().enumerate() {
        if i < last && cut.contains(*path) {
            let next = siblings[i + 1].1.index;
            edits.push(Edit {
                at: at.index,
                cut: next - at.index,
                put: String::new(),
            });
        }
    }
    // The run of cut keys after the last kept one, with the comma before it.
    if let Some((_, first)) = siblings.get(last + 1) {
        let close = siblings[siblings.len() - 1].1.next.0;
        let from = chars[..first.index]
            .iter()
            .rposition(|c| *c == ',')
            .unwrap_or(first.index);
        let to = chars[..close]
            .iter()
            .rposition(|c| !c.is_whitespace())
            .map_or(close, |i| i + 1);
        edits.push(Edit {
            at: from,
            cut: to.max(from) - from,
            put: String::new(),
        });
    }
    edits
}

/// The text with `edits` made (they do not overlap).
pub(super) fn apply(chars: &[char], mut edits: Vec<Edit>) -> String {
    edits.sort_by_key(|e| std::cmp::Reverse((e.at, e.cut)));
    let mut out: Vec<char> = chars.to_vec();
    for e in edits {
        out.splice(e.at..e.at + e.cut, e.put.chars());
    }
    out.into_iter().collect()
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
