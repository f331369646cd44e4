//! Checks on YAML and JSON text before the real parsers see it: size, nesting depth, and
//! duplicate mapping keys. The same limits apply to config files (`validate`, `serve`) and
//! to control-API bodies.
//!
//! Why a pre-pass: the YAML deserialiser (`config::Yaml`, yaml_serde) keeps the *last* of
//! two equal keys without a word, and its parse time grows with the square of the nesting
//! depth before its own recursion limit is reached. A streaming event parser (yaml-rust2)
//! sees every key with its line, and stops as soon as the depth limit is crossed, so
//! hostile input costs little.

// Walks yaml-rust2 parser events: foreign enums, where a catch-all arm is the point.
#![allow(clippy::wildcard_enum_match_arm)]

use std::collections::HashMap;

use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::TScalarStyle;

use super::{ConfigError, Found};

/// Largest config file or control-API body accepted (`files::MAX_CONFIG`, 1 MiB).
pub const MAX_BYTES: usize = crate::files::MAX_CONFIG as usize;
/// Deepest nesting of mappings and lists accepted (real configs stay under 10).
pub const MAX_DEPTH: usize = 64;

fn too_large(len: usize) -> ConfigError {
    ConfigError::new(
        "",
        format!("{len} bytes is larger than the limit of {MAX_BYTES} bytes (1 MiB)"),
    )
}

fn too_deep(line: usize) -> ConfigError {
    ConfigError::new(
        "",
        format!("nesting deeper than {MAX_DEPTH} levels (at line {line}); not a configuration"),
    )
}

/// A document that is one value (`/etc/hostname` given as a config or session file): said
/// without quoting it, since the file may hold anything.
fn top_level_scalar(value: &str) -> ConfigError {
    ConfigError::new(
        "",
        format!(
            "the top level is a string of {} characters, expected a mapping (`key: value` \
             lines); is this the right file?",
            value.chars().count()
        ),
    )
}

/// One open mapping or list, and where we are inside it.
enum Frame {
    Map {
        /// Path of the mapping itself.
        path: String,
        /// Keys seen so far, with their lines.
        seen: HashMap<String, usize>,
        /// Expecting a key (true) or its value (false).
        at_key: bool,
        /// Path of the value being read.
        child: String,
    },
    Seq {
        path: String,
        next: usize,
    },
}

/// The path of `key` under `base`, for messages: keys cut to 80 characters and the path
/// stops growing past 300 bytes, as a path is copied for every key under it (a 500 KB key
/// over 100,000 keys would copy 50 GB).
fn join(base: &str, key: &str) -> String {
    let key = crate::text::cut(key, 80);
    if base.is_empty() {
        key
    } else if base.len() > 300 {
        if base.ends_with(".…") {
            base.to_string()
        } else {
            format!("{base}.…")
        }
    } else {
        format!("{base}.{key}")
    }
}

