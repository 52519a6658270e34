//! Every method against closed-form oracles: exactness where the math promises it, efficiency,
//! convergence with the budget, determinism, and large-n numerics.

mod games;

use ferroshap_core::coalitions::{EMPTY_ROW, FULL_ROW};
use ferroshap_core::sampling::MAX_EXACT_PLAYERS;
use ferroshap_core::{plan, CoreError, Design, Estimator, Method, PlanRequest};
use games::{relative_error, Soum};
use proptest::prelude::*;

fn request(method: Method, n: usize, budget: u64, seed: u64) -> PlanRequest {
    PlanRequest {
        method,
        n_players: n,
        budget,
        seed,
        stream: 0,
        paired: true,
    }
}

fn estimate(design: &Design, values: &[f64]) -> Vec<f64> {
    Estimator::new(design).unwrap().estimate(values, 1).unwrap()
}

const SAMPLING: [Method; 6] = [
    Method::Kernel,
    Method::KernelWithoutReplacement,
    Method::Leverage,
    Method::ModifiedL2,
    Method::Unbiased,
    Method::Permutation,
];

const REGRESSION: [Method; 4] = [
    Method::Kernel,
    Method::KernelWithoutReplacement,
    Method::Leverage,
    Method::ModifiedL2,
];

#[test]
fn every_design_holds_the_empty_and_the_grand_coalition_at_their_rows() {
    for method in SAMPLING {
        let design = plan(request(method, 7, 60, 1)).unwrap();
        let sizes = design.sizes();
        assert_eq!((sizes[EMPTY_ROW], sizes[FULL_ROW]), (0, 7), "{method}");
    }
    let exact = plan(request(Method::Exact, 7, 128, 1)).unwrap();
    assert_eq!(exact.sizes()[EMPTY_ROW], 0);
}

#[test]
fn budget_covering_every_coalition_is_exact() {
    let game = Soum::random(9, 20, 4, 1);
    for method in SAMPLING.into_iter().chain([Method::Exact]) {
        let design = plan(request(method, 9, 512, 3)).unwrap();
        assert_eq!(design.method, Method::Exact);
        assert_eq!(design.exact_fallback, method != Method::Exact);
        let phi = estimate(&design, &game.evaluate(&design.coalitions));
        assert!(relative_error(&phi, &game.shapley()) < 1e-24, "{method}");
    }
}

#[test]
fn saturated_without_replacement_designs_are_exact() {
    // 2^9 − 2 = 510 proper coalitions: budget 511 rounds to 510 + ∅ + N − 2 = 508 sampled, which
    // saturates all but one pair of a layer; budget 512 − 2 would be full. Close to exact anyway.
    let game = Soum::random(9, 20, 4, 2);
    for method in REGRESSION {
        let design = plan(request(method, 9, 511, 3)).unwrap();
        assert_eq!(design.n_coalitions(), 510);
        let phi = estimate(&design, &game.evaluate(&design.coalitions));
        assert!(relative_error(&phi, &game.shapley()) < 1e-3, "{method}");
    }
}

#[test]
fn additive_games_are_recovered_exactly_by_regression() {
    let n = 20;
    let a: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
    for method in REGRESSION {
        for seed in 0..3 {
            let design = plan(request(method, n, 4 * n as u64, seed)).unwrap();
            let values: Vec<f64> = (0..design.n_coalitions())
                .map(|r| {
                    (0..n)
                        .filter(|&i| design.coalitions.contains(r, i))
                        .map(|i| a[i])
                        .sum()
                })
                .collect();
            let phi = estimate(&design, &values);
            let err = relative_error(&phi, &a);
            assert!(err < 1e-20, "{method} seed {seed}: {err}");
        }
    }
}

