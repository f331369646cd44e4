//! `Report::from_json`: a report as flakestorm wrote it, read back (`flakestorm report`,
//! `--server`, the daemon's `?format=`). The `schema` is checked first, so another file,
//! kind or version gets an error that says which; then the typed report, so a damaged
//! field is named by its path. Both passes read the text as it is: no JSON tree of the
//! whole report is built (memory stays near the text's size). Nothing in `run` imports
//! this file.

use super::RunKind;
use super::saved::ReadError;
use crate::config::redact::{clip, describe, serde_message};

/// The schema this build writes for reports of `kind`.
fn schema_of(kind: RunKind) -> &'static str {
    match kind {
        RunKind::Contract => super::contract::SCHEMA,
        RunKind::Replay => super::replay::SCHEMA,
        RunKind::Chaos => super::chaos::SCHEMA,
        RunKind::Mutation => super::mutation::SCHEMA,
        RunKind::Ci => super::ci::SCHEMA,
    }
}

impl super::Report {
    /// Reads a report as `flakestorm` wrote it (any kind), checking its `schema` first so
    /// that another file, kind or version gets an error that says which.
    pub fn from_json(text: &str) -> Result<super::Report, ReadError> {
        let found = schema_in(text)?;
        let found = found.as_str();
        let (kind, version) = found
            .strip_prefix("flakestorm.")
            .and_then(|rest| rest.split_once('/'))
            .and_then(|(kind, v)| Some((kind, v.parse::<u32>().ok()?)))
            .ok_or_else(|| {
                ReadError::NotAReport(format!(
                    "`schema` is {}, not flakestorm.<kind>/<version>",
                    quoted(found)
                ))
            })?;
        let Ok(kind) = kind.parse::<RunKind>() else {
            return Err(ReadError::NotAReport(format!(
                "`schema` is {}: no such report kind",
                quoted(found)
            )));
        };
        let reads = schema_of(kind);
        let ours: u32 = reads
            .rsplit('/')
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let found = found.to_string();
        if version > ours {
            return Err(ReadError::Newer { found, reads });
        }
        if version < ours {
            return Err(ReadError::Older { found, reads });
        }
        use super::Report;
        Ok(match kind {
            RunKind::Contract => Report::Contract(typed(text)?),
            RunKind::Chaos => Report::Chaos(typed(text)?),
            RunKind::Mutation => Report::Mutation(typed(text)?),
            RunKind::Replay => Report::Replay(typed(text)?),
            RunKind::Ci => Report::Ci(Box::new(typed(text)?)),
        })
    }
}

/// `"s"`, or its length when it is too long to quote.
fn quoted(s: &str) -> String {
    match s.chars().count() {
        n if n > 60 => format!("({n} characters, not shown)"),
        _ => format!("{s:?}"),
    }
}

/// The report typed straight from its text: no JSON tree of it is built first, which
/// took several times the text's size in memory (issue #51: a 59 MiB import at 642 MB).
fn typed<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, ReadError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| ReadError::Field {
        // A path names map keys, which may be of any length.
        path: clip(&e.path().to_string(), 200),
        message: serde_message(without_position(&e.inner().to_string())),
    })?;
    de.end()
        .map_err(|e| ReadError::NotJson(serde_message(&e.to_string())))?;
    Ok(value)
}

/// A serde_json message without the ` at line L column C` that reading from text adds:
/// the field's path says where, and a report is mostly one long line.
fn without_position(message: &str) -> &str {
    match message.rfind(" at line ") {
        Some(i) if message[i..].contains(" column ") => &message[..i],
        _ => message,
    }
}

/// The `schema` a report's text names, read in one pass that keeps nothing else.
fn schema_in(text: &str) -> Result<String, ReadError> {
    let top: Top = serde_json::from_str(text)
        .map_err(|e| ReadError::NotJson(serde_message(&e.to_string())))?;
    let why = match top {
        Top::Object(Some(serde_json::Value::String(s))) => return Ok(s),
        Top::Object(Some(other)) => format!("`schema` is {}, not a string", describe(&other)),
        Top::Object(None) => "it has no `schema` field".into(),
        Top::Other(what) => format!("the top level is {what}, not a JSON object"),
    };
    Err(ReadError::NotAReport(why))
}

/// A document's top level as far as `schema_in` needs it: an object's `schema`, or what
/// else it is (counted, never kept: `config::redact::describe`'s words).
enum Top {
    Object(Option<serde_json::Value>),
    Other(String),
}

impl<'de> serde::Deserialize<'de> for Top {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Top, D::Error> {
        d.deserialize_any(TopVisitor)
    }
}

struct TopVisitor;

