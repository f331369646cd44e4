//! The house rules clippy cannot keep by itself (issue #10): the lint set-up stays in place,
//! the section loaders of `config/` and the runners of `run/` do not import each other in
//! a circle, source files keep under the size cap, and each module uses only the modules
//! listed above it in src/lib.rs's crate map (issue #25). Reads the sources; runs nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn source(rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn clippy_bans_what_design_md_forbids() {
    let toml = source("clippy.toml");
    for banned in [
        "std::time::Instant::now",
        "std::time::SystemTime::now",
        "std::thread::sleep",
    ] {
        assert!(
            toml.contains(&format!("path = \"{banned}\"")),
            "clippy.toml no longer bans {banned}"
        );
    }
}

#[test]
fn catch_all_arms_are_linted_where_our_enums_are_matched() {
    for root in [
        // The whole crate; the modules below keep their own in case it moves.
        "src/lib.rs",
        "src/config/mod.rs",
        "src/checks/mod.rs",
        "src/run/mod.rs",
        "src/store/mod.rs",
        "src/api/mod.rs",
        "src/chaos/rules.rs",
        "src/chaos/engine.rs",
        "src/llm/mod.rs",
        "src/chaos/rewrite/mod.rs",
        "src/chaos/respond.rs",
        "src/chaos/attack.rs",
        "src/proxy/fault.rs",
        "src/proxy/attack.rs",
    ] {
        let text = source(root);
        assert!(
            text.contains("#![warn(clippy::wildcard_enum_match_arm)]")
                || text.contains("#![deny(clippy::wildcard_enum_match_arm)]"),
            "{root} lost its clippy::wildcard_enum_match_arm lint"
        );
    }
}

/// Files that walk foreign enums (serde_json values, YAML events, figment values) and so
/// switch the catch-all lint off file-wide, each saying why; any other file must not.
const FILE_WIDE_CATCH_ALL: [&str; 6] = [
    "src/config/de.rs",
    "src/config/expand.rs",
    "src/config/finite.rs",
    "src/config/load.rs",
    "src/config/redact.rs",
    "src/config/untrusted.rs",
];

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_other_file_turns_the_catch_all_lint_off() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![];
    rust_files(&root.join("src"), &mut files);
    for path in files {
        let rel = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(&path).unwrap();
        if text.contains("#![allow(clippy::wildcard_enum_match_arm)]") {
            assert!(
                FILE_WIDE_CATCH_ALL.contains(&rel.as_str()),
                "{rel} turns clippy::wildcard_enum_match_arm off for the whole file"
            );
        }
    }
}

/// The sibling files a file refers to as `super::name` or `crate::<module>::name`, groups
/// included (its test items left out).
fn siblings_used(text: &str, module: &str, files: &BTreeSet<String>) -> BTreeSet<String> {
    let code = code_of(text);
    let mut out = BTreeSet::new();
    for prefix in ["super::".to_string(), format!("crate::{module}::")] {
        for (at, _) in code.match_indices(&prefix) {
            paths_at(&code[at + prefix.len()..], "", &mut |path| {
                let name = path.split("::").next().unwrap_or_default();
                if files.contains(name) {
                    out.insert(name.to_string());
                }
            });
        }
    }
    out
}