#[test]
fn error_falls_as_the_budget_grows() {
    for n in [64, 512] {
        let game = Soum::random(n, 3 * n, 3, 4);
        let truth = game.shapley();
        for method in SAMPLING {
            let mean_error = |budget: u64| -> f64 {
                (0..3)
                    .map(|seed| {
                        let design = plan(request(method, n, budget, seed)).unwrap();
                        let phi = estimate(&design, &game.evaluate(&design.coalitions));
                        relative_error(&phi, &truth)
                    })
                    .sum::<f64>()
                    / 3.0
            };
            let (small, large) = (mean_error(2 * n as u64), mean_error(16 * n as u64));
            assert!(large < small / 2.0, "n={n} {method}: {small} -> {large}");
        }
    }
}

#[test]
fn unbiased_estimator_averages_to_the_truth() {
    let n = 10;
    let game = Soum::random(n, 25, 4, 5);
    let truth = game.shapley();
    let reps = 400;
    let mut sum = vec![0.0; n];
    let mut sum_sq = vec![0.0; n];
    for seed in 0..reps {
        let design = plan(request(Method::Unbiased, n, 60, seed)).unwrap();
        let phi = estimate(&design, &game.evaluate(&design.coalitions));
        for i in 0..n {
            sum[i] += phi[i];
            sum_sq[i] += phi[i] * phi[i];
        }
    }
    for i in 0..n {
        let mean = sum[i] / reps as f64;
        let sd = (sum_sq[i] / reps as f64 - mean * mean).sqrt();
        let se = sd / (reps as f64).sqrt();
        // 4.5 standard errors: a false alarm has probability ~1e-5 per player.
        assert!(
            (mean - truth[i]).abs() < 4.5 * se + 1e-12,
            "player {i}: {mean} vs {}",
            truth[i]
        );
    }
}

#[test]
fn same_seed_same_bits_and_streams_differ() {
    let game = Soum::random(40, 60, 3, 6);
    for method in SAMPLING {
        let a = plan(request(method, 40, 300, 9)).unwrap();
        let b = plan(request(method, 40, 300, 9)).unwrap();
        assert_eq!(a.coalitions, b.coalitions);
        let (pa, pb) = (
            estimate(&a, &game.evaluate(&a.coalitions)),
            estimate(&b, &game.evaluate(&b.coalitions)),
        );
        assert!(pa.iter().zip(&pb).all(|(x, y)| x.to_bits() == y.to_bits()));
        let mut other = request(method, 40, 300, 9);
        other.stream = 1;
        assert_ne!(plan(other).unwrap().coalitions, a.coalitions, "{method}");
    }
}

#[test]
fn thousands_of_players_stay_finite_and_efficient() {
    let n = 4096;
    let game = Soum::random(n, 500, 3, 7);
    for method in [Method::Leverage, Method::Kernel, Method::Unbiased] {
        let design = plan(request(method, n, 600, 1)).unwrap();
        let values = game.evaluate(&design.coalitions);
        let phi = estimate(&design, &values);
        assert!(phi.iter().all(|x| x.is_finite()));
        let delta = game.value(&ferroshap_core::coalitions::full_mask(n))
            - game.value(&ferroshap_core::coalitions::empty_mask(n));
        assert!((phi.iter().sum::<f64>() - delta).abs() < 1e-9 * (1.0 + delta.abs()));
    }
}

#[test]
fn budgets_are_honoured() {
    for method in [
        Method::KernelWithoutReplacement,
        Method::Leverage,
        Method::ModifiedL2,
        Method::Unbiased,
        Method::Kernel,
    ] {
        let design = plan(request(method, 30, 257, 0)).unwrap();
        assert_eq!(
            design.n_coalitions(),
            256,
            "{method}: odd budget rounds down when paired"
        );
    }
    let design = plan(request(Method::Permutation, 30, 257, 0)).unwrap();
    assert!(design.n_coalitions() <= 257 && design.n_coalitions() > 257 - 58);
}

#[test]
fn rank_deficient_designs_return_the_minimum_norm_solution() {
    let n = 50;
    let game = Soum::random(n, 40, 2, 8);
    let design = plan(request(Method::Leverage, n, 20, 0)).unwrap();
    let estimator = Estimator::new(&design).unwrap();
    assert!(estimator.rank().unwrap() < n - 1);
    let phi = estimator
        .estimate(&game.evaluate(&design.coalitions), 1)
        .unwrap();
    assert!(phi.iter().all(|x| x.is_finite()));
}

