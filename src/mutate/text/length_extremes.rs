//! `length_extremes`: the empty prompt, one character, the prompt ten times and ~100 KB of
//! it. Tests input validation and context limits: no crash, no hang, a sensible refusal.

use super::Draw;

/// About 100 KB: the long variant repeats the prompt until it reaches this many bytes.
pub(super) const LONG_BYTES: usize = 100_000;

const SEPARATORS: [&str; 3] = [" ", "\n", ""];

/// Cycles by index: empty (dropped by the planner, and counted), one char, 10×, ~100 KB.
pub(super) fn mutate(prompt: &str, index: usize, d: &mut Draw) -> String {
    match index % 4 {
        0 => String::new(),
        1 => {
            let chars: Vec<char> = prompt.chars().collect();
            if chars.len() <= 1 {
                // The prompt is already one char (or none): a different single char.
                return if chars.first() == Some(&'?') {
                    "a"
                } else {
                    "?"
                }
                .into();
            }
            d.pick(&chars).to_string()
        }
        2 => [prompt; 10].join(*d.pick(&SEPARATORS)),
        _ => {
            let sep = *d.pick(&SEPARATORS);
            let unit = prompt.len() + sep.len();
            if unit == 0 {
                return "A".repeat(LONG_BYTES);
            }
            let n = LONG_BYTES.div_ceil(unit);
            vec![prompt; n].join(sep)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mutate::kind::MutationType;

    #[test]
    fn all_four_lengths() {
        let p = "What is the capital of France?";
        let v = |i: usize| {
            mutate(
                p,
                i,
                &mut Draw::new(1, MutationType::LengthExtremes, p, i as u32),
            )
        };
        assert_eq!(v(0), "");
        assert_eq!(v(1).chars().count(), 1);
        assert!(p.contains(&v(1)));
        assert_eq!(v(2).matches(p).count(), 10);
        assert!(v(2).len() < 11 * p.len());
        let long = v(3);
        assert!((LONG_BYTES..LONG_BYTES + 2 * p.len()).contains(&long.len()));
        assert!(long.starts_with(p) && long.ends_with(p));
        assert_eq!(
            mutate(
                "x",
                1,
                &mut Draw::new(1, MutationType::LengthExtremes, "x", 1)
            ),
            "?"
        );
        assert_eq!(
            mutate(
                "",
                3,
                &mut Draw::new(1, MutationType::LengthExtremes, "", 3)
            )
            .len(),
            LONG_BYTES
        );
    }
}
