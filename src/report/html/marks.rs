//! The marks a case's outcome evidence puts on its timeline (docs/reports.md): the call
//! whose response a fault planted a value in (◆), the later calls that value reached (▲),
//! the calls that gave a fact the answer carries (✓), and the LLM call that asked for a
//! tool whose call went around the proxy (⊘). Each with the words its hover shows; the
//! faults themselves are already the timeline's orange bars.

use std::collections::BTreeMap;

use crate::report::text;
use crate::run::outcome::Place;
use crate::run::{CaseOutcome, OutcomeEvidence as Evidence};

pub(super) const PLANTED: char = '◆';
pub(super) const REACHED: char = '▲';
pub(super) const CARRIED: char = '✓';
pub(super) const BYPASSED: char = '⊘';
/// The glyphs in the order a row and a legend show them.
pub(super) const ORDER: [char; 4] = [PLANTED, REACHED, CARRIED, BYPASSED];

/// One exchange's marks: glyphs in the order above, and what each means.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Mark {
    pub glyphs: String,
    pub notes: Vec<String>,
}

/// The marks of a case's exchanges, by exchange id.
#[derive(Debug, Default)]
pub struct Marks(BTreeMap<u64, Mark>);

impl Marks {
    pub fn get(&self, id: u64) -> Option<&Mark> {
        self.0.get(&id)
    }

    fn add(&mut self, id: u64, glyph: char, note: String) {
        let m = self.0.entry(id).or_default();
        m.glyphs = ORDER
            .into_iter()
            .filter(|g| *g == glyph || m.glyphs.contains(*g))
            .collect();
        if !m.notes.contains(&note) {
            m.notes.push(note);
        }
    }
}

fn value(s: &str) -> String {
    text::line(s, 60)
}

/// The marks `outcome`'s evidence puts on the case's calls.
pub fn of(outcome: Option<&CaseOutcome>) -> Marks {
    let mut marks = Marks::default();
    for e in outcome.map_or(&[][..], |o| &o.evidence) {
        match e {
            Evidence::Planted {
                exchange,
                path,
                original,
                planted,
                reached,
            } => {
                let was = original
                    .as_deref()
                    .map(|o| format!(" for {}", value(o)))
                    .unwrap_or_default();
                let note = format!(
                    "{PLANTED} planted {}{was} at {}",
                    value(planted),
                    value(path)
                );
                marks.add(*exchange, PLANTED, note);
                for r in reached {
                    let Some(at) = r.exchange else { continue };
                    let to = match r.place {
                        Place::Model => "the model",
                        Place::ToolArgs => "a tool call's arguments",
                        Place::Answer => "the answer",
                    };
                    let note = format!(
                        "{REACHED} carries {} (planted in exchange {exchange}) to {to}",
                        value(planted)
                    );
                    marks.add(at, REACHED, note);
                }
            }
            Evidence::Carried { fact, exchange, .. } => {
                let note = format!("{CARRIED} gave {}, which the answer carries", value(fact));
                marks.add(*exchange, CARRIED, note);
            }
            Evidence::Bypassed { tool, exchange } => {
                let note = format!(
                    "{BYPASSED} asked for {}, whose call never crossed the proxy",
                    value(tool)
                );
                marks.add(*exchange, BYPASSED, note);
            }
            Evidence::Fault { .. }
            | Evidence::Unsupported { .. }
            | Evidence::Lacks { .. }
            | Evidence::NoAnswer { .. } => {}
        }
    }
    marks
}

/// What a glyph means, for the legend under a marked timeline.
pub fn legend(glyph: char) -> &'static str {
    match glyph {
        PLANTED => "a fault planted a value in this response",
        REACHED => "a planted value reached this call",
        CARRIED => "gave a fact the answer carries",
        BYPASSED => "asked for a tool whose call went around the proxy",
        _ => "",
    }
}
