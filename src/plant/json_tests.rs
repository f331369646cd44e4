use serde_json::json;

use super::*;

const WEATHER: &str = r#"{"location": {"name": "Paris", "country": "FR"},
  "current": {"temp_c": 21.5, "humidity": 64, "is_day": 1, "wind_kph": 12.3,
    "condition": "Partly cloudy", "updated": "2026-11-28T10:00:00Z", "uv": null},
  "forecast": [{"date": "2026-11-29", "max_c": 23.1}, {"date": "2026-11-30", "max_c": 19.8}],
  "source": "https://weather.example/api",
  "note": "Data from the national weather service, refreshed every ten minutes."}"#;

fn run(v: &mut Value, fields: &[&str], draw: u64) -> Vec<Planted> {
    let fields: Vec<JsonPath> = fields.iter().map(|f| JsonPath::parse(f).unwrap()).collect();
    let mut numbers = vec![];
    super::numbers(v, &mut numbers);
    let mut c = Canaries::new(draw, numbers);
    let mut out = vec![];
    corrupt(
        v,
        &fields,
        &mut c,
        &mut Record {
            root: "$",
            out: &mut out,
        },
    );
    out
}

/// The same keys everywhere, and the same kind of value at every leaf.
fn same_shape(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.keys().eq(y.keys()) && x.values().zip(y.values()).all(|(a, b)| same_shape(a, b))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_shape(a, b))
        }
        (Value::Number(x), Value::Number(y)) => x.is_f64() == y.is_f64(),
        (Value::String(_), Value::String(_)) | (Value::Bool(_), Value::Bool(_)) => true,
        (Value::Null, Value::Null) => true,
        _ => false,
    }
}

#[test]
fn by_default_numbers_dates_and_short_strings_are_planted_and_the_shape_kept() {
    let original: Value = serde_json::from_str(WEATHER).unwrap();
    let mut v = original.clone();
    let planted = run(&mut v, &[], 11);
    assert!(same_shape(&original, &v), "{v}");
    let paths: Vec<&str> = planted.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "$.location.name",
            "$.location.country",
            "$.current.temp_c",
            "$.current.humidity",
            "$.current.wind_kph",
            "$.current.condition",
            "$.current.updated",
            "$.forecast[0].date",
            "$.forecast[0].max_c",
            "$.forecast[1].date",
            "$.forecast[1].max_c",
        ]
    );
    assert_eq!(v["current"]["is_day"], 1, "a flag stays");
    assert_eq!(v["current"]["uv"], Value::Null);
    assert_eq!(v["source"], original["source"], "a URL stays");
    assert_eq!(v["note"], original["note"], "prose stays unless named");
    for p in &planted {
        let at = crate::plant::path::JsonPath::parse(&p.path)
            .unwrap()
            .select(&v);
        let now = crate::plant::path::get(&v, &at[0]).unwrap();
        let now = now.as_str().map_or_else(|| now.to_string(), str::to_string);
        assert_eq!(now, p.planted, "{}", p.path);
        assert_ne!(Some(&p.planted), p.original.as_ref());
    }
    assert_eq!(planted[2].original.as_deref(), Some("21.5"));
    let updated = v["current"]["updated"].as_str().unwrap();
    assert!(updated.ends_with("T10:00:00Z") && super::super::date::is_date(updated));
}

#[test]
fn fields_name_what_changes_and_a_container_takes_its_leaves() {
    let mut v: Value = serde_json::from_str(WEATHER).unwrap();
    let planted = run(&mut v, &["$.current.temp_c", "$.forecast[*]", "$.note"], 2);
    let paths: Vec<&str> = planted.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "$.current.temp_c",
            "$.forecast[0].date",
            "$.forecast[0].max_c",
            "$.forecast[1].date",
            "$.forecast[1].max_c",
        ],
        "the note has no number or date to change"
    );
    assert_eq!(v["location"]["name"], "Paris", "not named: untouched");
    let mut v = json!({"summary": "Sunny, 21 C, wind 12 km/h, as of 2026-11-28"});
    let planted = run(&mut v, &["$.summary"], 4);
    let originals: Vec<&str> = planted
        .iter()
        .filter_map(|p| p.original.as_deref())
        .collect();
    assert_eq!(
        originals,
        ["21", "12", "2026-11-28"],
        "in the order they are written"
    );
    assert!(planted.iter().all(|p| p.path == "$.summary"));
}

#[test]
fn a_named_container_inside_another_is_planted_once() {
    let mut v = json!({"a": {"b": 123}});
    let planted = run(&mut v, &["$.a", "$.a.b", "$..b"], 1);
    assert_eq!(planted.len(), 1);
}

#[test]
fn stale_moves_dates_and_unix_times_under_time_keys_back() {
    let mut v = json!({
        "updated_at": 1_764_324_000, "createdAt": 1_764_324_000_000_i64, "ts": 1764324000.5,
        "count": 1_764_324_000, "when": "2026-11-28", "items": [{"date": "2026-12-01T08:00:00Z"}],
        "label": "as of 2026-11-28"
    });
    let mut out = vec![];
    stale(
        &mut v,
        10,
        &mut Record {
            root: "$",
            out: &mut out,
        },
    );
    assert_eq!(v["updated_at"], 1_764_324_000 - 864_000);
    assert_eq!(v["createdAt"], 1_764_324_000_000_i64 - 864_000_000);
    assert_eq!(v["ts"].to_string(), "1763460000.5");
    assert_eq!(v["count"], 1_764_324_000, "not a time key: a number");
    assert_eq!(v["when"], "2026-11-18");
    assert_eq!(v["items"][0]["date"], "2026-11-21T08:00:00Z");
    assert_eq!(v["label"], "as of 2026-11-18");
    assert_eq!(out.len(), 6);
    assert!(out.iter().any(|p| p.path == "$.items[0].date"));
    assert!(names_time("expires") && names_time("start_time") && !names_time("count"));
}

#[test]
fn empty_keeps_the_kind() {
    assert_eq!(empty(&json!([1, 2])).unwrap(), json!([]));
    assert_eq!(empty(&json!({"a": 1})).unwrap(), json!({}));
    assert_eq!(empty(&json!("text")).unwrap(), json!(""));
    assert!(empty(&json!([])).unwrap_err().contains("already empty"));
    assert!(empty(&json!(42)).unwrap_err().contains("no empty form"));
}
