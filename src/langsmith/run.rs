//! A LangSmith run (the v1 `Run` schema: `id`, `name`, `run_type`, `inputs`, `outputs`,
//! `error`, `status`, `start_time`, `end_time`, `parent_run_id`, `trace_id`,
//! `dotted_order`, `extra`) read from JSON with every field it needs checked, and a trace's
//! runs grouped by `parent_run_id` into call order. A field missing or of the wrong type is
//! an error naming the run and the field (`run 1234: outputs.output missing`).

use std::collections::HashMap;

use serde_json::Value;

/// The fields a query asks for (`select`): those this module reads.
pub const SELECT: &[&str] = &[
    "id",
    "name",
    "run_type",
    "inputs",
    "outputs",
    "error",
    "status",
    "start_time",
    "end_time",
    "parent_run_id",
    "trace_id",
    "dotted_order",
    "extra",
    "session_id",
    "prompt_tokens",
    "completion_tokens",
];

/// One run, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub id: String,
    pub name: String,
    /// `chain`, `tool`, `llm`, `retriever`, `prompt`, `parser`, `embedding`.
    pub run_type: String,
    pub parent: Option<String>,
    pub trace_id: Option<String>,
    pub session_id: Option<String>,
    /// Sorts the trace's runs in the order they started (`dotted_order`, else `start_time`).
    pub order: String,
    pub start_ms: u64,
    pub end_ms: Option<u64>,
    /// `error` set, or `status: error`.
    pub errored: bool,
    pub error: Option<String>,
    pub inputs: Value,
    pub outputs: Value,
    pub extra: Value,
    pub raw: Value,
}

impl Run {
    /// Reads a run from an API answer.
    pub fn parse(v: &Value) -> Result<Run, String> {
        let Some(obj) = v.as_object() else {
            return Err(format!("a run is not a JSON object: {}", head(v)));
        };
        let id = match obj.get("id").and_then(Value::as_str) {
            Some(id) => id.to_string(),
            None => return Err(format!("a run's id missing: {}", head(v))),
        };
        let text = |field: &str| -> Result<Option<String>, String> {
            match obj.get(field) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(other) => Err(format!(
                    "run {id}: {field} is not a string: {}",
                    head(other)
                )),
            }
        };
        let must = |field: &str| -> Result<String, String> {
            text(field)?.ok_or_else(|| format!("run {id}: {field} missing"))
        };
        let name = must("name")?;
        let run_type = must("run_type")?;
        let start = must("start_time")?;
        let start_ms = timestamp_ms(&start)
            .ok_or_else(|| format!("run {id}: start_time `{start}` is not an ISO 8601 time"))?;
        let end_ms = match text("end_time")? {
            None => None,
            Some(end) => Some(
                timestamp_ms(&end)
                    .ok_or_else(|| format!("run {id}: end_time `{end}` is not an ISO 8601 time"))?,
            ),
        };
        let error = text("error")?;
        let status = text("status")?;
        let errored = error.is_some() || status.as_deref() == Some("error");
        let order = text("dotted_order")?.unwrap_or_else(|| format!("{start_ms:020}"));
        let object = |field: &str| -> Result<Value, String> {
            match obj.get(field) {
                None | Some(Value::Null) => Ok(Value::Null),
                Some(v @ Value::Object(_)) => Ok(v.clone()),
                Some(other) => Err(format!(
                    "run {id}: {field} is not an object: {}",
                    head(other)
                )),
            }
        };
        Ok(Run {
            name,
            run_type,
            parent: text("parent_run_id")?,
            trace_id: text("trace_id")?,
            session_id: text("session_id")?,
            order,
            start_ms,
            end_ms,
            errored,
            error,
            inputs: object("inputs")?,
            outputs: object("outputs")?,
            extra: object("extra")?,
            raw: v.clone(),
            id,
        })
    }

    /// Milliseconds from start to end (0 while it has no end).
    pub fn latency_ms(&self) -> u64 {
        self.end_ms.map_or(0, |e| e.saturating_sub(self.start_ms))
    }

    /// `outputs.<path>` (dots between keys), or an error naming it.
    pub fn output(&self, path: &str) -> Result<&Value, String> {
        lookup(&self.outputs, path)
            .ok_or_else(|| format!("run {}: outputs.{path} missing", self.id))
    }
}

/// The value at `path` (keys and list indexes between dots) in `v`.
pub fn lookup<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.')
        .try_fold(v, |v, k| match k.parse::<usize>() {
            Ok(i) if v.is_array() => v.get(i),
            _ => v.get(k),
        })
}

