//! YAML to JSON without losing NaN and infinities. JSON has no such numbers, so a plain
//! conversion turns `.nan` and `.inf` into `null`, which a rule then reads as "not set"
//! (a `probability: .nan` fired always). Here they become their YAML spelling as a string,
//! which no number field accepts: every loader refuses them with the field's path.

// Walks figment values: foreign enums, where a catch-all arm is the point.
#![allow(clippy::wildcard_enum_match_arm)]

use figment::Figment;
use figment::value::{Num, Value as Yaml};
use serde_json::Value;

use crate::chaos::spec::ranges::MARKERS;

/// `fig` merged and converted to JSON, non-finite numbers kept as markers.
pub fn extract(fig: &Figment) -> Result<Value, Box<figment::Error>> {
    let mut v: Yaml = fig.extract()?;
    mark_non_finite(&mut v);
    Ok(v.deserialize()?)
}

fn mark_non_finite(v: &mut Yaml) {
    match v {
        Yaml::Num(tag, n) => {
            let f = match *n {
                Num::F32(f) => f64::from(f),
                Num::F64(f) => f,
                _ => return,
            };
            if !f.is_finite() {
                let s = if f.is_nan() {
                    MARKERS[0]
                } else if f > 0.0 {
                    MARKERS[1]
                } else {
                    MARKERS[2]
                };
                *v = Yaml::String(*tag, s.to_string());
            }
        }
        Yaml::Dict(_, d) => d.values_mut().for_each(mark_non_finite),
        Yaml::Array(_, a) => a.iter_mut().for_each(mark_non_finite),
        Yaml::String(..) | Yaml::Char(..) | Yaml::Bool(..) | Yaml::Empty(..) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chaos::spec::ranges::is_marker;
    use crate::config::Yaml as YamlFile;
    use figment::providers::Format;

    #[test]
    fn non_finite_numbers_survive_as_markers_and_the_rest_is_unchanged() {
        let text = "a: .nan\nb: [.inf, -.inf, .NaN, 1.5, 7, -3]\nc: {d: x, e: ~, f: true}\n";
        let v = extract(&Figment::from(YamlFile::string(text))).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"a": ".nan", "b": [".inf", "-.inf", ".nan", 1.5, 7, -3], "c": {"d": "x", "e": null, "f": true}})
        );
        assert!(is_marker(".inf") && !is_marker("inf"));
    }
}