#[test]
fn single_player_gets_the_whole_difference() {
    let design = plan(request(Method::Leverage, 1, 2, 0)).unwrap();
    assert!(!design.exact_fallback);
    let values: Vec<f64> = (0..design.n_coalitions())
        .map(|r| {
            if design.coalitions.size(r) == 1 {
                5.0
            } else {
                2.0
            }
        })
        .collect();
    assert_eq!(estimate(&design, &values), vec![3.0]);
}

#[test]
fn bad_arguments_name_themselves() {
    let arg = |r: PlanRequest| match plan(r) {
        Err(CoreError::InvalidArgument { argument, .. }) => argument,
        other => panic!("expected an error, got {other:?}"),
    };
    assert_eq!(arg(request(Method::Leverage, 0, 10, 0)), "n_players");
    assert_eq!(arg(request(Method::Leverage, 10, 1, 0)), "budget");
    assert_eq!(arg(request(Method::Permutation, 10, 19, 0)), "budget");
    assert_eq!(
        arg(request(Method::Exact, MAX_EXACT_PLAYERS + 1, 10, 0)),
        "method"
    );
    assert!("nope".parse::<Method>().is_err());
    let design = plan(request(Method::Leverage, 5, 10, 0)).unwrap();
    let estimator = Estimator::new(&design).unwrap();
    assert!(estimator.estimate(&[1.0; 3], 1).is_err());
    assert!(estimator.estimate(&[f64::NAN; 10], 1).is_err());
}

#[test]
fn many_columns_match_one_at_a_time() {
    let n = 12;
    let games: Vec<Soum> = (0..70).map(|s| Soum::random(n, 10, 3, 100 + s)).collect();
    let design = plan(request(Method::Leverage, n, 200, 0)).unwrap();
    let m = design.n_coalitions();
    let columns: Vec<Vec<f64>> = games
        .iter()
        .map(|g| g.evaluate(&design.coalitions))
        .collect();
    let mut stacked = vec![0.0; m * games.len()];
    for (j, col) in columns.iter().enumerate() {
        for r in 0..m {
            stacked[r * games.len() + j] = col[r];
        }
    }
    let estimator = Estimator::new(&design).unwrap();
    let all = estimator.estimate(&stacked, games.len()).unwrap();
    for (j, col) in columns.iter().enumerate() {
        let one = estimator.estimate(col, 1).unwrap();
        for i in 0..n {
            assert!((all[j * n + i] - one[i]).abs() < 1e-12);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn efficiency_holds_for_every_method(
        n in 2usize..40,
        budget_factor in 2u64..8,
        seed in 0u64..1000,
        method_index in 0usize..6,
    ) {
        let method = SAMPLING[method_index];
        let game = Soum::random(n, 2 * n, 3, seed);
        let design = plan(request(method, n, budget_factor * n as u64 + 2, seed)).unwrap();
        let values = game.evaluate(&design.coalitions);
        let phi = estimate(&design, &values);
        let delta = game.shapley().iter().sum::<f64>();
        prop_assert!((phi.iter().sum::<f64>() - delta).abs() < 1e-9 * (1.0 + delta.abs()));
    }

    #[test]
    fn adding_a_constant_changes_nothing(n in 3usize..20, seed in 0u64..1000, shift in -50.0f64..50.0) {
        let game = Soum::random(n, 2 * n, 3, seed);
        let design = plan(request(Method::Leverage, n, 6 * n as u64, seed)).unwrap();
        let values = game.evaluate(&design.coalitions);
        let shifted: Vec<f64> = values.iter().map(|v| v + shift).collect();
        let (a, b) = (estimate(&design, &values), estimate(&design, &shifted));
        for (x, y) in a.iter().zip(&b) {
            prop_assert!((x - y).abs() < 1e-9);
        }
    }
}
