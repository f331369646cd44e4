//! `${VAR}` expansion inside string values, from the environment, at load time.
//! `$$` is a literal `$`. A missing variable is an error naming it and the path.

// Walks serde_json values: foreign enums, where a catch-all arm is the point.
#![allow(clippy::wildcard_enum_match_arm)]

use serde_json::Value;

use super::ConfigError;

/// A variable's value, or the whole message for one that is not available.
pub type Lookup<'a> = dyn Fn(&str) -> Result<String, String> + 'a;

/// Expands every string inside `value` in place; problems go to `errors`.
pub fn expand_value(value: &mut Value, path: &str, env: &Lookup, errors: &mut Vec<ConfigError>) {
    match value {
        Value::String(s) => match expand_str(s, env) {
            Ok(expanded) => *s = expanded,
            Err(message) => errors.push(ConfigError::new(path, message)),
        },
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                expand_value(item, &format!("{path}[{i}]"), env, errors);
            }
        }
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                let child = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                expand_value(v, &child, env, errors);
            }
        }
        _ => {}
    }
}

/// Expands one string; the error names the first missing or malformed variable.
pub fn expand_str(s: &str, env: &Lookup) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(body) = after.strip_prefix('{') {
            let end = body
                .find('}')
                .ok_or_else(|| format!("unterminated `${{` in {s:?}"))?;
            let name = &body[..end];
            if !is_var_name(name) {
                return Err(format!(
                    "`${{{name}}}` is not a valid environment variable reference"
                ));
            }
            let value = env(name)?;
            out.push_str(&value);
            rest = &body[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// The names `text` refers to as `${NAME}` (`$${` is a literal), each once, in order.
pub fn referenced(text: &str) -> Vec<String> {
    let mut names: Vec<String> = vec![];
    let mut rest = text;
    while let Some(pos) = rest.find('$') {
        let after = &rest[pos + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            rest = tail;
        } else if let Some((name, tail)) = after.strip_prefix('{').and_then(|b| b.split_once('}')) {
            if is_var_name(name) && !names.iter().any(|n| n == name) {
                names.push(name.to_string());
            }
            rest = tail;
        } else {
            rest = after;
        }
    }
    names
}

pub fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Result<String, String> {
        (name == "TOKEN")
            .then(|| "s3cret".to_string())
            .ok_or_else(|| format!("environment variable `{name}` is not set"))
    }

    #[test]
    fn expands_and_escapes() {
        assert_eq!(
            expand_str("Bearer ${TOKEN}", &env).unwrap(),
            "Bearer s3cret"
        );
        assert_eq!(expand_str("$$5 and $x", &env).unwrap(), "$5 and $x");
        assert_eq!(
            expand_str("a${TOKEN}b${TOKEN}", &env).unwrap(),
            "as3cretbs3cret"
        );
    }

    #[test]
    fn referenced_names_each_once_escapes_skipped() {
        let text = "a: ${A}\nb: \"$${NOT} ${B} ${A}\"\nc: ${bad-name} ${C";
        assert_eq!(referenced(text), ["A", "B"]);
    }

    #[test]
    fn missing_and_malformed_are_errors_with_paths() {
        let mut v = serde_json::json!({"a": {"b": ["ok", "${NOPE}"]}, "c": "${TOKEN"});
        let mut errors = vec![];
        expand_value(&mut v, "", &env, &mut errors);
        let text: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
        assert_eq!(
            text,
            [
                "a.b[1]: environment variable `NOPE` is not set",
                "c: unterminated `${` in \"${TOKEN\""
            ]
        );
    }
}