impl<'de> serde::de::Visitor<'de> for TopVisitor {
    type Value = Top;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON document")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Top, A::Error> {
        let mut schema = None;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "schema" && schema.is_none() {
                schema = Some(map.next_value::<serde_json::Value>()?);
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
            }
        }
        Ok(Top::Object(schema))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Top, A::Error> {
        let mut n = 0usize;
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
            n += 1;
        }
        Ok(Top::Other(match n {
            1 => "a list of 1 item".into(),
            n => format!("a list of {n} items"),
        }))
    }

    fn visit_str<E>(self, s: &str) -> Result<Top, E> {
        let n = s.chars().count();
        Ok(Top::Other(format!("a string of {n} characters")))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Top, E> {
        Ok(Top::Other("a boolean".into()))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Top, E> {
        Ok(Top::Other("a number".into()))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Top, E> {
        Ok(Top::Other("a number".into()))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Top, E> {
        Ok(Top::Other("a number".into()))
    }

    fn visit_unit<E>(self) -> Result<Top, E> {
        Ok(Top::Other("empty (null)".into()))
    }
}

#[cfg(test)]
mod tests {
    use crate::run::Report;
    use serde_json::json;

    const FIXTURE: &str = include_str!("../../tests/fixtures/reports/ci.json");

    #[test]
    fn a_saved_report_reads_back_field_for_field() {
        let report = Report::from_json(FIXTURE).expect("the fixture reads");
        let again = serde_json::to_value(&report).unwrap();
        let saved: serde_json::Value = serde_json::from_str(FIXTURE).unwrap();
        assert_eq!(again, saved);
        let Report::Ci(ci) = &report else {
            panic!("a ci report")
        };
        for part in [
            serde_json::to_string(ci.contract.as_ref().unwrap()).unwrap(),
            serde_json::to_string(ci.chaos.as_ref().unwrap()).unwrap(),
            serde_json::to_string(ci.mutation.as_ref().unwrap()).unwrap(),
        ] {
            assert!(Report::from_json(&part).is_ok());
        }
    }

    #[test]
    fn another_file_kind_or_version_is_named() {
        let err = |text: &str| Report::from_json(text).unwrap_err().to_string();
        assert!(err("{").starts_with("not JSON: "));
        assert_eq!(
            err("[1]"),
            "not a flakestorm report: the top level is a list of 1 item, not a JSON object"
        );
        assert_eq!(
            err("\"build-runner-07\""),
            "not a flakestorm report: the top level is a string of 15 characters, not a JSON \
             object"
        );
        assert_eq!(
            err(r#"{"log": {"version": "1.2"}}"#),
            "not a flakestorm report: it has no `schema` field"
        );
        assert_eq!(
            err(r#"{"schema": "promptfoo/1"}"#),
            "not a flakestorm report: `schema` is \"promptfoo/1\", not \
             flakestorm.<kind>/<version>"
        );
        assert_eq!(
            err(r#"{"schema": "flakestorm.tape/1"}"#),
            "not a flakestorm report: `schema` is \"flakestorm.tape/1\": no such report kind"
        );
        assert_eq!(
            err(r#"{"schema": "flakestorm.ci/3"}"#),
            "`schema` is flakestorm.ci/3, newer than this build reads (flakestorm.ci/2): \
             render it with a newer flakestorm"
        );
        assert!(err(r#"{"schema": "flakestorm.contract/1"}"#).contains("older than"));
        // The right schema with a damaged field: the path to it.
        let mut v: serde_json::Value = serde_json::from_str(FIXTURE).unwrap();
        v["contract"]["cases"][2]["latency_ms"] = "slow".into();
        assert_eq!(
            err(&v.to_string()),
            "`contract.cases[2].latency_ms`: invalid type: string \"slow\", expected f64"
        );
        v["contract"]["cases"][2]["latency_ms"] = 1.into();
        v["phases"][0]["name"] = "warmup".into();
        assert!(err(&v.to_string()).starts_with("`phases[0].name`: `warmup` is not mutation"));
    }

    /// A report with a 5 MB string where a value should be: the error quotes none of it.
    #[test]
    fn a_huge_value_is_not_quoted_back() {
        let long = "x".repeat(5_000_000);
        let mut v: serde_json::Value = serde_json::from_str(FIXTURE).unwrap();
        v["contract"]["cases"][2]["latency_ms"] = long.clone().into();
        let short = |text: String| {
            let e = err(&text);
            assert!(
                e.len() < 1000,
                "{} bytes: {}",
                e.len(),
                crate::config::redact::clip(&e, 300)
            );
            e
        };
        let e = short(v.to_string());
        assert_eq!(
            e,
            "`contract.cases[2].latency_ms`: invalid type: string (5000000 characters, not shown), expected f64"
        );
        v["contract"]["cases"][2]["latency_ms"] = 1.into();
        v["phases"][0]["name"] = long.clone().into();
        short(v.to_string());
        v["phases"][0]["name"] = "mutation".into();
        for schema in [
            json!(long),
            json!(format!("flakestorm.{long}/2")),
            json!({"a": long}),
        ] {
            short(json!({ "schema": schema }).to_string());
        }
        short(json!(long).to_string());
    }

    fn err(text: &str) -> String {
        match Report::from_json(text) {
            Ok(_) => panic!("read as a report"),
            Err(e) => e.to_string(),
        }
    }
}
