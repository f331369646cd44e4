//! The `outcome` invariant: the class the run decided for a case from the wire (what the
//! agent did with the fault that reached it, `run::outcome`) is one the invariant allows.
//! A case no fault reached is not judged by it; one whose class could not be decided, or
//! whose call went around the proxy, is not tested. Pure.

use super::Verdict;
use super::spec::OutcomeClass;

/// What an outcome check sees of a case's outcome.
#[derive(Debug, Clone, Copy)]
pub struct OutcomeView<'a> {
    pub class: OutcomeClass,
    /// Why this class, in one line.
    pub reason: &'a str,
    /// A call the model asked for went around the proxy: the fault-dependent checks of
    /// the case cannot be tested (not merely not applicable).
    pub bypassed: bool,
}

/// The verdict of `outcome: {allow}` on a case with `outcome` (`None`: its scenario
/// planned no fault).
pub(super) fn verdict(allow: &[OutcomeClass], outcome: Option<OutcomeView>) -> Verdict {
    let Some(o) = outcome else {
        return Verdict::NotApplicable("no fault was planned for this case".into());
    };
    let (class, why) = (o.class, o.reason);
    match class {
        OutcomeClass::NotExercised if o.bypassed => Verdict::NotTested(why.to_string()),
        OutcomeClass::NotExercised => Verdict::NotApplicable(format!("not exercised: {why}")),
        OutcomeClass::Undecided => Verdict::NotTested(format!("undecided: {why}")),
        OutcomeClass::Propagated
        | OutcomeClass::Fabricated
        | OutcomeClass::Failed
        | OutcomeClass::DegradedHonest
        | OutcomeClass::Recovered => match allow.contains(&class) {
            true => Verdict::Pass(format!("{class}: {why}")),
            false => Verdict::Fail(format!("{class}: {why}")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(class: OutcomeClass, bypassed: bool) -> Option<OutcomeView<'static>> {
        Some(OutcomeView {
            class,
            reason: "why",
            bypassed,
        })
    }

    /// Allowed classes pass, the others fail, naming the class; not exercised is not
    /// applicable unless a call went around the proxy (not tested), undecided is not tested.
    #[test]
    fn classes_pass_fail_or_say_why_they_are_not_judged() {
        let allow = [OutcomeClass::Recovered, OutcomeClass::DegradedHonest];
        let v = verdict(&allow, seen(OutcomeClass::Recovered, false));
        assert_eq!(v, Verdict::Pass("recovered: why".into()));
        let v = verdict(&allow, seen(OutcomeClass::Fabricated, false));
        assert_eq!(v, Verdict::Fail("fabricated: why".into()));
        let skipped = verdict(&allow, seen(OutcomeClass::NotExercised, false));
        assert!(matches!(skipped, Verdict::NotApplicable(_)), "{skipped:?}");
        let bypassed = verdict(&allow, seen(OutcomeClass::NotExercised, true));
        assert_eq!(bypassed, Verdict::NotTested("why".into()));
        let open = verdict(&allow, seen(OutcomeClass::Undecided, false));
        assert_eq!(open, Verdict::NotTested("undecided: why".into()));
        assert!(matches!(verdict(&allow, None), Verdict::NotApplicable(_)));
    }
}