/// A cycle among the files of `src/<module>/` (mod.rs aside: it declares them all), if any.
fn cycle_in(module: &str) -> Option<Vec<String>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src")
        .join(module);
    let files: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            let stem = name.strip_suffix(".rs")?;
            (stem != "mod" && !stem.ends_with("_tests")).then(|| stem.to_string())
        })
        .collect();
    let edges: BTreeMap<String, BTreeSet<String>> = files
        .iter()
        .map(|f| {
            let text = source(&format!("src/{module}/{f}.rs"));
            let mut used = siblings_used(&text, module, &files);
            used.remove(f);
            (f.clone(), used)
        })
        .collect();
    fn visit(
        f: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == f) {
            let mut cycle = path[i..].to_vec();
            cycle.push(f.to_string());
            return Some(cycle);
        }
        if !done.insert(f.to_string()) {
            return None;
        }
        path.push(f.to_string());
        for next in &edges[f] {
            if let Some(c) = visit(next, edges, path, done) {
                return Some(c);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    files
        .iter()
        .find_map(|f| visit(f, &edges, &mut vec![], &mut done))
}

#[test]
fn config_and_run_files_do_not_import_each_other_in_a_circle() {
    for module in ["config", "run"] {
        if let Some(cycle) = cycle_in(module) {
            panic!("src/{module}: {}", cycle.join(" -> "));
        }
    }
}

/// Every source file of src/ but the test files (`tests.rs`, `*_tests.rs`): its path from
/// the crate root (`src/…`) and its text.
fn sources() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![];
    rust_files(&root.join("src"), &mut files);
    files
        .into_iter()
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name != "tests.rs" && !name.ends_with("_tests.rs")
        })
        .map(|p| {
            let rel = p
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            (rel, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

/// The cap on a source file's non-test code (issue #25): its lines outside `#[cfg(test)]`
/// items. Test files (`tests.rs`, `*_tests.rs`) are not counted.
const MAX_LINES: usize = 400;

/// Files over the cap when it came in, with their size then: they may shrink, never grow,
/// and leave this list once under it. Any other file must stay under the cap.
const OVER_THE_CAP: [(&str, usize); 0] = [];

#[test]
fn source_files_keep_under_the_size_cap() {
    let mut over = vec![];
    for (rel, text) in sources() {
        let lines = non_test_lines(&text).len();
        let cap = OVER_THE_CAP
            .iter()
            .find(|(f, _)| *f == rel)
            .map_or(MAX_LINES, |(_, then)| *then);
        if lines > cap {
            over.push(format!("{rel}: {lines} lines of non-test code (cap {cap})"));
        }
    }
    assert!(
        over.is_empty(),
        "split these files by job (design.md §8), or say at their top why one reads better:\n{}",
        over.join("\n")
    );
    for (file, then) in OVER_THE_CAP {
        let lines = non_test_lines(&source(file)).len();
        assert!(
            lines > MAX_LINES,
            "{file} is down to {lines} lines (was {then}): take it off OVER_THE_CAP"
        );
    }
}

/// The crate map in src/lib.rs (`//! - `name` — …`), in order: a module may use only those
/// listed above it (design.md §3). An entry `parent::child` is a layer of its own inside
/// `parent` (the domain vocabulary, `chaos::spec`, below `config`, while `chaos`'s engine
/// comes after it).
fn crate_map() -> Vec<String> {
    source("src/lib.rs")
        .lines()
        .filter_map(|l| l.strip_prefix("//! - `"))
        .filter_map(|l| l.split('`').next())
        .map(String::from)
        .collect()
}

/// The layer a source file belongs to: the longest crate-map entry its path is inside.
fn layer_of<'m>(rel: &str, map: &'m [String]) -> Option<&'m String> {
    let path = rel.strip_prefix("src/")?.trim_end_matches(".rs");
    map.iter()
        .filter(|m| {
            let dir = m.replace("::", "/");
            path == dir || path.starts_with(&format!("{dir}/"))
        })
        .max_by_key(|m| m.len())
}

/// How deep a file's module sits below its layer's root module (`chaos/spec/mod.rs`: 0,
/// `chaos/spec/fit.rs`: 1): the `super::` steps it may take without leaving its layer.
fn depth_below(rel: &str, layer: &str) -> usize {
    let path = rel["src/".len()..].trim_end_matches(".rs");
    let path = path.strip_suffix("/mod").unwrap_or(path);
    path.split('/').count() - layer.split("::").count()
}

/// The crate layers `text` names as `crate::name` (or `crate::name::child` where that is
/// a layer of the map), outside comments and test code. A group is read item by item
/// (`crate::chaos::{spec::Rule, rng}` uses `chaos::spec` and `chaos`; `crate::{config,
/// chaos::rng}` uses `config` and `chaos`), over lines.
fn crate_uses(text: &str, map: &[String]) -> BTreeSet<String> {
    let code = code_of(text);
    let mut out = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        paths_at(&code[at + "crate::".len()..], "", &mut |path| {
            out.insert(layer_of_path(&path, map));
        });
    }
    out
}

