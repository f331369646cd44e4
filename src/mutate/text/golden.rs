//! The golden file: variants 0..4 of every text type for two prompts at seed 42 (and
//! 4..10 for the first, so every family is pinned), checked
//! in as tests/fixtures/mutations-golden.txt, so a change to any generator (or to the
//! draw streams) that alters a variant fails here. `UPDATE_GOLDEN=1` rewrites the file.

use super::{Options, generate};
use crate::mutate::Draw;
use crate::mutate::kind::{Family, MutationType};

const PROMPTS: [&str; 2] = [
    "What is the capital of France?",
    "Book a flight from Paris to Tokyo on March 3",
];

/// Longer variants are pinned by length, SHA-256 and their start.
const SHOWN: usize = 2000;

fn path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mutations-golden.txt")
}

/// One line per variant: control, format (invisible) and backslash chars escaped.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if c.is_control()
                || matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{FEFF}') =>
            {
                out.push_str(&format!("\\u{{{:04X}}}", c as u32));
            }
            c => out.push(c),
        }
    }
    out
}

fn render() -> String {
    let templates = vec![("please".to_string(), "Please answer: {prompt}".to_string())];
    let opts = Options {
        noise_rate: 0.1,
        custom_templates: &templates,
    };
    let mut out = String::from(
        "# flakestorm text mutations, seed 42: `type #index` then the variant (escaped).\n\
         # Regenerate with UPDATE_GOLDEN=1 cargo test --lib mutate::text::golden\n",
    );
    for p in PROMPTS {
        out.push_str(&format!("\n## prompt: {p}\n"));
        for t in MutationType::all().filter(|t| t.family() == Family::Text) {
            // 0..4 for both prompts; 4..10 for the first as well, so every family of
            // every type (encoding has 9, the most) is pinned.
            let last = if p == PROMPTS[0] { 10 } else { 4 };
            for i in 0..last {
                let mut d = Draw::new(42, t, p, i);
                let v = generate(t, p, i, &mut d, &opts).expect("a text type");
                let shown = if v.len() > SHOWN {
                    let digest = ring::digest::digest(&ring::digest::SHA256, v.as_bytes());
                    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
                    let start: String = v.chars().take(100).collect();
                    format!(
                        "<{} bytes, sha256 {hex}, starts: {}>",
                        v.len(),
                        escape(&start)
                    )
                } else {
                    escape(&v)
                };
                out.push_str(&format!("{t} #{i}\n{shown}\n"));
            }
        }
    }
    out
}

#[test]
fn variants_match_the_golden_file() {
    let got = render();
    if std::env::var("UPDATE_GOLDEN").as_deref() == Ok("1") {
        std::fs::write(path(), &got).expect("write the golden file");
        return;
    }
    let want = std::fs::read_to_string(path())
        .expect("tests/fixtures/mutations-golden.txt (create it with UPDATE_GOLDEN=1)");
    if got != want {
        let (n, (g, w)) = got
            .lines()
            .zip(want.lines())
            .enumerate()
            .find(|(_, (g, w))| g != w)
            .unwrap_or((
                got.lines().count().min(want.lines().count()),
                ("(end of output)", "(more lines)"),
            ));
        panic!(
            "text mutations differ from the golden file at line {}:\n  now:    {g}\n  golden: {w}\n\
             If the change is intended, rerun with UPDATE_GOLDEN=1 and commit the file.",
            n + 1
        );
    }
}
