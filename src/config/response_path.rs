//! `agent.response_path`: where the answer is in the agent's JSON response, parsed once at
//! load.

/// A compiled `response_path`: where the answer is in the agent's JSON response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponsePath {
    text: String,
    steps: Vec<Step>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

/// `agent.response_path` is not a path: the text and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{text}` is not a response path ({why}); write e.g. `result` or `choices[0].message.content`"
)]
pub struct ResponsePathError {
    pub text: String,
    pub why: &'static str,
}

impl ResponsePath {
    /// `result`, `choices[0].message.content`, `$.data.items[2]`, `$['odd key'].x`; `$` alone
    /// is the whole response.
    pub fn parse(text: &str) -> Result<ResponsePath, ResponsePathError> {
        let bad = |why: &'static str| ResponsePathError {
            text: text.to_string(),
            why,
        };
        let mut rest = text.trim();
        if let Some(r) = rest.strip_prefix('$') {
            rest = r.strip_prefix('.').unwrap_or(r);
        } else if rest.is_empty() {
            return Err(bad("empty"));
        }
        let mut steps = vec![];
        let mut key = String::new();
        let mut after_bracket = false;
        let mut chars = rest.chars().peekable();
        while let Some(c) = chars.next() {
            let bracket = c == '[';
            match c {
                '.' => {
                    if key.is_empty() && !after_bracket {
                        return Err(bad("empty segment"));
                    }
                    if !key.is_empty() {
                        steps.push(Step::Key(std::mem::take(&mut key)));
                    }
                }
                '[' => {
                    if !key.is_empty() {
                        steps.push(Step::Key(std::mem::take(&mut key)));
                    }
                    let inner: String = chars.by_ref().take_while(|c| *c != ']').collect();
                    let quoted = inner
                        .strip_prefix('\'')
                        .and_then(|s| s.strip_suffix('\''))
                        .or_else(|| inner.strip_prefix('"').and_then(|s| s.strip_suffix('"')));
                    match (quoted, inner.parse::<usize>()) {
                        (Some(k), _) => steps.push(Step::Key(k.to_string())),
                        (None, Ok(i)) => steps.push(Step::Index(i)),
                        _ => return Err(bad("an index must be a number or a quoted key")),
                    }
                }
                c => key.push(c),
            }
            after_bracket = bracket;
        }
        if !key.is_empty() {
            steps.push(Step::Key(key));
        }
        Ok(ResponsePath {
            text: text.to_string(),
            steps,
        })
    }

    /// The value at this path.
    pub fn get<'a>(&self, v: &'a serde_json::Value) -> Option<&'a serde_json::Value> {
        self.steps.iter().try_fold(v, |cur, step| match step {
            Step::Key(k) => cur.get(k),
            Step::Index(i) => cur.get(*i),
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_dotted_indexed_and_json_path() {
        let v = json!({"result": "hi", "choices": [{"message": {"content": "yo"}}], "odd key": {"x": 1}});
        let get = |p: &str| ResponsePath::parse(p).unwrap().get(&v).cloned();
        assert_eq!(get("result"), Some(json!("hi")));
        assert_eq!(get("choices[0].message.content"), Some(json!("yo")));
        assert_eq!(get("$.choices[0].message.content"), Some(json!("yo")));
        assert_eq!(get("$['odd key'].x"), Some(json!(1)));
        assert_eq!(get("$"), Some(v.clone()));
        assert_eq!(get("choices[1].message"), None);
        for bad in ["", "a..b", "a[x]"] {
            assert!(ResponsePath::parse(bad).is_err(), "{bad:?}");
        }
    }
}
