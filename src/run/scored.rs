//! What a run's score is of: one phase (a run of one kind, or one of `ci`'s phases), or
//! `overall`, `ci`'s phases combined. Its name keys a run's scores in the report, the run
//! store and the API (`contract`, `chaos`, `mutation`, `replay`, `overall`), so
//! `Scored::Overall` is the one place that word is spelled.

use std::fmt;
use std::str::FromStr;

use super::RunKind;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scored {
    Phase(RunKind),
    /// `ci`'s phases combined.
    Overall,
}

impl Scored {
    pub fn as_str(self) -> &'static str {
        match self {
            Scored::Phase(kind) => kind.as_str(),
            Scored::Overall => "overall",
        }
    }
}

impl fmt::Display for Scored {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl FromStr for Scored {
    type Err = String;

    fn from_str(s: &str) -> Result<Scored, String> {
        if s == Scored::Overall.as_str() {
            return Ok(Scored::Overall);
        }
        s.parse().map(Scored::Phase).map_err(|_| {
            let all: Vec<&str> = RunKind::all().map(RunKind::as_str).collect();
            format!("unknown score `{s}` (one of {}, overall)", all.join(", "))
        })
    }
}

impl serde::Serialize for Scored {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_score_is_a_phase_or_overall_by_name() {
        for k in RunKind::all() {
            assert_eq!(k.as_str().parse(), Ok(Scored::Phase(k)));
        }
        assert_eq!("overall".parse(), Ok(Scored::Overall));
        assert_eq!(serde_json::to_value(Scored::Overall).unwrap(), "overall");
        let e = "total".parse::<Scored>().unwrap_err();
        assert!(
            e.starts_with("unknown score `total` (one of contract,"),
            "{e}"
        );
    }
}