/// Size, depth and duplicate keys of a YAML text. Syntax errors are reported here too (with
/// their line), so the slower parser never runs on text this one could not read.
pub fn check_yaml(text: &str) -> Result<(), Found> {
    if text.len() > MAX_BYTES {
        return Err(Found::from_iter([too_large(text.len())]));
    }
    let mut parser = Parser::new_from_str(text);
    let mut stack: Vec<Frame> = vec![];
    let mut errors = Found::default();
    loop {
        let (event, mark) = match parser.next_token() {
            Ok(e) => e,
            Err(e) if e.info().contains("recursion limit") => {
                return Err(Found::from_iter([too_deep(e.marker().line())]));
            }
            Err(e) => {
                errors.push_final(ConfigError::new("", format!("YAML syntax error: {e}")));
                return Err(errors);
            }
        };
        let line = mark.line();
        let (node_path, is_key) = place(&mut stack, &event);
        if let (None, Event::Scalar(value, style, ..)) = (stack.last(), &event)
            && !is_null(value, *style)
        {
            return Err(Found::from_iter([top_level_scalar(value)]));
        }
        match event {
            Event::StreamEnd => break,
            Event::DocumentStart | Event::DocumentEnd => stack.clear(),
            Event::Scalar(key, ..) if is_key => {
                if let Some(dup) = stack.last_mut().and_then(|f| f.key(&key, line)) {
                    errors.push(dup);
                }
            }
            Event::Alias(_) | Event::MappingStart(..) | Event::SequenceStart(..) if is_key => {
                if let Some(f) = stack.last_mut() {
                    f.complex_key();
                }
                if !matches!(event, Event::Alias(_)) {
                    stack.push(open(&event, join(&node_path, "?")));
                }
            }
            Event::MappingStart(..) | Event::SequenceStart(..) => {
                if stack.len() >= MAX_DEPTH {
                    return Err(Found::from_iter([too_deep(line)]));
                }
                stack.push(open(&event, node_path));
            }
            Event::MappingEnd | Event::SequenceEnd => {
                stack.pop();
            }
            _ => {}
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// The path of the node `event` starts, and whether it is a mapping's key; a value (or
/// list item) that starts completes its place, so the mapping expects a key again.
fn place(stack: &mut [Frame], event: &Event) -> (String, bool) {
    let (node_path, is_key) = match stack.last_mut() {
        None => (String::new(), false),
        Some(Frame::Map {
            at_key: true, path, ..
        }) => (path.clone(), true),
        Some(Frame::Map { child, .. }) => (child.clone(), false),
        Some(Frame::Seq { path, next }) => (format!("{path}[{next}]"), false),
    };
    let starts_node = matches!(
        event,
        Event::Scalar(..) | Event::Alias(_) | Event::MappingStart(..) | Event::SequenceStart(..)
    );
    if starts_node && !is_key {
        // A value (or list item) completes; the next node in a mapping is a key again.
        match stack.last_mut() {
            Some(Frame::Map { at_key, .. }) => *at_key = true,
            Some(Frame::Seq { next, .. }) => *next += 1,
            None => {}
        }
    }
    (node_path, is_key)
}

/// A plain `null` (or nothing): a document with no value.
fn is_null(value: &str, style: TScalarStyle) -> bool {
    style == TScalarStyle::Plain && matches!(value, "" | "~" | "null" | "Null" | "NULL")
}

impl Frame {
    /// A mapping reads a complex key (a mapping, list or alias as a key): rare and never a
    /// config field, so its value gets a placeholder path.
    fn complex_key(&mut self) {
        if let Frame::Map {
            at_key,
            child,
            path,
            ..
        } = self
        {
            *child = join(path, "?");
            *at_key = false;
        }
    }

    /// A mapping reads `key` at `line`: the path of its value is set, and a key it has
    /// seen before is an error naming both lines.
    fn key(&mut self, key: &str, line: usize) -> Option<ConfigError> {
        let Frame::Map {
            path,
            seen,
            at_key,
            child,
        } = self
        else {
            return None; // a key is read in a mapping only
        };
        *child = join(path, key);
        *at_key = false;
        let first = seen.insert(key.to_string(), line)?;
        // The lines find it; a long key is quoted only as far as it reads.
        let key = crate::text::cut(key, 80);
        Some(ConfigError::new(
            child.clone(),
            format!(
                "duplicate key `{key}` (lines {first} and {line}); YAML would keep only \
                 the last one and silently drop the first: merge them into one"
            ),
        ))
    }
}

fn open(event: &Event, path: String) -> Frame {
    match event {
        Event::MappingStart(..) => Frame::Map {
            path,
            seen: HashMap::new(),
            at_key: true,
            child: String::new(),
        },
        _ => Frame::Seq { path, next: 0 },
    }
}

/// Size and nesting depth of a JSON text, in one linear pass, before serde_json parses it.
pub fn check_json(bytes: &[u8]) -> Result<(), ConfigError> {
    if bytes.len() > MAX_BYTES {
        return Err(too_large(bytes.len()));
    }
    let (mut depth, mut line, mut in_string, mut escaped) = (0usize, 1usize, false, false);
    for &b in bytes {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(too_deep(line));
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'\n' => line += 1,
            _ => {}
        }
    }
    Ok(())
}

/// Duplicate keys of a JSON text (serde_json keeps the last one silently). JSON is YAML, so
/// the YAML pass finds them; its other findings are left to serde_json's own messages.
/// Call after `check_json`, which bounds the depth.
pub fn json_duplicate_keys(text: &str) -> Found {
    let mut found = check_yaml(text).err().unwrap_or_default();
    // Past the cap only duplicates are counted: the one other finding, a syntax error,
    // ends the pass and is always listed.
    found
        .errors
        .retain(|e| e.message.starts_with("duplicate key"));
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(text: &str) -> Vec<String> {
        check_yaml(text)
            .err()
            .unwrap_or_default()
            .errors
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn duplicate_keys_name_the_key_its_path_and_both_lines() {
        let text = "chaos:\n  tool_faults: []\nproxy:\n  listen: a\n  users:\n    - {name: a, password: b, name: c}\nchaos:\n  llm_faults: []\n";
        assert_eq!(
            messages(text),
            [
                "proxy.users[0].name: duplicate key `name` (lines 6 and 6); YAML would keep only the last one and silently drop the first: merge them into one",
                "chaos: duplicate key `chaos` (lines 1 and 7); YAML would keep only the last one and silently drop the first: merge them into one",
            ]
        );
        // The same key in different mappings, or in list items, is no duplicate.
        assert!(check_yaml("a: {x: 1}\nb: {x: 2}\nl:\n  - {x: 1}\n  - {x: 2}\n").is_ok());
    }

    #[test]
    fn a_long_key_over_many_duplicates_keeps_the_answer_and_memory_small() {
        // A 500 KB key over 70,000 duplicate keys: each problem quoted the whole path (35 GB,
        // the daemon was killed for memory); now 50 are listed, cut, and the rest counted.
        let mut text = format!("? {}\n:\n", "k".repeat(500_000));
        let dups = 70_000;
        text.push_str(&"  a: 1\n".repeat(dups + 1));
        let found = check_yaml(&text).unwrap_err();
        assert_eq!(
            (found.errors.len(), found.omitted),
            (MAX_LISTED_HERE, dups - 50)
        );
        let e = &found.errors[0];
        assert!(e.path.len() < 400 && e.path.ends_with(".a"), "{}", e.path);
        assert!(e.message.starts_with("duplicate key `a` (lines 3 and 4)"));
        // Different keys each duplicated: 50 listed, the rest counted.
        let many: String = (0..300).map(|i| format!("k{i}: 1\nk{i}: 2\n")).collect();
        let found = check_yaml(&many).unwrap_err();
        assert_eq!((found.errors.len(), found.omitted), (MAX_LISTED_HERE, 250));
        assert!(found.one_line().ends_with("; … and 250 more, not listed"));
        // A syntax error after the cap is still listed (a JSON reader filters it out).
        let broken = format!("{many}x: [\n");
        let found = check_yaml(&broken).unwrap_err();
        assert_eq!(found.errors.len(), MAX_LISTED_HERE + 1);
        assert!(
            found.errors[MAX_LISTED_HERE]
                .message
                .starts_with("YAML syntax error")
        );
    }

    const MAX_LISTED_HERE: usize = crate::config::MAX_LISTED;

    #[test]
    fn deep_nesting_and_size_are_refused_before_parsing() {
        let deep = format!("a: {}{}", "[".repeat(40_000), "]".repeat(40_000));
        let m = messages(&deep);
        assert_eq!(m.len(), 1);
        assert!(m[0].starts_with("nesting deeper than 64 levels"), "{m:?}");
        let block: String = (0..100)
            .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
            .collect();
        assert!(messages(&block)[0].starts_with("nesting deeper than 64"));
        let ok: String = (0..60)
            .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
            .collect();
        assert!(check_yaml(&ok).is_ok());
        let big = format!("a: \"{}\"\n", "x".repeat(MAX_BYTES));
        assert!(messages(&big)[0].contains("larger than the limit of 1048576 bytes"));
        assert!(check_json(format!("{}1{}", "[".repeat(65), "]".repeat(65)).as_bytes()).is_err());
        assert!(check_json(format!("{}1{}", "[".repeat(64), "]".repeat(64)).as_bytes()).is_ok());
        assert!(check_json(br#"{"a": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"]"}"#).is_ok());
    }

    #[test]
    fn duplicate_keys_in_json_are_found() {
        let json = r#"{"tool_faults":[{"tool":"search","mode":"error","mode":"timeout"}],"llm_faults":[]}"#;
        let found = json_duplicate_keys(json);
        assert_eq!(found.errors.len(), 1, "{found:?}");
        assert_eq!(found.errors[0].path, "tool_faults[0].mode");
        assert!(json_duplicate_keys(r#"{"a":{"b":1},"c":[{"b":2}]}"#).is_empty());
    }

    #[test]
    fn a_document_of_one_value_is_not_quoted() {
        for text in ["myhost\n", "\"myhost\"", "--- myhost\n", "42"] {
            let m = messages(text);
            assert_eq!(m.len(), 1, "{text}: {m:?}");
            assert!(m[0].starts_with("the top level is a string of"), "{m:?}");
            assert!(!m[0].contains("myhost"), "{m:?}");
        }
        assert!(messages("myhost\n")[0].contains("of 6 characters"));
        for empty in ["", "---\n", "~\n", "# only a comment\n", "null"] {
            assert!(check_yaml(empty).is_ok(), "{empty:?}");
        }
    }

    #[test]
    fn syntax_errors_say_where() {
        let m = messages("proxy:\n  listen: [\n");
        assert!(
            m[0].starts_with("YAML syntax error") && m[0].contains("line"),
            "{m:?}"
        );
    }
}
