//! `custom`: the user's own `custom_templates`, cycled by index, `{prompt}` replaced
//! everywhere. Tests whatever the team knows its agent must withstand.

/// Empty when there is no template (the loader rejects `custom` without one; an empty
/// variant is dropped and counted by the planner).
pub(super) fn mutate(prompt: &str, index: usize, templates: &[(String, String)]) -> String {
    if templates.is_empty() {
        return String::new();
    }
    super::fill(&templates[index % templates.len()].1, prompt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycles_templates_and_replaces_every_placeholder() {
        let t = vec![
            ("a".to_string(), "Please: {prompt}".to_string()),
            ("b".to_string(), "{prompt} / {prompt}".to_string()),
        ];
        assert_eq!(mutate("hi", 0, &t), "Please: hi");
        assert_eq!(mutate("hi", 1, &t), "hi / hi");
        assert_eq!(mutate("hi", 2, &t), "Please: hi");
        // A prompt containing the placeholder is inserted as written, not expanded.
        assert_eq!(mutate("{prompt}", 1, &t), "{prompt} / {prompt}");
        assert_eq!(mutate("hi", 0, &[]), "");
    }
}
