//! The YAML format every config, session file, profile and chaos body is read with:
//! figment's `Format` over `yaml_serde`, the YAML organization's maintained continuation of
//! serde_yaml 0.9 (figment's own `yaml` feature pulls the deprecated serde_yaml). The same
//! scalar resolution (YAML 1.1 words such as `yes` stay strings, `0x10` is a number) and
//! the same bound on alias expansion as before.

use figment::providers::Format;
use serde::de::DeserializeOwned;

/// `Yaml::string(text)` / `Yaml::file(path)`: a figment provider of YAML.
#[derive(Debug, Clone, Copy)]
pub struct Yaml;

impl Format for Yaml {
    type Error = yaml_serde::Error;

    const NAME: &'static str = "YAML";

    fn from_str<T: DeserializeOwned>(string: &str) -> Result<T, Self::Error> {
        yaml_serde::from_str(string)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn parse(text: &str) -> Result<BTreeMap<String, yaml_serde::Value>, yaml_serde::Error> {
        Yaml::from_str(text)
    }

    /// Users' files were written for serde_yaml 0.9: the words YAML 1.1 read as booleans
    /// stay strings (a `when: on` or a prompt `no` is text), and numbers read as before.
    #[test]
    fn scalars_resolve_as_serde_yaml_0_9_did() {
        let v = parse("a: yes\nb: on\nc: no\nd: 0x10\ne: 1e3\nf: ~\ng: true\nh: 010\n").unwrap();
        let s = |k: &str| v[k].as_str().map(str::to_string);
        assert_eq!(s("a").as_deref(), Some("yes"));
        assert_eq!(s("b").as_deref(), Some("on"));
        assert_eq!(s("c").as_deref(), Some("no"));
        assert_eq!(v["d"].as_u64(), Some(16));
        assert_eq!(v["e"].as_f64(), Some(1000.0));
        assert!(v["f"].is_null());
        assert_eq!(v["g"].as_bool(), Some(true));
        assert_eq!(
            s("h").as_deref(),
            Some("010"),
            "digits with a leading zero stay text"
        );
    }

    /// A hostile file of nested aliases (billion laughs, 9 references per level) is refused
    /// at once, not expanded until memory is gone. Six levels (531,441 strings) trip the
    /// bound already; a bound that regressed fails this test in megabytes, not gigabytes.
    #[test]
    fn alias_expansion_is_bounded() {
        let mut text = String::from("a0: &a0 [\"lol\"]\n");
        for i in 1..=6 {
            let refs = vec![format!("*a{}", i - 1); 9].join(", ");
            text.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
        }
        let err = parse(&text).expect_err("an alias bomb must be refused");
        assert!(err.to_string().contains("repetition limit"), "{err}");
    }
}