/// Calls `each` with every whole path `rest` names after `prefix`, a group's items each
/// with the prefix (`a::{b, c::{d}}` gives `a::b` and `a::c::d`).
fn paths_at(rest: &str, prefix: &str, each: &mut dyn FnMut(String)) {
    let rest = rest.trim_start();
    if rest.is_empty() {
        return; // after a group's trailing comma
    }
    let path: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
        .collect();
    let joined = format!("{prefix}{path}");
    match rest[path.len()..].strip_prefix('{') {
        Some(group) if path.is_empty() || path.ends_with("::") => {
            for item in top_level_items(group) {
                paths_at(item, &joined, each);
            }
        }
        _ => each(joined),
    }
}

/// The layer a path below `crate::` is in: `chaos::spec::Rule` is `chaos::spec` when that
/// is a layer of the map, else `chaos`.
fn layer_of_path(path: &str, map: &[String]) -> String {
    let mut names = path.split("::");
    let name = names.next().unwrap_or_default();
    let sub = format!("{name}::{}", names.next().unwrap_or_default());
    if map.contains(&sub) {
        sub
    } else {
        name.to_string()
    }
}

/// The lines of `text` that are not test code: each `#[cfg(test)]` item is left out whole
/// (`mod golden;`, a helper `fn`, `mod tests { … }`), and only it. Items are found by
/// rustfmt's layout (`cargo fmt --check` holds every file to it): the item ends on the
/// first line at the attribute's indentation that ends it (`;`, `}`, `,`), or, for one that
/// opens a block there, on the `}` that closes it at that indentation.
fn non_test_lines(text: &str) -> Vec<&str> {
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut out = vec![];
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim() != "#[cfg(test)]" {
            out.push(line);
            continue;
        }
        let at = indent(line);
        let mut block = false;
        for line in lines.by_ref() {
            let t = line.trim();
            if t.is_empty() || indent(line) > at {
                continue;
            }
            if indent(line) < at {
                out.push(line); // the enclosing block ended with the item
                break;
            }
            if block {
                if t.starts_with('}') {
                    break;
                }
            } else if t.ends_with('{') {
                block = true;
            } else if !t.starts_with("#[")
                && (t.ends_with(';') || t.ends_with('}') || t.ends_with(','))
            {
                break;
            }
        }
    }
    out
}

/// A file's code without its comments and its test items (`non_test_lines`), as one text
/// (a `use` group can span lines).
fn code_of(text: &str) -> String {
    non_test_lines(text)
        .into_iter()
        .map(without_comment)
        .collect::<Vec<_>>()
        .join("\n")
}

/// `line` up to a `//` comment that is not inside a string literal (an even number of
/// quotes before it).
fn without_comment(line: &str) -> &str {
    let mut quotes = 0;
    for (i, c) in line.char_indices() {
        match c {
            '"' => quotes += 1,
            '/' if quotes % 2 == 0 && line[i..].starts_with("//") => return &line[..i],
            _ => {}
        }
    }
    line
}

/// The most `super::` steps any path in `code` takes, groups included (`super::{x,
/// super::y}` takes two; `self::` steps nowhere).
fn super_steps(code: &str) -> usize {
    fn steps(path: &str) -> usize {
        let mut rest = path.trim_start();
        rest = rest.strip_prefix("self::").unwrap_or(rest).trim_start();
        let mut n = 0;
        while let Some(r) = rest.strip_prefix("super::") {
            n += 1;
            rest = r.trim_start();
        }
        match rest.strip_prefix('{') {
            Some(group) => {
                n + top_level_items(group)
                    .into_iter()
                    .map(steps)
                    .max()
                    .unwrap_or(0)
            }
            None => n,
        }
    }
    // Every `super::` is tried as a chain's start: a chain's tail takes fewer steps, and
    // the most is what counts.
    code.match_indices("super::")
        .map(|(at, _)| steps(&code[at..]))
        .max()
        .unwrap_or(0)
}

