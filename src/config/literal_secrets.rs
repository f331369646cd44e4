//! Credentials written into the config file itself. Files get committed, pasted into
//! issues and printed by CI; a `${VAR}` reference keeps the secret in the environment.
//! `model.api_key` must be a reference (the shared schema, as Flakestorm v2 did: a load
//! error); the other credential fields get a warning so existing files keep loading.

use serde_json::Value;

use super::ConfigError;
use super::redact::looks_secret;

/// Header names whose values are credentials.
const CREDENTIAL_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "x-api-key",
    "api-key",
    "x-auth-token",
];

/// Whether a string from the file is a literal (no `${VAR}` in it) and not empty.
fn literal(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|s| !s.is_empty() && !s.contains("${"))
}

fn warning(path: &str, var: &str) -> String {
    format!(
        "{path}: a literal secret in the config file; use a reference such as \"${{{var}}}\" \
         and set the variable in the environment, so the file can be shared and committed"
    )
}

/// Appends a warning for each literal secret in the file's own value (before env/flags),
/// and an error for a literal `model.api_key`.
pub fn check(file: &Value, warnings: &mut Vec<String>, errors: &mut Vec<ConfigError>) {
    let at = |path: &[&str]| path.iter().try_fold(file, |v, k| v.get(k));
    if at(&["model", "api_key"]).is_some_and(literal) {
        errors.push(ConfigError::new(
            "model.api_key",
            "Literal API keys are not allowed in config. Use: api_key: \"${OPENAI_API_KEY}\"",
        ));
    }
    if at(&["control", "token"]).is_some_and(literal) {
        warnings.push(warning("control.token", "FLAKESTORM_API_TOKEN"));
    }
    if let Some(Value::Array(users)) = at(&["proxy", "users"]) {
        for (i, u) in users.iter().enumerate() {
            if u.get("password").is_some_and(literal) {
                let var = format!("PROXY_PASSWORD_{}", i + 1);
                warnings.push(warning(&format!("proxy.users[{i}].password"), &var));
            }
        }
    }
    if at(&["advanced", "embeddings", "api_key"]).is_some_and(literal) {
        warnings.push(warning("advanced.embeddings.api_key", "EMBEDDINGS_API_KEY"));
    }
    if let Some(Value::Object(headers)) = at(&["agent", "headers"]) {
        for (name, value) in headers {
            let lower = name.to_ascii_lowercase();
            let credential = CREDENTIAL_HEADERS.contains(&lower.as_str())
                || ["token", "secret", "key", "auth"]
                    .iter()
                    .any(|w| lower.contains(w))
                || value.as_str().is_some_and(looks_secret);
            if credential && literal(value) {
                let var = lower.replace('-', "_").to_ascii_uppercase();
                warnings.push(warning(&format!("agent.headers.{name}"), &var));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warnings(yaml: &str) -> Vec<String> {
        let v: Value = figment::Figment::from(
            <crate::config::Yaml as figment::providers::Format>::string(yaml),
        )
        .extract()
        .unwrap();
        let mut out = vec![];
        let mut errors = vec![];
        check(&v, &mut out, &mut errors);
        out.extend(errors.iter().map(ToString::to_string));
        out.into_iter()
            .map(|w| w.split(':').next().unwrap().to_string())
            .collect()
    }

    #[test]
    fn literal_credentials_are_named_references_are_not() {
        let got = warnings(
            r#"
control: {token: "t0ps3cret"}
proxy:
  users: [{name: a, password: "${PW}"}, {name: b, password: hunter2}]
advanced: {embeddings: {url: "http://x", model: m, api_key: "sk-abc"}}
agent:
  endpoint: http://x
  headers: {Authorization: "Bearer abc", X-Trace: "run-1", X-Custom: "sk-live-123", Cookie: "${C}"}
"#,
        );
        assert_eq!(
            got,
            [
                "control.token",
                "proxy.users[1].password",
                "advanced.embeddings.api_key",
                "agent.headers.Authorization",
                "agent.headers.X-Custom",
            ]
        );
        assert_eq!(warnings("model: {api_key: sk-abc}\n"), ["model.api_key"]);
        assert!(warnings("model: {api_key: \"${K}\"}\n").is_empty());
        assert!(warnings("control: {token: \"${T}\"}\n").is_empty());
    }
}
