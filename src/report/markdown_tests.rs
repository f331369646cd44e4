use super::{cell, escape};

#[test]
fn a_name_in_backticks_stays_a_code_span() {
    assert_eq!(
        escape("critical check `cites-source` under `web_search-503` failed"),
        "critical check `cites-source` under `web_search-503` failed",
        "a code span's text is literal in Markdown: nothing in it is escaped"
    );
    // Outside code spans, punctuation still cannot become markup.
    assert_eq!(escape("*a* `b_c` _d_"), "\\*a\\* `b_c` \\_d\\_");
}

#[test]
fn a_lone_or_empty_backtick_is_escaped_and_html_stays_inert() {
    assert_eq!(escape("it's `open"), "it's \\`open");
    assert_eq!(escape("``"), "\\`\\`");
    assert_eq!(escape("<b>x</b>"), "&lt;b&gt;x&lt;/b&gt;");
    // Inside a code span HTML is shown as text by every Markdown renderer: kept as is, so
    // it reads as written rather than as `&lt;`.
    assert_eq!(escape("`<script>` <i>"), "`<script>` &lt;i&gt;");
    // In a table cell, a pipe inside a code span is escaped as GFM tables want.
    assert_eq!(cell("`a|b` c|d"), "`a\\|b` c\\|d");
}