/// The runs under `root` in a trace, depth first, each parent's children in the order they
/// started: the order the agent made its calls in.
pub fn descendants<'a>(root: &str, runs: &'a [Run]) -> Vec<&'a Run> {
    let mut children: HashMap<&str, Vec<&Run>> = HashMap::new();
    for r in runs {
        if let Some(p) = &r.parent {
            children.entry(p.as_str()).or_default().push(r);
        }
    }
    for list in children.values_mut() {
        list.sort_by(|a, b| a.order.cmp(&b.order).then(a.start_ms.cmp(&b.start_ms)));
    }
    let mut out = vec![];
    let mut stack: Vec<&Run> = children
        .get(root)
        .map_or(vec![], |c| c.iter().rev().copied().collect());
    while let Some(r) = stack.pop() {
        out.push(r);
        if out.len() > runs.len() {
            break; // a cycle in parent ids: each run once is enough
        }
        if let Some(c) = children.get(r.id.as_str()) {
            stack.extend(c.iter().rev().copied());
        }
    }
    out
}

/// `2024-05-01T12:00:00.123456` (LangSmith writes UTC without an offset), `…Z` or
/// `…+00:00`, as Unix milliseconds. A nonzero offset is applied.
pub fn timestamp_ms(s: &str) -> Option<u64> {
    let s = s.trim();
    let (date, rest) = s.split_once(['T', ' '])?;
    let mut d = date.split('-');
    let (y, m, day) = (
        d.next()?.parse::<i32>().ok()?,
        d.next()?.parse::<u8>().ok()?,
        d.next()?.parse::<u8>().ok()?,
    );
    let (clock, offset_s) = match rest.find(['Z', 'z', '+']).or_else(|| rest.rfind('-')) {
        Some(i) => {
            let zone = &rest[i..];
            let secs = match zone {
                "Z" | "z" => 0,
                z => {
                    let sign = if z.starts_with('-') { -1 } else { 1 };
                    let (h, mi) = z[1..].split_once(':').unwrap_or((&z[1..], "0"));
                    let (h, mi) = (h.parse::<i64>().ok()?, mi.parse::<i64>().ok()?);
                    // A zone is at most a day off UTC; more is no time (and could overflow).
                    if !(0..=24).contains(&h) || !(0..=59).contains(&mi) {
                        return None;
                    }
                    sign * (h * 3600 + mi * 60)
                }
            };
            (&rest[..i], secs)
        }
        None => (rest, 0),
    };
    let (hms, frac) = clock.split_once('.').unwrap_or((clock, "0"));
    let mut t = hms.split(':');
    let (h, mi, sec) = (
        t.next()?.parse::<u8>().ok()?,
        t.next()?.parse::<u8>().ok()?,
        t.next().unwrap_or("0").parse::<u8>().ok()?,
    );
    let frac: String = frac.chars().chain(std::iter::repeat('0')).take(3).collect();
    let ms: i64 = frac.parse().ok()?;
    let date = time::Date::from_calendar_date(y, time::Month::try_from(m).ok()?, day).ok()?;
    let clock = time::Time::from_hms(h, mi, sec).ok()?;
    let at = time::PrimitiveDateTime::new(date, clock)
        .assume_utc()
        .unix_timestamp();
    u64::try_from((at - offset_s) * 1000 + ms).ok()
}

/// The first characters of a value, for errors.
fn head(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn timestamps_with_and_without_offsets() {
        assert_eq!(timestamp_ms("1970-01-01T00:00:01.5"), Some(1500));
        assert_eq!(timestamp_ms("1970-01-01T00:00:01.123456Z"), Some(1123));
        assert_eq!(timestamp_ms("1970-01-01T01:00:00+01:00"), Some(0));
        assert_eq!(timestamp_ms("2024-02-30T00:00:00"), None);
        assert_eq!(timestamp_ms("yesterday"), None);
    }

    #[test]
    fn a_missing_or_mistyped_field_is_named_with_the_run() {
        let e = Run::parse(
            &json!({"id": "r1", "run_type": "tool", "start_time": "2024-01-01T00:00:00"}),
        )
        .unwrap_err();
        assert_eq!(e, "run r1: name missing");
        let e = Run::parse(&json!({"id": "r1", "name": "t", "run_type": "tool", "start_time": "2024-01-01T00:00:00", "outputs": [1]})).unwrap_err();
        assert!(e.starts_with("run r1: outputs is not an object"), "{e}");
        let e = Run::parse(&json!({"name": "t"})).unwrap_err();
        assert!(e.starts_with("a run's id missing"), "{e}");
    }

    #[test]
    fn descendants_come_in_call_order_depth_first() {
        let run = |id: &str, parent: Option<&str>, order: &str| {
            Run::parse(
                &json!({"id": id, "name": id, "run_type": "chain", "parent_run_id": parent,
                "start_time": "2024-01-01T00:00:00", "dotted_order": order}),
            )
            .unwrap()
        };
        let runs = [
            run("b", Some("root"), "2"),
            run("a", Some("root"), "1"),
            run("a1", Some("a"), "1.1"),
            run("root", None, "0"),
        ];
        let ids: Vec<&str> = descendants("root", &runs)
            .iter()
            .map(|r| r.id.as_str())
            .collect();
        assert_eq!(ids, ["a", "a1", "b"]);
    }
}