/// The comma-separated items of a `use` group, `group` starting just after its `{`.
fn top_level_items(group: &str) -> Vec<&str> {
    let (mut depth, mut start, mut items) = (0usize, 0, vec![]);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&group[start..i]);
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items
}

#[test]
fn modules_use_only_those_listed_above_them_in_the_crate_map() {
    let map = crate_map();
    let lib = source("src/lib.rs");
    let declared: BTreeSet<&str> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod "))
        .map(|l| l.trim_end_matches(';'))
        .collect();
    let listed: BTreeSet<&str> = map
        .iter()
        .map(String::as_str)
        .filter(|m| !m.contains("::"))
        .collect();
    assert_eq!(
        declared, listed,
        "src/lib.rs's crate map lists every module, once"
    );
    for sub in map.iter().filter(|m| m.contains("::")) {
        let (parent, child) = sub.split_once("::").unwrap();
        let parent_at = map.iter().position(|m| m == parent);
        assert!(
            parent_at > map.iter().position(|m| m == sub),
            "{sub} is listed above {parent} in src/lib.rs's crate map"
        );
        assert!(
            source(&format!("src/{parent}/mod.rs")).contains(&format!("pub mod {child};")),
            "src/{parent}/mod.rs declares `pub mod {child};` ({sub} is in the crate map)"
        );
    }
    let mut wrong = vec![];
    for (rel, text) in sources() {
        let Some(module) = layer_of(&rel, &map) else {
            continue; // lib.rs, main.rs
        };
        let mine = map.iter().position(|m| m == module).unwrap();
        {
            let depth = depth_below(&rel, module);
            let steps = super_steps(&code_of(&text));
            if steps > depth {
                wrong.push(format!(
                    "{rel} reaches out of `{module}` with {steps} `super::` steps (at most \
                     {depth} stay inside it)"
                ));
            }
        }
        for used in crate_uses(&text, &map) {
            let Some(theirs) = map.iter().position(|m| *m == used) else {
                continue;
            };
            if theirs > mine {
                wrong.push(format!("{rel} uses `{used}`, listed after `{module}`"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "a module may use only those listed above it in src/lib.rs (design.md §3):\n{}",
        wrong.join("\n")
    );
}

const MAX_FN_LINES: usize = 80;

/// Functions over `MAX_FN_LINES` when the check came in, with their length then: they may
/// shrink, never grow, and leave this list once under it (issue #25).
const LONG_FUNCTIONS: [(&str, &str, usize); 0] = [];

/// Every function's name and length in lines (signature to closing brace) in the non-test
/// part of `text`: a `fn` line, then the line that closes at its indentation.
fn function_lengths(text: &str) -> Vec<(String, usize)> {
    let lines = non_test_lines(text);
    let mut out = vec![];
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let indent = line.len() - line.trim_start().len();
        let words: Vec<&str> = line.split_whitespace().collect();
        let at = words.iter().position(|w| *w == "fn").filter(|&p| {
            words[..p]
                .iter()
                .all(|w| w.starts_with("pub") || *w == "async" || *w == "const")
        });
        let Some(at) = at else {
            i += 1;
            continue;
        };
        let name: String = words
            .get(at + 1)
            .unwrap_or(&"")
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let Some(open) = (i..lines.len()).find(|&j| {
            let t = lines[j].trim_end();
            t.ends_with('{') || t.ends_with(';')
        }) else {
            break;
        };
        if lines[open].trim_end().ends_with(';') {
            i = open + 1;
            continue;
        }
        let close = (open + 1..lines.len())
            .find(|&k| {
                lines[k].trim_end().len() == indent + 1
                    && lines[k].starts_with(&format!("{}}}", " ".repeat(indent)))
            })
            .unwrap_or(lines.len() - 1);
        out.push((name, close - i + 1));
        i = close + 1;
    }
    out
}

#[test]
fn functions_keep_under_the_length_cap() {
    let mut long = vec![];
    let mut seen = BTreeSet::new();
    for (rel, text) in sources() {
        for (f, n) in function_lengths(&text) {
            let then = LONG_FUNCTIONS.iter().find(|(p, g, _)| *p == rel && *g == f);
            if let Some((p, g, _)) = then {
                seen.insert((*p, *g));
            }
            let cap = then.map_or(MAX_FN_LINES, |(_, _, then)| *then);
            if n > cap {
                long.push(format!("{rel}: fn {f} is {n} lines (cap {cap})"));
            }
        }
    }
    assert!(
        long.is_empty(),
        "split these functions by step (design.md §8), or shorten them:\n{}",
        long.join("\n")
    );
    for (p, f, then) in LONG_FUNCTIONS {
        let n = function_lengths(&source(p))
            .into_iter()
            .find(|(g, _)| g == f)
            .map_or(0, |(_, n)| n);
        assert!(
            n > MAX_FN_LINES,
            "{p}: fn {f} is down to {n} lines (was {then}): take it off LONG_FUNCTIONS"
        );
    }
    assert_eq!(
        seen.len(),
        LONG_FUNCTIONS.len(),
        "every listed function was found"
    );
}

/// The layer check's readers, on the forms rustfmt writes.
#[test]
fn the_layer_readers_see_through_use_groups() {
    let map: Vec<String> = ["globs", "chaos::spec", "config", "chaos"]
        .map(String::from)
        .to_vec();
    let uses = |t: &str| crate_uses(t, &map).into_iter().collect::<Vec<_>>();
    assert_eq!(uses("use crate::chaos::spec::Rule;"), ["chaos::spec"]);
    assert_eq!(uses("use crate::chaos::{spec::Rule};"), ["chaos::spec"]);
    assert_eq!(
        uses("use crate::chaos::{\n    spec::{Rule, Mode},\n    rng,\n};"),
        ["chaos", "chaos::spec"]
    );
    assert_eq!(
        uses("// crate::chaos::rng\nuse crate::globs::X;"),
        ["globs"]
    );
    assert_eq!(
        uses("use crate::{\n    globs::X,\n    chaos::{rng, spec::Rule},\n};"),
        ["chaos", "chaos::spec", "globs"]
    );
    assert_eq!(uses("use crate::chaos::{spec as s};"), ["chaos::spec"]);
    assert_eq!(
        uses("use crate::chaos::{\n    spec::Rule, // a } in a comment\n    rng,\n};"),
        ["chaos", "chaos::spec"]
    );
    assert_eq!(
        uses("let u = \"http://h/\"; // crate::chaos::rng"),
        Vec::<String>::new()
    );
    assert_eq!(
        uses("#[cfg(test)]\nfn helper() {}\nuse crate::chaos::rng;"),
        ["chaos"],
        "a lone test item does not end the code"
    );
    assert_eq!(
        uses("#[cfg(test)]\nmod golden;\nuse crate::chaos::rng;"),
        ["chaos"]
    );
    assert_eq!(
        uses("#[cfg(test)]\npub mod support {\n    use crate::config::X;\n}\nuse crate::globs::Y;"),
        ["globs"],
        "test items are left out whole"
    );
    assert_eq!(
        non_test_lines("a\n#[cfg(test)]\n#[path = \"x_tests.rs\"]\nmod tests;\nb\n"),
        ["a", "b"],
        "a test module in its own file ends nothing"
    );
    assert_eq!(
        non_test_lines("struct S {\n    #[cfg(test)]\n    t: u8,\n    u: u8,\n}\nfn f() {}"),
        ["struct S {", "    u: u8,", "}", "fn f() {}"]
    );
    assert_eq!(
        non_test_lines("#[cfg(test)]\nfn helper(\n    a: u8,\n) {\n    x();\n}\nfn g() {}"),
        ["fn g() {}"]
    );
    assert_eq!(super_steps("use super::x;"), 1);
    assert_eq!(super_steps("use super::super::x;"), 2);
    assert_eq!(super_steps("use super::{x, super::y};"), 2);
    assert_eq!(super_steps("use super::{\n    super::{super::z},\n};"), 3);
    assert_eq!(super_steps("use crate::a::x;"), 0);
    assert_eq!(super_steps("use self::super::super::x;"), 2);
    assert_eq!(super_steps("use super::{self::super::x};"), 2);
}
