//! Text shown to people on one line: cut to a length at a character boundary; text put
//! into XML or HTML: the one escaper. Below every module that prints a prompt, an answer
//! or a config path.

/// At most `chars` characters of `s`, with `…` when it was longer: a prompt (a mutated one
/// can be 100 KB) or an answer shown on one line.
pub fn cut(s: &str, chars: usize) -> String {
    match s.char_indices().nth(chars) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

/// Which quotes `xml_escape` turns into entities besides `&`, `<` and `>`: each caller's
/// output is pinned (JUnit and wire attacks escape both, a poisoned prompt's XML `"` only,
/// Markdown neither), so the choice is the caller's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quotes {
    None,
    Double,
    Both,
}

/// The entity `c` is written as in XML text or an attribute, if any.
pub fn xml_entity(c: char, quotes: Quotes) -> Option<&'static str> {
    match (c, quotes) {
        ('&', _) => Some("&amp;"),
        ('<', _) => Some("&lt;"),
        ('>', _) => Some("&gt;"),
        ('"', Quotes::Double | Quotes::Both) => Some("&quot;"),
        ('\'', Quotes::Both) => Some("&apos;"),
        _ => None,
    }
}

/// `s` as XML text or an attribute value: markup characters as entities.
pub fn xml_escape(s: &str, quotes: Quotes) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match xml_entity(c, quotes) {
            Some(e) => out.push_str(e),
            None => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_escape_writes_the_quotes_asked_for() {
        let s = r#"<a href="x">Tom's & co</a>"#;
        assert_eq!(
            xml_escape(s, Quotes::Both),
            "&lt;a href=&quot;x&quot;&gt;Tom&apos;s &amp; co&lt;/a&gt;"
        );
        assert_eq!(
            xml_escape(s, Quotes::Double),
            "&lt;a href=&quot;x&quot;&gt;Tom's &amp; co&lt;/a&gt;"
        );
        assert_eq!(
            xml_escape(s, Quotes::None),
            "&lt;a href=\"x\"&gt;Tom's &amp; co&lt;/a&gt;"
        );
    }

    #[test]
    fn cut_keeps_whole_characters_and_marks_what_it_left_out() {
        assert_eq!(cut("héllo", 2), "hé…");
        assert_eq!(cut("héllo", 5), "héllo");
        assert_eq!(cut("", 3), "");
    }
}
