//! `Parsed<T>`: a string field compiled as it is read (listen addresses, `proxy.reverse`
//! upstreams, `proxy.allow_loopback_targets` entries). It keeps the text as written, for
//! messages and for serializing, and the parsed value or the reason it is not one, which
//! `validate` reports with the field's path. The runtime takes the value as it is and
//! never parses the text again.

use std::fmt;
use std::net::SocketAddr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::targets::{TargetRule, parse_target_rule};

/// A value written as text in the config.
pub trait FromText: Sized {
    /// The value, or what is wrong with `text` (the message names the expected form).
    fn from_text(text: &str) -> Result<Self, String>;
}

#[derive(Clone)]
pub struct Parsed<T> {
    text: String,
    value: Result<T, String>,
}

impl<T: FromText> Parsed<T> {
    pub fn new(text: impl Into<String>) -> Self {
        let text = text.into();
        let value = T::from_text(&text);
        Parsed { text, value }
    }
}

impl<T> Parsed<T> {
    /// The value, or why the text is not one (reported at load; a config that loaded has
    /// none of these).
    pub fn get(&self) -> Result<&T, &str> {
        self.value.as_ref().map_err(String::as_str)
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl<T: FromText> From<&str> for Parsed<T> {
    fn from(text: &str) -> Self {
        Parsed::new(text)
    }
}

impl<T> fmt::Display for Parsed<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl<T> fmt::Debug for Parsed<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.text, f)
    }
}

/// Two fields are equal when they were written the same.
impl<T> PartialEq for Parsed<T> {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl<T> PartialEq<&str> for Parsed<T> {
    fn eq(&self, other: &&str) -> bool {
        self.text == *other
    }
}

impl<T> Serialize for Parsed<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de, T: FromText> Deserialize<'de> for Parsed<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Parsed::new)
    }
}

impl FromText for SocketAddr {
    fn from_text(value: &str) -> Result<Self, String> {
        value.parse().map_err(|_| {
            format!("`{value}` is not an IP:port address (e.g. 127.0.0.1:8080 or [::1]:8080)")
        })
    }
}

/// An http(s) URL with a host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpUrl(pub http::Uri);

impl FromText for HttpUrl {
    fn from_text(value: &str) -> Result<Self, String> {
        value
            .parse::<http::Uri>()
            .ok()
            .filter(|u| matches!(u.scheme_str(), Some("http" | "https")) && u.authority().is_some())
            .map(HttpUrl)
            .ok_or_else(|| {
                format!("`{value}` is not an http(s) URL with a host, e.g. https://api.openai.com")
            })
    }
}

/// One `proxy.allow_loopback_targets` entry (`localhost` is two rules).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetRules(pub Vec<TargetRule>);

impl FromText for TargetRules {
    fn from_text(value: &str) -> Result<Self, String> {
        parse_target_rule(value).map(TargetRules)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_text_and_the_value_or_the_reason() {
        let ok: Parsed<SocketAddr> = serde_json::from_str("\"127.0.0.1:0\"").unwrap();
        assert_eq!(ok.get().unwrap().port(), 0);
        assert_eq!(serde_json::to_string(&ok).unwrap(), "\"127.0.0.1:0\"");
        let bad: Parsed<SocketAddr> = "localhost".into();
        assert!(
            bad.get()
                .unwrap_err()
                .contains("`localhost` is not an IP:port")
        );
        assert_eq!(bad.as_str(), "localhost");
        let url: Parsed<HttpUrl> = "ftp://x".into();
        assert!(url.get().is_err());
        let url: Parsed<HttpUrl> = "https://api.openai.com".into();
        assert_eq!(url.get().unwrap().0.host(), Some("api.openai.com"));
    }
}
