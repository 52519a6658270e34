//! The bit-aware normal-equations solver against the SVD path: equal values (1e-9 relative,
//! per column) on full-rank random designs, the SVD's minimum-norm solution on rank-deficient
//! ones, and the fallback on an ill-conditioned design.

use ferroshap_core::coalitions::CoalitionMatrix;
use ferroshap_core::sampling::regression::Solver;
use ferroshap_core::{plan, Design, Estimator, Method, PlanRequest};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn design(method: Method, n: usize, budget: u64, seed: u64) -> Design {
    plan(PlanRequest {
        method,
        n_players: n,
        budget,
        seed,
        stream: 0,
        paired: true,
    })
    .unwrap()
}

/// `columns` random value columns, row-major `m × columns`.
fn random_values(m: usize, columns: usize, seed: u64) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..m * columns)
        .map(|_| rng.random_range(-1.0..1.0))
        .collect()
}

/// Largest per-column relative ℓ2 difference of two `columns × n` results.
fn max_relative_difference(a: &[f64], b: &[f64], n: usize) -> f64 {
    a.chunks(n)
        .zip(b.chunks(n))
        .map(|(x, y)| {
            let diff = x.iter().zip(y).map(|(p, q)| (p - q).powi(2)).sum::<f64>();
            let norm = y.iter().map(|q| q * q).sum::<f64>();
            (diff / norm).sqrt()
        })
        .fold(0.0, f64::max)
}

/// Estimates with both solvers; returns them and the normal-path estimator.
fn both(design: &Design, values: &[f64], columns: usize) -> (Vec<f64>, Vec<f64>, Estimator) {
    let svd = Estimator::with_solver(design, Solver::Svd).unwrap();
    let normal = Estimator::with_solver(design, Solver::Normal).unwrap();
    assert_eq!(svd.solver_name(), Some("svd"));
    let a = normal.estimate(values, columns).unwrap();
    let b = svd.estimate(values, columns).unwrap();
    (a, b, normal)
}

#[test]
fn normal_equations_match_the_svd_on_full_rank_designs() {
    for (n, budget) in [(8, 120), (50, 1200), (300, 6000)] {
        for method in [Method::Leverage, Method::Kernel, Method::ModifiedL2] {
            let d = design(method, n, budget, 7);
            let columns = 70;
            let values = random_values(d.n_coalitions(), columns, n as u64);
            let (normal, svd, estimator) = both(&d, &values, columns);
            assert_eq!(estimator.solver_name(), Some("normal"), "{method} n={n}");
            assert_eq!(estimator.rank(), Some(n - 1));
            assert!(estimator.conditioning_warning().is_none());
            let err = max_relative_difference(&normal, &svd, n);
            assert!(err < 1e-9, "{method} n={n}: relative difference {err:e}");
        }
    }
}

#[test]
fn too_few_rows_keep_the_minimum_norm_solution() {
    for n in [8, 50, 300] {
        let d = design(Method::Leverage, n, (n / 2) as u64 + 2, 3);
        let values = random_values(d.n_coalitions(), 2, 1);
        let (normal, svd, estimator) = both(&d, &values, 2);
        assert_eq!(estimator.solver_name(), Some("svd"));
        assert!(estimator.rank().unwrap() < n - 1);
        assert!(estimator.conditioning_warning().is_none());
        assert_eq!(normal, svd);
    }
}

/// Player 1 copies player 0 in every coalition: two equal columns, rank ≤ n − 2 whatever m.
fn with_tied_players(d: &Design) -> Design {
    let n = d.n_players;
    let mut coalitions = CoalitionMatrix::new(n);
    for r in 0..d.n_coalitions() {
        let mut mask = d.coalitions.row(r).to_vec();
        mask[0] = (mask[0] & !2) | ((mask[0] & 1) << 1);
        coalitions.push(&mask);
    }
    let mut tied = d.clone();
    tied.coalitions = coalitions;
    tied
}

#[test]
fn rank_deficient_designs_with_many_rows_fall_back_to_the_svd() {
    for (n, budget) in [(8, 120), (50, 1200), (300, 6000)] {
        let d = with_tied_players(&design(Method::Leverage, n, budget, 5));
        let values = random_values(d.n_coalitions(), 3, 2);
        let (normal, svd, estimator) = both(&d, &values, 3);
        assert_eq!(estimator.solver_name(), Some("svd"), "n={n}");
        assert!(estimator.rank().unwrap() < n - 1);
        assert!(estimator.conditioning_warning().is_none());
        assert_eq!(normal, svd);
    }
}

#[test]
fn ill_conditioned_designs_fall_back_with_a_warning() {
    let n = 8;
    let mut d = design(Method::Leverage, n, 200, 0);
    // Rows that separate players 0 and 1 get a tiny weight: the direction e0 − e1 is barely
    // identified, so κ(XᵀX) ≈ 1e12 while the SVD still sees full rank.
    for r in 0..d.n_coalitions() {
        let mask = d.coalitions.row(r)[0];
        if (mask & 1) != ((mask >> 1) & 1) {
            d.weights[r] *= 1e-12;
        }
    }
    let auto = Estimator::with_solver(&d, Solver::Normal).unwrap();
    assert_eq!(auto.solver_name(), Some("svd"));
    assert_eq!(auto.rank(), Some(n - 1));
    let warning = auto.conditioning_warning().unwrap();
    assert!(warning.contains("ill-conditioned"), "{warning}");
}

#[test]
fn auto_takes_the_normal_equations_from_the_crossover_on() {
    let small = design(Method::Leverage, 8, 120, 0);
    let large = design(Method::Leverage, 64, 1000, 0);
    let auto = |d: &Design| Estimator::new(d).unwrap().solver_name();
    assert_eq!(auto(&small), Some("svd"));
    assert_eq!(auto(&large), Some("normal"));
    assert!("qr".parse::<Solver>().is_err());
    assert_eq!("normal".parse::<Solver>().unwrap(), Solver::Normal);
}

#[test]
fn normal_results_do_not_depend_on_the_thread_count() {
    let d = design(Method::Leverage, 120, 5000, 1);
    let values = random_values(d.n_coalitions(), 5, 9);
    let run = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| {
                Estimator::with_solver(&d, Solver::Normal)
                    .unwrap()
                    .estimate(&values, 5)
                    .unwrap()
            })
    };
    assert_eq!(run(1), run(3));
}

#[test]
fn many_columns_give_the_values_of_their_blocks_of_64_estimated_apart() {
    // 700 columns span several passes of the right-hand-side product at n = 50 and 100 and one
    // at n = 8; the solves run per block of 64 columns whatever the pass: estimating the
    // blocks one call each must give the same bits.
    for (n, budget) in [(8, 120), (50, 1200), (100, 4096)] {
        let d = design(Method::Leverage, n, budget, 11);
        let estimator = Estimator::with_solver(&d, Solver::Normal).unwrap();
        let columns = 700;
        let values = random_values(d.n_coalitions(), columns, 5);
        let together = estimator.estimate(&values, columns).unwrap();
        for first in (0..columns).step_by(64) {
            let width = 64.min(columns - first);
            let block: Vec<f64> = values
                .chunks(columns)
                .flat_map(|row| &row[first..first + width])
                .copied()
                .collect();
            let apart = estimator.estimate(&block, width).unwrap();
            assert_eq!(
                apart,
                together[first * n..(first + width) * n],
                "n = {n}, block at column {first}"
            );
        }
    }
}
