use super::*;
use crate::otel::testing::{bodies, chat, pending};

fn prepared(content: bool) -> Prepared {
    let (ex, b) = chat();
    pending(ex, Some(b), true).prepare(content)
}

#[test]
fn a_held_span_keeps_what_the_span_says_not_the_bodies() {
    let (ex, _) = chat();
    let big = "x".repeat(200 << 10);
    let request =
        format!(r#"{{"model":"gpt-x","messages":[{{"role":"user","content":"{big}"}}]}}"#);
    let b = bodies(&request, &format!(r#"{{"model":"gpt-x","pad":"{big}"}}"#));
    let without = pending(ex.clone(), Some(b.clone()), true).prepare(false);
    assert!(without.weight < 4 << 10, "{}", without.weight);
    // With content, what was said is kept: the prompt's text cut at 16 KiB (half the
    // attribute's 32 KiB), the answer's padding not at all.
    let with = pending(ex, Some(b), true).prepare(true);
    assert!(
        with.weight > 16 << 10 && with.weight < 20 << 10,
        "{}",
        with.weight
    );
}

#[test]
fn the_hold_is_bounded_by_bytes() {
    let w = prepared(false).weight;
    let mut hold = Hold::new(1000, 2 * w + w / 2);
    assert!(hold.put("t1", prepared(false)));
    assert!(hold.put("t2", prepared(false)));
    assert!(!hold.put("t1", prepared(false)), "no room for a third");
    assert_eq!(hold.size(), (2, 2 * w));
    assert_eq!(hold.take("t1").len(), 1);
    assert_eq!(hold.size(), (1, w));
    assert!(hold.put("t3", prepared(false)), "room again once taken");
    assert_eq!(hold.drain().len(), 2);
    assert_eq!(hold.size(), (0, 0));
    assert!(hold.take("t2").is_empty());
}

#[test]
fn the_hold_is_bounded_by_count() {
    let mut hold = Hold::new(2, usize::MAX);
    assert!(hold.put("t", prepared(false)));
    assert!(hold.put("t", prepared(false)));
    assert!(!hold.put("u", prepared(false)));
    assert_eq!(hold.take("t").len(), 2);
}
