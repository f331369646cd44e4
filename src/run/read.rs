//! `Report::from_json`: a report as flakestorm wrote it, read back (`flakestorm report`,
//! `--server`, the daemon's `?format=`). The `schema` is checked first, so another file,
//! kind or version gets an error that says which; then the typed report, so a damaged
//! field is named by its path. Nothing in `run` imports this file.

use super::saved::ReadError;

/// The schemas this build writes, by report kind.
const SCHEMAS: [(&str, &str); 5] = [
    ("contract", super::contract::SCHEMA),
    ("replay", super::replay::SCHEMA),
    ("chaos", super::chaos::SCHEMA),
    ("mutation", super::mutation::SCHEMA),
    ("ci", super::ci::SCHEMA),
];

impl super::Report {
    /// Reads a report as `flakestorm` wrote it (any kind), checking its `schema` first so
    /// that another file, kind or version gets an error that says which.
    pub fn from_json(text: &str) -> Result<super::Report, ReadError> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| ReadError::NotJson(e.to_string()))?;
        let Some(schema) = value.get("schema") else {
            let why = if value.is_object() {
                "it has no `schema` field"
            } else {
                "it is not a JSON object"
            };
            return Err(ReadError::NotAReport(why.into()));
        };
        let Some(found) = schema.as_str() else {
            return Err(ReadError::NotAReport(format!(
                "`schema` is {schema}, not a string"
            )));
        };
        let (kind, version) = found
            .strip_prefix("flakestorm.")
            .and_then(|rest| rest.split_once('/'))
            .and_then(|(kind, v)| Some((kind, v.parse::<u32>().ok()?)))
            .ok_or_else(|| {
                ReadError::NotAReport(format!(
                    "`schema` is \"{found}\", not flakestorm.<kind>/<version>"
                ))
            })?;
        let Some((_, reads)) = SCHEMAS.iter().find(|(k, _)| *k == kind) else {
            return Err(ReadError::NotAReport(format!(
                "`schema` is \"{found}\": no such report kind"
            )));
        };
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
            "contract" => Report::Contract(typed(value)?),
            "chaos" => Report::Chaos(typed(value)?),
            "mutation" => Report::Mutation(typed(value)?),
            "replay" => Report::Replay(typed(value)?),
            _ => Report::Ci(Box::new(typed(value)?)),
        })
    }
}

fn typed<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> Result<T, ReadError> {
    serde_path_to_error::deserialize(value).map_err(|e| ReadError::Field {
        path: e.path().to_string(),
        message: e.inner().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use crate::run::Report;

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
            "not a flakestorm report: it is not a JSON object"
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
}
