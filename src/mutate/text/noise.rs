//! `noise`: typos. Adjacent swaps, dropped and doubled characters, QWERTY-neighbour
//! substitutions and case flips at `noise_rate`; tests that the agent reads through the
//! sloppy typing of real users. Works on chars, so it never splits a UTF-8 sequence.

use super::Draw;

/// Each lowercase letter's neighbours on a QWERTY keyboard.
const NEIGHBOURS: [(char, &str); 26] = [
    ('a', "qwsz"),
    ('b', "vghn"),
    ('c', "xdfv"),
    ('d', "serfcx"),
    ('e', "wsdr"),
    ('f', "drtgvc"),
    ('g', "ftyhbv"),
    ('h', "gyujnb"),
    ('i', "ujko"),
    ('j', "huikmn"),
    ('k', "jiolm"),
    ('l', "kop"),
    ('m', "njk"),
    ('n', "bhjm"),
    ('o', "iklp"),
    ('p', "ol"),
    ('q', "wa"),
    ('r', "edft"),
    ('s', "awedxz"),
    ('t', "rfgy"),
    ('u', "yhji"),
    ('v', "cfgb"),
    ('w', "qase"),
    ('x', "zsdc"),
    ('y', "tghu"),
    ('z', "asx"),
];

fn neighbour(c: char, d: &mut Draw) -> Option<char> {
    let lower = c.to_ascii_lowercase();
    let (_, near) = NEIGHBOURS.iter().find(|(k, _)| *k == lower)?;
    let near: Vec<char> = near.chars().collect();
    let n = *d.pick(&near);
    Some(if c.is_ascii_uppercase() {
        n.to_ascii_uppercase()
    } else {
        n
    })
}

fn flip_case(c: char, out: &mut String) {
    if c.is_lowercase() {
        out.extend(c.to_uppercase());
    } else if c.is_uppercase() {
        out.extend(c.to_lowercase());
    } else {
        out.push(c);
    }
}

/// Each char is changed with probability `rate`; a non-empty prompt always gets at least
/// one change, and never becomes empty (a doubled char, when the draws changed nothing).
pub(super) fn mutate(prompt: &str, rate: f64, d: &mut Draw) -> String {
    let chars: Vec<char> = prompt.chars().collect();
    if chars.is_empty() {
        return String::new();
    }
    let mut out = String::with_capacity(prompt.len() + 8);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        if !d.chance(rate) {
            out.push(c);
            continue;
        }
        match d.below(5) {
            0 if i < chars.len() => {
                out.push(chars[i]);
                out.push(c);
                i += 1;
            }
            1 => {} // dropped
            2 => {
                out.push(c);
                out.push(c);
            }
            3 => match neighbour(c, d) {
                Some(n) => out.push(n),
                None => flip_case(c, &mut out),
            },
            _ => flip_case(c, &mut out),
        }
    }
    // Unchanged, or a one-char prompt dropped to nothing: double one char instead.
    if out == prompt || out.is_empty() {
        let at = d.below(chars.len());
        out = chars[..=at].iter().chain(&chars[at..]).collect();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mutate::kind::MutationType;

    fn run(p: &str, rate: f64, seed: u64, index: u32) -> String {
        mutate(p, rate, &mut Draw::new(seed, MutationType::Noise, p, index))
    }

    #[test]
    fn rate_sets_how_much_changes_and_zero_still_changes_one_char() {
        let p = "The quick brown fox jumps over the lazy dog, again and again and again.";
        // Edit distance (Levenshtein) from the prompt.
        let changed = |v: &str| {
            let a: Vec<char> = p.chars().collect();
            let mut row: Vec<usize> = (0..=a.len()).collect();
            for (j, cb) in v.chars().enumerate() {
                let mut prev = row[0];
                row[0] = j + 1;
                for i in 1..=a.len() {
                    let cur = row[i];
                    row[i] = (prev + usize::from(a[i - 1] != cb))
                        .min(row[i] + 1)
                        .min(row[i - 1] + 1);
                    prev = cur;
                }
            }
            row[a.len()]
        };
        for i in 0..20 {
            let v = run(p, 0.0, 1, i);
            assert_ne!(v, p);
            // One doubled char: one char longer, the prompt with that char removed.
            assert_eq!(v.chars().count(), p.chars().count() + 1, "{v}");
        }
        let low: usize = (0..20).map(|i| changed(&run(p, 0.02, 1, i))).sum();
        let high: usize = (0..20).map(|i| changed(&run(p, 0.5, 1, i))).sum();
        // 72 chars: about 1.4 edits per variant at 0.02, about 36 at 0.5.
        assert!(
            (20..=80).contains(&low),
            "rate 0.02: {low} edits in 20 variants"
        );
        assert!(high > 400, "rate 0.5: {high} edits in 20 variants");
    }

    #[test]
    fn unicode_prompts_stay_valid_and_single_chars_change() {
        for i in 0..50 {
            let v = run("Ünïcödé 東京 🚀 ça", 0.9, 3, i);
            assert_ne!(v, "Ünïcödé 東京 🚀 ça");
            // Every char of the variant comes from the prompt, a neighbour or a case flip.
            assert!(
                v.chars()
                    .all(|c| c.is_alphanumeric() || c == ' ' || c == '🚀')
            );
        }
        assert_eq!(run("x", 0.0, 1, 0), "xx");
        assert_eq!(run("", 0.5, 1, 0), "");
    }
}
