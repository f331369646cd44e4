use super::*;

fn decimals(s: &str) -> usize {
    s.split_once('.').map_or(0, |(_, f)| f.len())
}

#[test]
fn integers_stay_integers_with_their_sign_and_two_digits_at_least() {
    for draw in 0..200 {
        let mut c = Canaries::new(draw, [1250.0, 7.0, -40.0]);
        let big = c.number("1250").unwrap();
        let v: i64 = big.parse().unwrap();
        assert!(v != 1250 && (437..=2375).contains(&v), "{big}");
        let small = c.number("7").unwrap();
        let v: i64 = small.parse().unwrap();
        assert!((10..=19).contains(&v), "two digits near it: {small}");
        let neg = c.number("-40").unwrap();
        assert!(neg.starts_with('-') && !neg.contains('.'), "{neg}");
        assert!(neg.parse::<i64>().unwrap().abs() >= 10);
    }
}

#[test]
fn flags_and_zero_are_left_alone() {
    let mut c = Canaries::new(1, []);
    for n in ["0", "1", "-1", "0.0", "-0.0"] {
        assert_eq!(c.number(n), None, "{n}");
    }
    assert!(
        c.number("1.0").is_some(),
        "a float 1.0 is a measure, not a flag"
    );
}

#[test]
fn floats_keep_their_decimals_and_never_end_in_zero() {
    for draw in 0..200 {
        let mut c = Canaries::new(draw, []);
        let t = c.number("21.5").unwrap();
        assert_eq!(decimals(&t), 1, "{t}");
        assert!(!t.ends_with('0') && t != "21.5");
        let t = c.number("1234.75").unwrap();
        assert_eq!(decimals(&t), 2, "{t}");
        let v: f64 = t.parse().unwrap();
        assert!((1234.75 * 0.34..1234.75 * 1.91).contains(&v), "{t}");
        // Too small for two significant digits at two decimals: more decimals.
        let t = c.number("0.05").unwrap();
        let v: f64 = t.parse().unwrap();
        assert!(v > 0.0 && decimals(&t) >= 2, "{t}");
        let sig = t.trim_start_matches(['0', '.']);
        assert!(sig.len() >= 2, "{t}");
        let t = c.number("3.0").unwrap();
        assert_eq!(decimals(&t), 1, "{t}");
        assert!(c.number("1.5e-7").unwrap().contains('e'));
    }
}

#[test]
fn a_canary_matches_no_number_of_the_body_and_repeats_for_the_same_original() {
    // A body of every integer from 10 to 99: no two-digit canary is free, so the planted
    // values must go elsewhere (or nothing is planted), never onto another number.
    let body: Vec<f64> = (10..100).map(f64::from).collect();
    for draw in 0..50 {
        let mut c = Canaries::new(draw, body.iter().copied());
        if let Some(t) = c.number("50") {
            let v: f64 = t.parse().unwrap();
            assert!(!body.contains(&v), "{t}");
        }
        let mut c = Canaries::new(draw, [12.0, 30.0]);
        let a = c.number("30").unwrap();
        assert_eq!(c.number("30").unwrap(), a, "one original, one canary");
        assert_ne!(c.number("12").unwrap(), a);
    }
}

#[test]
fn the_same_draw_plants_the_same_values_and_other_draws_others() {
    let plant = |draw| {
        let mut c = Canaries::new(draw, []);
        (c.number("4821"), c.number("21.5"), c.short_string("Paris"))
    };
    assert_eq!(plant(7), plant(7));
    let distinct: std::collections::HashSet<_> = (0..20).map(plant).collect();
    assert!(distinct.len() >= 19, "draws differ: {distinct:?}");
}

#[test]
fn dates_move_three_to_four_hundred_days() {
    let day = crate::plant::date::find("2026-11-28")[0].date;
    for draw in 0..300 {
        let mut c = Canaries::new(draw, []);
        let new = c.date(day).unwrap();
        let moved = crate::plant::date::find(&new)[0].date;
        let days = (moved - day).whole_days().abs();
        assert!((3..=400).contains(&days), "{new}: {days}");
        assert_eq!(c.date(day).unwrap(), new, "the same day, the same canary");
    }
}

#[test]
fn short_strings_keep_their_shape() {
    for draw in 0..200 {
        let mut c = Canaries::new(draw, []);
        let id = c.short_string("ORD-4821").unwrap();
        assert!(
            id.starts_with("ORD-") && id.len() == 8 && id != "ORD-4821",
            "{id}"
        );
        assert!(id[4..].bytes().all(|b| b.is_ascii_digit()) && !id[4..].starts_with('0'));
        let city = c.short_string("Paris").unwrap();
        assert!((4..=6).contains(&city.len()), "{city}");
        assert!(
            city.starts_with(|ch: char| ch.is_ascii_uppercase()),
            "{city}"
        );
        assert!(city[1..].bytes().all(|b| b.is_ascii_lowercase()), "{city}");
        let two = c.short_string("New York").unwrap();
        assert_eq!(two.split(' ').count(), 2, "{two}");
        assert!(
            two.split(' ')
                .all(|w| w.starts_with(|ch: char| ch.is_ascii_uppercase()))
        );
        let code = c.short_string("USD").unwrap();
        assert!(
            code.len() == 3 && code.bytes().all(|b| b.is_ascii_uppercase()),
            "{code}"
        );
        let t = c.short_string("09:30").unwrap();
        let (h, m) = t.split_once(':').unwrap();
        assert!(h.len() == 2 && h.parse::<u8>().unwrap() < 24 && m.parse::<u8>().unwrap() < 60);
    }
    let mut c = Canaries::new(1, []);
    assert_eq!(c.short_string("https://example.com"), None);
    assert_eq!(
        c.short_string("a b"),
        None,
        "single letters: nothing to change"
    );
}
