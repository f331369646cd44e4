use super::*;

fn measured(consistency: ConsistencyScore, k: Option<u32>) -> TrialsInfo {
    TrialsInfo {
        trials: 4,
        trial: None,
        consistency,
        k,
    }
}

#[test]
fn one_trial_per_case_shows_pass_1_alone() {
    // `--trial 2`: each case judged once; "pass^1 1.00, pass^1 1.00" was shown.
    let one = Consistency::of(1, 1);
    assert_eq!(figures(&one, None), "1 of 1 trials passed, pass^1 1.00");
    assert_eq!(shown_k(&one, None), None);
}

#[test]
fn figures_name_pass_k_and_pass_at_k_at_the_runs_k() {
    let t = Consistency::of(4, 3);
    assert_eq!(
        figures(&t, None),
        "3 of 4 trials passed, pass^1 0.75, pass^4 0.00, pass@4 1.00"
    );
    // Scored by pass^2: C(3,2)/C(4,2) = 0.5; pass@2 = 1 - C(1,2)/C(4,2) = 1.
    let k2 = measured(ConsistencyScore::PassK, Some(2));
    assert_eq!(
        figures(&t, Some(&k2)),
        "3 of 4 trials passed, pass^1 0.75, pass^2 0.50, pass@2 1.00"
    );
}

#[test]
fn the_mean_hiding_a_zero_pass_k_is_said_once() {
    let (hidden, steady) = (Consistency::of(4, 3), Consistency::of(4, 4));
    let items = || {
        [
            ("`a` under `x`".to_string(), &hidden),
            ("`b` under `x`".to_string(), &steady),
        ]
    };
    let mean = measured(ConsistencyScore::Mean, None);
    let line = hidden_zero(items(), Some(&mean)).expect("the mean hides a's pass^4 0");
    assert!(line.contains("1 of them has a pass^n of 0.00"), "{line}");
    assert!(line.contains("`a` under `x`: pass^4 0.00"), "{line}");
    // Scored by pass^k, nothing is hidden; never failing or never passing hides nothing.
    let by_k = measured(ConsistencyScore::PassK, Some(4));
    assert_eq!(hidden_zero(items(), Some(&by_k)), None);
    let never = Consistency::of(4, 0);
    assert_eq!(hidden_zero([("c".into(), &never)], Some(&mean)), None);
}
