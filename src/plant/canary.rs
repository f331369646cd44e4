//! Canary values: believable replacements for a body's numbers and dates (short strings:
//! `words.rs`), drawn from one stream seeded by the rule's draw, so each case plants its
//! own values and the same call plants the same ones. Each is distinctive, so finding it
//! later in what the agent says is no coincidence: a number keeps its kind, sign and
//! decimals, moves by a factor (0.35..0.8 or 1.25..1.9), has at least two significant
//! digits and equals no other number of the body; a date moves 3..=400 days. Within one
//! body an original always gets the same canary (a value repeated in an MCP result's
//! structured and text content stays one value).

use std::collections::{HashMap, HashSet};

use time::Date;

/// The canaries of one body.
pub(super) struct Canaries {
    state: u64,
    /// Every number of the body and every number planted so far (as f64 bits).
    taken: HashSet<u64>,
    /// Original (tagged by kind) → canary.
    memo: HashMap<String, String>,
}

impl Canaries {
    /// Canaries seeded by `draw`, for a body whose numbers are `numbers`.
    pub(super) fn new(draw: u64, numbers: impl IntoIterator<Item = f64>) -> Self {
        Canaries {
            // Not the draw itself: it also decided whether the rule fired.
            state: draw ^ 0x0c0f_fee0_d15e_a5e5,
            taken: numbers.into_iter().map(f64::to_bits).collect(),
            memo: HashMap::new(),
        }
    }

    /// The next 64 random bits (SplitMix64).
    pub(super) fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A factor away from 1: down (0.35..0.8) or up (1.25..1.9).
    fn factor(&mut self) -> f64 {
        match self.below(2) {
            0 => 0.35 + 0.45 * self.unit(),
            _ => 1.25 + 0.65 * self.unit(),
        }
    }

    /// The canary of `original` (tagged `kind`), made once per body by `make`.
    pub(super) fn memo(
        &mut self,
        kind: char,
        original: &str,
        make: impl FnOnce(&mut Self) -> Option<String>,
    ) -> Option<String> {
        let key = format!("{kind}{original}");
        if let Some(p) = self.memo.get(&key) {
            return Some(p.clone());
        }
        let planted = make(self)?;
        self.memo.insert(key, planted.clone());
        Some(planted)
    }

    /// The canary of a number written `text` (`-12`, `21.50`, `1.5e3`); `None` for what
    /// stays: the integers -1, 0 and 1 (flags), zero, what is not a finite number.
    pub(super) fn number(&mut self, text: &str) -> Option<String> {
        self.memo('n', text, |c| c.fresh_number(text))
    }

    fn fresh_number(&mut self, text: &str) -> Option<String> {
        let value: f64 = text.parse().ok().filter(|v: &f64| v.is_finite())?;
        let form = Form::of(text);
        if value == 0.0 || (form == Form::Int && value.abs() <= 1.0) {
            return None;
        }
        for _ in 0..64 {
            let (planted, v) = self.scaled(value, form);
            if v != value && self.taken.insert(v.to_bits()) {
                return Some(planted);
            }
        }
        None
    }

    /// `value` times a factor, written in `form`.
    fn scaled(&mut self, value: f64, form: Form) -> (String, f64) {
        let sign = if value < 0.0 { "-" } else { "" };
        let a = value.abs();
        let text = match form {
            Form::Int => {
                let mut p = (a * self.factor()).round();
                if p < 10.0 {
                    // Two significant digits at least: a one-digit value is no canary.
                    p = (a * (1.25 + 0.65 * self.unit())).round();
                }
                if p < 10.0 {
                    // A one-digit original (2..=9) gets a two-digit canary near it: 10..a+12.
                    p = (10 + self.below(a as u64 + 3)) as f64;
                }
                format!("{sign}{p:.0}")
            }
            Form::Decimals(d) => self.decimals(a, d).map_or_else(
                || format!("{sign}{:.2e}", a * self.factor()),
                |t| format!("{sign}{t}"),
            ),
            Form::Exponent => format!("{sign}{:.2e}", a * self.factor()),
        };
        let v = text.parse().unwrap_or(value);
        (text, v)
    }

    /// `a` times a factor with `d` decimals (more when it would have fewer than two
    /// significant digits), its last decimal never 0 so it prints as many; `None` when
    /// the value is too large to write so.
    fn decimals(&mut self, a: f64, d: usize) -> Option<String> {
        let p = a * self.factor();
        let mut d = d.max(1);
        while d < 12 && (p * 10f64.powi(d as i32)).round() < 10.0 {
            d += 1;
        }
        let scaled = p * 10f64.powi(d as i32);
        if !(1.0..1e30).contains(&scaled) {
            return None;
        }
        let mut n = scaled.round() as u128;
        if n.is_multiple_of(10) {
            n += 1 + u128::from(self.below(9) as u8);
        }
        let pow = 10u128.pow(d as u32);
        Some(format!("{}.{:0>d$}", n / pow, n % pow))
    }

    /// `date` moved 3..=400 days either way, written `YYYY-MM-DD` (the same canary for the
    /// same day within a body).
    pub(super) fn date(&mut self, date: Date) -> Option<String> {
        let key = super::date::shift(date, 0)?;
        self.memo('d', &key, |c| {
            let days = 3 + c.below(398) as i64;
            let days = if c.below(2) == 0 { -days } else { days };
            super::date::shift(date, days).or_else(|| super::date::shift(date, -days))
        })
    }
}

/// How a number is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    Int,
    /// With this many decimals.
    Decimals(usize),
    Exponent,
}

impl Form {
    fn of(text: &str) -> Form {
        if text.contains(['e', 'E']) {
            Form::Exponent
        } else {
            match text.split_once('.') {
                Some((_, frac)) => Form::Decimals(frac.len()),
                None => Form::Int,
            }
        }
    }
}

#[cfg(test)]
#[path = "canary_tests.rs"]
mod tests;
