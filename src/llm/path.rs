//! Paths into provider JSON: where a value sits, written as data (`Seg`s) so each provider
//! file lists its locations instead of walking trees by hand. Pure.

use serde_json::Value;

/// One step of a path.
#[derive(Debug, PartialEq, Eq)]
pub enum Seg {
    /// The value under this key, when there is one.
    K(&'static str),
    /// Every element of an array.
    All,
    /// This value, only when its `key` is the string `value` (e.g. `type` is `tool_use`).
    If(&'static str, &'static str),
}

pub use Seg::{All, If, K};

/// Where a tool call sits: the call object at `at`, its tool name at `name` (relative to
/// the call), and the keys that may carry its id, in order of preference. Streams repeat a
/// call across events; the id lets a reader count it once.
#[derive(Debug, PartialEq, Eq)]
pub struct Call {
    pub at: &'static [Seg],
    pub name: &'static [&'static str],
    pub ids: &'static [&'static str],
    /// A key or value every body holding such a call contains (a cheap byte pre-check).
    pub marker: &'static str,
}

/// Calls `f` on every value at `path`.
pub fn visit(v: &mut Value, path: &[Seg], f: &mut dyn FnMut(&mut Value)) {
    match path.split_first() {
        None => f(v),
        Some((K(k), rest)) => {
            if let Some(c) = v.get_mut(*k) {
                visit(c, rest, f);
            }
        }
        Some((All, rest)) => {
            if let Value::Array(a) = v {
                for c in a.iter_mut() {
                    visit(c, rest, f);
                }
            }
        }
        Some((If(key, value), rest)) => {
            if v.get(*key).and_then(Value::as_str) == Some(*value) {
                visit(v, rest, f);
            }
        }
    }
}

/// Calls `f` on every string at each of `paths`.
pub fn visit_strings(v: &mut Value, paths: &[&[Seg]], f: &mut dyn FnMut(&mut String)) {
    for path in paths {
        visit(v, path, &mut |t| {
            if let Value::String(s) = t {
                f(s);
            }
        });
    }
}

/// The value at `keys` if every step is an object that has it (indexing would panic on a
/// number or a string, and insert nulls where a key is missing).
pub fn at<'a>(v: &'a mut Value, keys: &[&str]) -> Option<&'a mut Value> {
    keys.iter().try_fold(v, |v, k| v.get_mut(*k))
}

/// Calls `f` on the name of every call at `calls`.
pub fn each_call_name(v: &mut Value, calls: &[&Call], f: &mut dyn FnMut(&mut Value)) {
    for c in calls {
        visit(v, c.at, &mut |call| {
            if let Some(n) = at(call, c.name) {
                f(n)
            }
        });
    }
}
