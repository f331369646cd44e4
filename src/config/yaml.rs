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
