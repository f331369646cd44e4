//! Text similarity for `similarity` and `behavior_unchanged`. The default is lexical and
//! needs no model: cosine similarity of word and word-pair counts (lower-cased,
//! alphanumeric words). 1.0 for the same words in the same order, near 0 for unrelated
//! texts; paraphrases with shared vocabulary land in between. `Similarity::Embedded` is the
//! cosine of vectors an embeddings endpoint computed beforehand (`run::embed`): this module
//! only reads them and never does I/O.

use std::collections::HashMap;
use std::sync::Arc;

/// How two texts are compared.
#[derive(Debug, Clone, Default)]
pub enum Similarity {
    #[default]
    Lexical,
    /// An embedding vector for every text the checks will compare.
    Embedded(Arc<HashMap<String, Vec<f32>>>),
    /// The embeddings endpoint failed (why): nothing can be compared, and nothing falls
    /// back to the lexical measure.
    Unavailable(Arc<str>),
}

impl Similarity {
    /// The measure's name in verdict reasons.
    pub fn name(&self) -> &'static str {
        match self {
            Similarity::Lexical => "lexical similarity",
            Similarity::Embedded(_) | Similarity::Unavailable(_) => "embedding similarity",
        }
    }

    /// Similarity of `a` and `b`, or why it cannot be measured. Blank texts are not
    /// embedded: two score 1, one scores 0 against any other text.
    pub fn score(&self, a: &str, b: &str) -> Result<f64, String> {
        let vectors = match self {
            Similarity::Lexical => return Ok(similarity(a, b)),
            Similarity::Unavailable(why) => return Err(format!("no embedding similarity: {why}")),
            Similarity::Embedded(v) => v,
        };
        match (a.trim().is_empty(), b.trim().is_empty()) {
            (true, true) => return Ok(1.0),
            (true, false) | (false, true) => return Ok(0.0),
            _ => {}
        }
        let get = |t: &str| {
            vectors.get(t).ok_or_else(|| {
                let head: String = t.chars().take(40).collect();
                format!("no embedding for the text {head:?}")
            })
        };
        Ok(cosine(get(a)?, get(b)?))
    }
}

/// Cosine of two vectors (0 when either is zero or their lengths differ).
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() {
        return 0.0;
    }
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let norm = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let denom = norm(a) * norm(b);
    if denom == 0.0 { 0.0 } else { dot / denom }
}

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

    #[test]
    fn embedded_similarity_is_the_cosine_and_never_falls_back() {
        assert!((cosine(&[1.0, 0.0], &[2.0, 0.0]) - 1.0).abs() < 1e-9);
        assert!(cosine(&[1.0, 0.0], &[0.0, 3.0]).abs() < 1e-9);
        assert!((cosine(&[1.0, 1.0], &[-1.0, -1.0]) + 1.0).abs() < 1e-9);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
        assert_eq!(cosine(&[1.0], &[1.0, 0.0]), 0.0);
        let vectors = [
            ("a".to_string(), vec![1.0, 0.0]),
            ("b".into(), vec![1.0, 1.0]),
        ];
        let m = Similarity::Embedded(Arc::new(vectors.into()));
        let s = m.score("a", "b").unwrap();
        assert!((s - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-6, "{s}");
        assert_eq!(m.score(" ", ""), Ok(1.0));
        assert_eq!(m.score("a", ""), Ok(0.0));
        assert_eq!(
            m.score("a", "unseen"),
            Err("no embedding for the text \"unseen\"".into()),
            "a missing vector is not a lexical score"
        );
        let down = Similarity::Unavailable("endpoint http://e/ answered HTTP 500".into());
        assert_eq!(
            down.score("a", "a"),
            Err("no embedding similarity: endpoint http://e/ answered HTTP 500".into())
        );
        let lexical = Similarity::Lexical.score("a b", "a b").unwrap();
        assert!((lexical - 1.0).abs() < 1e-9);
    }
}
