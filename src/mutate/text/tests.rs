//! Properties every text type keeps: determinism per seed, seed sensitivity, variants that
//! differ from the prompt, variety across indices, and None for the other families.

use std::collections::HashSet;

use super::{Options, generate};
use crate::mutate::Draw;
use crate::mutate::kind::{Family, MutationType};

const PROMPTS: [&str; 4] = [
    "What is the capital of France?",
    "Book a flight from Paris to Tokyo on March 3. I need a window seat!",
    "東京から大阪まで、いくら？",
    "ok",
];

fn templates() -> Vec<(String, String)> {
    vec![
        ("a".into(), "Please answer: {prompt}".into()),
        ("b".into(), "{prompt} (asked twice: {prompt})".into()),
    ]
}

fn variant(kind: MutationType, p: &str, seed: u64, index: u32) -> String {
    let t = templates();
    let opts = Options {
        noise_rate: 0.1,
        custom_templates: &t,
    };
    let mut d = Draw::new(seed, kind, p, index);
    generate(kind, p, index, &mut d, &opts).expect("a text type")
}

fn text_types() -> impl Iterator<Item = MutationType> {
    MutationType::all().filter(|t| t.family() == Family::Text)
}

#[test]
fn only_text_types_generate() {
    assert_eq!(text_types().count(), 13);
    let opts = Options {
        noise_rate: 0.1,
        custom_templates: &[],
    };
    for t in MutationType::all() {
        let mut d = Draw::new(1, t, "hi", 0);
        let got = generate(t, "hi", 0, &mut d, &opts);
        assert_eq!(got.is_some(), t.family() == Family::Text, "{t}");
    }
}

#[test]
fn same_seed_same_variants_and_each_differs_from_the_prompt() {
    for t in text_types() {
        for p in PROMPTS {
            for i in 0..20 {
                let v = variant(t, p, 42, i);
                assert_eq!(v, variant(t, p, 42, i), "{t} #{i} of {p:?}");
                assert_ne!(v, p, "{t} #{i} of {p:?}");
                let empty_allowed = t == MutationType::LengthExtremes && i % 4 == 0;
                assert!(!v.is_empty() || empty_allowed, "{t} #{i} of {p:?}");
            }
        }
    }
}

#[test]
fn another_seed_changes_some_of_the_first_ten() {
    // `custom` draws nothing: its variants are the templates.
    for t in text_types().filter(|t| *t != MutationType::Custom) {
        for p in PROMPTS {
            let a: Vec<String> = (0..10).map(|i| variant(t, p, 1, i)).collect();
            let b: Vec<String> = (0..10).map(|i| variant(t, p, 2, i)).collect();
            assert_ne!(a, b, "{t} of {p:?}");
        }
    }
}

#[test]
fn twenty_variants_are_mostly_distinct() {
    let mut few = vec![];
    for t in text_types() {
        let p = PROMPTS[1];
        let distinct: HashSet<String> = (0..20).map(|i| variant(t, p, 7, i)).collect();
        let want = if t == MutationType::Custom {
            2
        } else if t == MutationType::LengthExtremes {
            // Empty ×5, separators ×3 for the two repetitions, chars of the prompt.
            8
        } else {
            15
        };
        if distinct.len() < want {
            few.push(format!("{t}: {} distinct of 20", distinct.len()));
        }
    }
    assert!(few.is_empty(), "{few:#?}");
}

#[test]
fn edge_prompts_never_panic_and_still_change() {
    for t in text_types() {
        for p in ["", "x", " ", "🚀", "a.b. c! ?", "{prompt}{x}"] {
            for i in 0..12 {
                let v = variant(t, p, 3, i);
                let empty_ok = p.is_empty() || (t == MutationType::LengthExtremes && i % 4 == 0);
                // Empty from an empty prompt: `noise`, and `length_extremes`' empty and
                // repeated ones (the planner drops them).
                let same_ok =
                    p.is_empty() && (t == MutationType::Noise || t == MutationType::LengthExtremes);
                assert!(v != p || same_ok, "{t} #{i} of {p:?}");
                assert!(!v.is_empty() || empty_ok, "{t} #{i} of {p:?}");
            }
        }
    }
}

#[test]
fn placeholders_are_filled_in_one_pass() {
    assert_eq!(
        super::fill2("a {prompt} {x} {y} {", "{x}", "{prompt}"),
        "a {x} {prompt} {y} {"
    );
    assert_eq!(
        super::fill("{prompt}|{prompt}", "{prompt}"),
        "{prompt}|{prompt}"
    );
}
