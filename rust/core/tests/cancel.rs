//! A set [`Cancel`] flag stops each long computation of the core with `CoreError::Cancelled`; an
//! unset one changes nothing.

use ferroshap_core::interactions::function::{Basis, Key, SparseFunction};
use ferroshap_core::interactions::proxyspex::{plan_masks, refit_top, select_support, Samples};
use ferroshap_core::interactions::ridge::{refit_ridge, select_ridge};
use ferroshap_core::interactions::trees::lightgbm_fourier;
use ferroshap_core::sampling::regression::Solver;
use ferroshap_core::sketch::SketchPlan;
use ferroshap_core::{plan, plan_cancellable, Cancel, CoreError, Estimator, Method, PlanRequest};

fn cancelled() -> Cancel {
    let cancel = Cancel::new();
    cancel.cancel();
    cancel
}

fn request(method: Method, n_players: usize, budget: u64) -> PlanRequest {
    PlanRequest {
        method,
        n_players,
        budget,
        seed: 3,
        stream: 0,
        paired: true,
    }
}

#[test]
fn planning_stops_for_every_sampling_method() {
    for method in Method::ALL.into_iter().filter(|&m| m != Method::Exact) {
        let r = request(method, 40, 400);
        let stopped = plan_cancellable(r, &cancelled());
        assert_eq!(stopped.unwrap_err(), CoreError::Cancelled, "{method}");
        let (same, planned) = (
            plan_cancellable(r, &Cancel::new()).unwrap(),
            plan(r).unwrap(),
        );
        assert_eq!(same.coalitions, planned.coalitions, "{method}");
        assert_eq!(same.weights, planned.weights, "{method}");
    }
}

#[test]
fn factorizing_and_estimating_stop_on_every_path() {
    let regression = plan(request(Method::Leverage, 30, 400)).unwrap();
    let values: Vec<f64> = (0..regression.n_coalitions())
        .map(|r| (r as f64 * 0.37).sin())
        .collect();
    for solver in [Solver::Normal, Solver::Svd] {
        let built = Estimator::with_solver_cancellable(&regression, solver, &cancelled());
        assert_eq!(built.unwrap_err(), CoreError::Cancelled, "{solver:?}");
        let estimator = Estimator::with_solver(&regression, solver).unwrap();
        assert_eq!(estimator.solver_name(), Some(solver.name()));
        let phi = estimator.estimate(&values, 1).unwrap();
        let same = estimator.estimate_cancellable(&values, 1, &Cancel::new());
        assert_eq!(same.unwrap(), phi);
        let stopped = estimator.estimate_cancellable(&values, 1, &cancelled());
        assert_eq!(stopped, Err(CoreError::Cancelled), "{solver:?}");
    }
    for method in [Method::Unbiased, Method::Permutation, Method::Exact] {
        let design = plan(request(method, 8, 200)).unwrap();
        let built = Estimator::with_solver_cancellable(&design, Solver::Auto, &cancelled());
        assert_eq!(built.unwrap_err(), CoreError::Cancelled, "{method}");
        let estimator = Estimator::new(&design).unwrap();
        let values = vec![1.0; design.n_coalitions()];
        let stopped = estimator.estimate_cancellable(&values, 1, &cancelled());
        assert_eq!(stopped, Err(CoreError::Cancelled), "{method}");
    }
}

#[test]
fn sketch_decoding_stops() {
    let plan = SketchPlan::from_budget(4, 10, 2000, 1, 2).unwrap();
    let values: Vec<f64> = (0..plan.n_queries()).map(|r| (r % 7) as f64).collect();
    let fit = plan.decode(&values, &cancelled());
    assert_eq!(fit.unwrap_err(), CoreError::Cancelled);
    assert!(plan.decode(&values, &Cancel::new()).is_ok());
}

#[test]
fn tree_extraction_stops() {
    let model = "tree\nversion=v4\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\n\
                 max_feature_idx=2\nobjective=regression\n\nTree=0\nnum_leaves=2\nnum_cat=0\n\
                 split_feature=1\nthreshold=0.5\ndecision_type=2\nleft_child=-1\n\
                 right_child=-2\nleaf_value=10 20\nis_linear=0\nshrinkage=1\n\n\nend of trees\n";
    let f = lightgbm_fourier(model, 3, &cancelled());
    assert_eq!(f.unwrap_err(), CoreError::Cancelled);
    assert_eq!(lightgbm_fourier(model, 3, &Cancel::new()).unwrap().len(), 2);
}

#[test]
fn proxyspex_planning_selection_and_refits_stop() {
    let n = 8;
    let terms = vec![
        (Key::empty(), 0.5),
        (Key::from_sorted(&[0]), 1.0),
        (Key::from_sorted(&[1, 2]), -0.6),
        (Key::from_sorted(&[3]), 0.3),
    ];
    let f = SparseFunction::new(Basis::Fourier, n, terms).unwrap();
    assert_eq!(
        plan_masks(n, 150, 1, &cancelled()).unwrap_err(),
        CoreError::Cancelled
    );
    let masks = plan_masks(n, 150, 1, &Cancel::new())
        .unwrap()
        .to_indicators();
    let values = f.evaluate(&masks).unwrap();
    let all = Samples {
        masks: &masks,
        values: &values,
    };
    let train = Samples {
        masks: &masks[..100 * n],
        values: &values[..100],
    };
    let validation = Samples {
        masks: &masks[100 * n..],
        values: &values[100..],
    };
    let stop = cancelled();
    for basis in [Basis::Fourier, Basis::Moebius] {
        let selection = select_support(&f, basis, train, validation, &stop);
        assert_eq!(selection.unwrap_err(), CoreError::Cancelled);
        let fit = refit_top(&f, basis, 3, all, None, &stop);
        assert_eq!(fit.unwrap_err(), CoreError::Cancelled);
        assert!(select_support(&f, basis, train, validation, &Cancel::new()).is_ok());
    }
    let ridge = select_ridge(&f, train, validation, &stop);
    assert_eq!(ridge.unwrap_err(), CoreError::Cancelled);
    let fit = refit_ridge(&f, 1e-3, all, None, &stop);
    assert_eq!(fit.unwrap_err(), CoreError::Cancelled);
    assert!(refit_ridge(&f, 1e-3, all, None, &Cancel::new()).is_ok());
}
