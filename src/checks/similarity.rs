//! A lexical similarity that needs no model: cosine similarity of word and word-pair counts
//! (lower-cased, alphanumeric words). 1.0 for the same words in the same order, near 0 for
//! unrelated texts; paraphrases with shared vocabulary land in between.

use std::collections::HashMap;

fn features(text: &str) -> HashMap<String, f64> {
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let mut f = HashMap::new();
    for w in &words {
        *f.entry(w.clone()).or_insert(0.0) += 1.0;
    }
    for pair in words.windows(2) {
        *f.entry(format!("{} {}", pair[0], pair[1])).or_insert(0.0) += 1.0;
    }
    f
}

/// Similarity of two texts in [0, 1]. Two empty texts are identical.
pub fn similarity(a: &str, b: &str) -> f64 {
    let (fa, fb) = (features(a), features(b));
    if fa.is_empty() && fb.is_empty() {
        return 1.0;
    }
    let dot: f64 = fa
        .iter()
        .filter_map(|(k, v)| fb.get(k).map(|w| v * w))
        .sum();
    let norm = |f: &HashMap<String, f64>| f.values().map(|v| v * v).sum::<f64>().sqrt();
    let denom = norm(&fa) * norm(&fb);
    if denom == 0.0 { 0.0 } else { dot / denom }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_texts_sensibly() {
        let base = "ACME's Q3 revenue was $4.1B according to the quarterly report.";
        assert!((similarity(base, base) - 1.0).abs() < 1e-9);
        let paraphrase = "According to the quarterly report, ACME's Q3 revenue was $4.1B.";
        let unrelated = "I cannot help with that request.";
        assert!(
            similarity(base, paraphrase) > 0.7,
            "{}",
            similarity(base, paraphrase)
        );
        assert!(
            similarity(base, unrelated) < 0.2,
            "{}",
            similarity(base, unrelated)
        );
        assert_eq!(similarity("", ""), 1.0);
        assert_eq!(similarity("words", ""), 0.0);
    }
}
