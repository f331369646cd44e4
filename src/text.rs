//! Text shown to people on one line: cut to a length at a character boundary. Below every
//! module that prints a prompt, an answer or a config path.

/// At most `chars` characters of `s`, with `…` when it was longer: a prompt (a mutated one
/// can be 100 KB) or an answer shown on one line.
pub fn cut(s: &str, chars: usize) -> String {
    match s.char_indices().nth(chars) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_keeps_whole_characters_and_marks_what_it_left_out() {
        assert_eq!(cut("héllo", 2), "hé…");
        assert_eq!(cut("héllo", 5), "héllo");
        assert_eq!(cut("", 3), "");
    }
}
