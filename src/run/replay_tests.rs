//! Replay runs: `when` in a session, and how sessions that did not run weigh on the run.

use super::*;
use crate::config::When;
use crate::run::replay_setup::Ready;
use crate::run::replay_verdict::shell;

fn session(id: &str, verdict: RunVerdict, why: &str) -> SessionVerdict {
    let r = Ready {
        id: id.into(),
        file: None,
        session: Err(why.into()),
    };
    SessionVerdict {
        verdict,
        reasons: vec![why.into()],
        ..shell(&r)
    }
}

#[test]
fn error_answers_are_the_faults_when_decides() {
    use crate::tape::Faults;
    let (tool, llm, none) = (
        Faults {
            tool: true,
            ..Faults::default()
        },
        Faults {
            llm: true,
            ..Faults::default()
        },
        Faults::default(),
    );
    assert!(applies(When::ToolFaultsActive, tool) && !applies(When::ToolFaultsActive, none));
    assert!(applies(When::AnyChaosActive, tool) && !applies(When::NoChaos, tool));
    assert!(applies(When::NoChaos, none) && applies(When::Always, none));
    assert!(!applies(When::LlmFaultsActive, tool) && applies(When::LlmFaultsActive, llm));
    assert!(applies(When::AnyChaosActive, llm) && !applies(When::ToolFaultsActive, llm));
}

/// A replayed prompt injection is chaos: `no_chaos` checks do not apply to it and
/// `any_chaos_active` ones do, though no fault or error answer is on the tape; it is no
/// tool or LLM fault (as `context_attacks` are not `tool_faults` in a contract).
#[test]
fn attacks_on_the_tape_are_chaos_when_decides() {
    use crate::tape::Faults;
    for attacked in [
        Faults {
            tool_attack: true,
            ..Faults::default()
        },
        Faults {
            llm_attack: true,
            ..Faults::default()
        },
    ] {
        assert!(!applies(When::NoChaos, attacked), "{attacked:?}");
        assert!(applies(When::AnyChaosActive, attacked), "{attacked:?}");
        assert!(!applies(When::ToolFaultsActive, attacked), "{attacked:?}");
        assert!(!applies(When::LlmFaultsActive, attacked), "{attacked:?}");
    }
}

#[test]
fn a_session_that_could_not_run_fails_a_passing_run_and_is_named() {
    let pass = || Judgement {
        verdict: RunVerdict::Pass,
        reasons: vec![],
    };
    let mut j = pass();
    session_reasons(&[session("ok", RunVerdict::Pass, "")], &mut j);
    assert_eq!(j, pass());
    let mut j = pass();
    let sessions = [
        session("ok", RunVerdict::Pass, ""),
        session("bad", RunVerdict::Error, "bad.yaml: id: missing field"),
    ];
    session_reasons(&sessions, &mut j);
    assert_eq!(j.verdict, RunVerdict::Fail);
    assert_eq!(
        j.reasons,
        ["session `bad` could not be replayed: bad.yaml: id: missing field"]
    );
    let mut j = pass();
    session_reasons(
        &[session("quiet", RunVerdict::NotTested, "never called")],
        &mut j,
    );
    assert_eq!(j.verdict, RunVerdict::NotTested);
    assert_eq!(j.reasons, ["session `quiet` was not tested: never called"]);
}

/// A session whose trials were [not tested, pass] passed a judged trial: it is that pass,
/// judged, with 1 of 1 judged trials passed; a failing trial is the verdict whenever one is.
#[test]
fn a_sessions_verdict_over_trials_is_a_judged_one_when_there_is() {
    use crate::run::replay_verdict::over_trials;
    let (nt, pass, fail) = (RunVerdict::NotTested, RunVerdict::Pass, RunVerdict::Fail);
    let v = over_trials(vec![session("s", nt, "cut"), session("s", pass, "ok")]).unwrap();
    assert_eq!(v.verdict, pass);
    assert_eq!(v.consistency.map(|c| (c.trials, c.passed)), Some((1, 1)));
    let v = over_trials(vec![session("s", pass, "ok"), session("s", fail, "no")]).unwrap();
    assert_eq!(v.verdict, fail);
    let v = over_trials(vec![session("s", nt, "a"), session("s", nt, "b")]).unwrap();
    assert_eq!((v.verdict, v.reasons), (nt, vec!["a".to_string()]));
}
