use super::*;

fn corrupted(s: &str, draw: u64) -> (String, Vec<(String, String)>) {
    let mut c = Canaries::new(draw, values(s));
    let reps = corrupt(s, &mut c);
    let pairs = reps
        .iter()
        .map(|r| (s[r.start..r.end].to_string(), r.new.clone()))
        .collect();
    (apply(s, &reps), pairs)
}

#[test]
fn numbers_are_found_by_shape_and_not_inside_words_versions_times_or_dates() {
    let s = "Temp -5°C at 10:30 on 2026-11-28, v1.2.3, x86, ORD-4821, revenue $4.1B, pop 1,234,567 (3rd).";
    let found: Vec<&str> = numbers(s).iter().map(|(a, b)| &s[*a..*b]).collect();
    assert_eq!(found, ["-5", "4821", "4.1", "1,234,567", "3"]);
}

#[test]
fn corrupt_replaces_numbers_and_dates_and_nothing_else() {
    let s = "Paris: 21.5 C, humidity 64%, updated 2026-11-28T10:00:00Z. Order ORD-4821.";
    let (out, pairs) = corrupted(s, 3);
    let originals: Vec<&str> = pairs.iter().map(|(o, _)| o.as_str()).collect();
    assert_eq!(originals, ["21.5", "64", "2026-11-28", "4821"]);
    for (o, n) in &pairs {
        assert_ne!(o, n);
        assert!(out.contains(n.as_str()), "{out}");
    }
    assert!(
        out.starts_with("Paris: ") && out.contains("T10:00:00Z. Order ORD-"),
        "{out}"
    );
    assert_eq!(
        len_after(s, &corrupt(s, &mut Canaries::new(3, values(s)))),
        out.len()
    );
}

#[test]
fn grouped_thousands_stay_grouped() {
    let (out, pairs) = corrupted("population 1,234,567", 5);
    let new = &pairs[0].1;
    assert!(out.ends_with(new.as_str()));
    let groups: Vec<&str> = new.split(',').collect();
    assert!(
        groups.len() >= 2 && groups[1..].iter().all(|g| g.len() == 3),
        "{new}"
    );
}

#[test]
fn stale_moves_only_dates_back() {
    let s = "Checked 2026-11-28, valid until 2027-01-01T00:00:00+02:00; 42 items.";
    let out = apply(s, &stale(s, 30));
    assert_eq!(
        out,
        "Checked 2026-10-29, valid until 2026-12-02T00:00:00+02:00; 42 items."
    );
    assert!(stale("no dates, 42 items", 30).is_empty());
}
