//! A parser for LightGBM's model text (`Booster.model_to_string()`), restricted to what an exact
//! transform needs: numerical splits of single-output regression models (docs/proxyspex.md,
//! step 4).

use rayon::prelude::*;

use crate::error::{CoreError, Result};

/// `kZeroThreshold` of LightGBM (`1e-35f` widened to double).
const ZERO_THRESHOLD: f64 = 1.000_000_018_002_509_5e-35;

/// Objectives whose prediction is the raw score (sum of the leaf values).
const IDENTITY_OBJECTIVES: [&str; 6] = [
    "regression",
    "regression_l1",
    "huber",
    "fair",
    "quantile",
    "mape",
];

/// Where a split sends an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Child {
    /// Another split, by node index (always larger than its parent's).
    Node(usize),
    /// A leaf, by leaf index.
    Leaf(usize),
}

/// How a split treats missing values (`decision_type` bits 2–3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MissingType {
    /// No missing-value rule: zero compares with the threshold like any value.
    None,
    /// Zero (|x| ≤ 1e-35) counts as missing and takes the default direction.
    Zero,
    /// NaN counts as missing (never the case for 0/1 inputs).
    NaN,
}

/// One numerical split.
#[derive(Debug, Clone, PartialEq)]
pub struct Split {
    /// The feature compared.
    pub feature: usize,
    /// Go left when `x ≤ threshold` (outside the missing-value rule).
    pub threshold: f64,
    /// Direction of missing values.
    pub default_left: bool,
    /// Which values count as missing.
    pub missing: MissingType,
    /// Child for `x ≤ threshold`.
    pub left: Child,
    /// Child for `x > threshold`.
    pub right: Child,
}

impl Split {
    /// The child LightGBM's `NumericalDecision` takes for the (non-NaN) input `x`.
    pub fn route(&self, x: f64) -> Child {
        let missing = self.missing == MissingType::Zero && x.abs() <= ZERO_THRESHOLD;
        let left = if missing {
            self.default_left
        } else {
            x <= self.threshold
        };
        if left {
            self.left
        } else {
            self.right
        }
    }
}

/// One regression tree; node 0 is the root (a tree without splits is a single leaf).
#[derive(Debug, Clone, PartialEq)]
pub struct Tree {
    /// Internal nodes.
    pub splits: Vec<Split>,
    /// Leaf outputs, shrinkage included.
    pub leaf_values: Vec<f64>,
}

/// A single-output LightGBM regression ensemble whose prediction is the sum of its trees
/// (already divided by the number of trees for random-forest models).
#[derive(Debug, Clone, PartialEq)]
pub struct Ensemble {
    /// Number of input features the model was trained on (`max_feature_idx + 1`).
    pub n_features: usize,
    /// The trees.
    pub trees: Vec<Tree>,
}

fn bad(message: impl Into<String>) -> CoreError {
    CoreError::invalid("model", message)
}

/// `key=value` lines of a block.
fn fields(block: &str) -> impl Iterator<Item = (&str, &str)> {
    block
        .lines()
        .filter_map(|line| line.trim_end_matches('\r').split_once('='))
}

/// The header line `name`.
fn header_field<'a>(header: &'a str, name: &str) -> Result<&'a str> {
    fields(header)
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
        .ok_or_else(|| {
            bad(format!(
                "no {name} line in the header; expected LightGBM model text from \
                 Booster.model_to_string()"
            ))
        })
}

/// The whitespace-separated numbers of `text` (`expected` of them, as a capacity hint). A token
/// equal to the one before is not parsed again: on 0/1 data every threshold is the same
/// 22-character number.
fn numbers<T: std::str::FromStr + Copy>(
    text: &str,
    name: &str,
    tree: usize,
    expected: usize,
) -> Result<Vec<T>> {
    // Tokens are at least two bytes apart, whatever the (untrusted) count says.
    let mut out = Vec::with_capacity(expected.min(text.len() / 2 + 1));
    let mut previous: Option<(&str, T)> = None;
    for token in text.split_ascii_whitespace() {
        let value = match previous {
            Some((text, value)) if text == token => value,
            _ => token
                .parse()
                .map_err(|_| bad(format!("tree {tree}: cannot parse {name} value {token:?}")))?,
        };
        out.push(value);
        previous = Some((token, value));
    }
    Ok(out)
}

impl Ensemble {
    /// Parses LightGBM model text. Errors (argument `model`) for anything but a single-output
    /// regression model with numerical, non-linear trees, and for malformed text.
    pub fn from_model_text(text: &str) -> Result<Self> {
        let (header, body) = match text.find("\nTree=") {
            Some(i) => (&text[..i], &text[i + 1..]),
            None => (text, ""),
        };
        if header.lines().next().map(str::trim) != Some("tree") {
            return Err(bad(
                "does not start with \"tree\"; expected LightGBM model text from \
                 Booster.model_to_string()",
            ));
        }
        let per_iteration = header_field(header, "num_tree_per_iteration")?;
        let num_class = header_field(header, "num_class")?;
        if per_iteration.trim() != "1" || num_class.trim() != "1" {
            return Err(bad(format!(
                "has {} trees per iteration ({} classes); only single-output regression \
                 models are supported",
                per_iteration.trim(),
                num_class.trim()
            )));
        }
        let objective = header_field(header, "objective")?
            .split_whitespace()
            .next()
            .unwrap_or("");
        if !IDENTITY_OBJECTIVES.contains(&objective) {
            return Err(bad(format!(
                "objective {objective:?} is not a regression objective with identity output; \
                 expected one of {IDENTITY_OBJECTIVES:?}"
            )));
        }
        let max_feature: usize = header_field(header, "max_feature_idx")?
            .trim()
            .parse()
            .map_err(|_| bad("max_feature_idx is not a non-negative integer"))?;
        let average = header.lines().any(|l| l.trim() == "average_output");
        let blocks = tree_blocks(header, body);
        let mut trees: Vec<Tree> = blocks
            .par_iter()
            .enumerate()
            .map(|(t, block)| parse_tree(block, t))
            .collect::<Result<_>>()?;
        if average && !trees.is_empty() {
            let scale = 1.0 / trees.len() as f64;
            for tree in &mut trees {
                tree.leaf_values.iter_mut().for_each(|v| *v *= scale);
            }
        }
        // Every Walsh coefficient, prediction and partial sum of them is at most the sum of
        // all |leaf values| in magnitude; half of the largest double leaves room for rounding.
        let magnitude: f64 = trees
            .iter()
            .flat_map(|tree| &tree.leaf_values)
            .map(|v| v.abs())
            .sum();
        if magnitude > f64::MAX / 2.0 {
            return Err(bad(format!(
                "the leaf values' magnitudes sum to {magnitude:e}; sums of leaf values would \
                 overflow (at most {:e} is supported)",
                f64::MAX / 2.0
            )));
        }
        Ok(Self {
            n_features: max_feature + 1,
            trees,
        })
    }
}

/// The lines of a tree block the transform reads, found in one pass over the block.
struct TreeLines<'a> {
    tree: usize,
    values: [Option<&'a str>; TreeLines::NAMES.len()],
}

impl<'a> TreeLines<'a> {
    const NAMES: [&'static str; 8] = [
        "num_leaves",
        "leaf_value",
        "split_feature",
        "threshold",
        "decision_type",
        "left_child",
        "right_child",
        "is_linear",
    ];

    fn read(block: &'a str, tree: usize) -> Self {
        let mut values = [None; Self::NAMES.len()];
        for (key, value) in fields(block) {
            if let Some(i) = Self::NAMES.iter().position(|&name| name == key) {
                values[i] = Some(value);
            }
        }
        Self { tree, values }
    }

    /// The optional line `name`.
    fn optional(&self, name: &str) -> Option<&'a str> {
        let i = Self::NAMES.iter().position(|&n| n == name)?;
        self.values[i]
    }

    /// The line `name`, which must be present.
    fn get(&self, name: &str) -> Result<&'a str> {
        self.optional(name)
            .ok_or_else(|| bad(format!("tree {} has no {name} line", self.tree)))
    }

    /// The whitespace-separated numbers of the line `name` (`expected` of them, as a capacity
    /// hint).
    fn numbers<T: std::str::FromStr + Copy>(&self, name: &str, expected: usize) -> Result<Vec<T>> {
        numbers(self.get(name)?, name, self.tree, expected)
    }
}

/// The text of each tree: sliced by the header's `tree_sizes` (byte lengths, written by
/// LightGBM ≥ 2.3) when they cover the body exactly, tree by tree, else found by scanning for
/// `Tree=` (a serial pass over the whole text).
fn tree_blocks<'a>(header: &str, body: &'a str) -> Vec<&'a str> {
    let sliced = header_field(header, "tree_sizes").ok().and_then(|sizes| {
        let mut rest = body;
        sizes
            .split_ascii_whitespace()
            .map(|size| {
                let size: usize = size.parse().ok()?;
                let block = rest.get(..size).filter(|b| b.starts_with("Tree="))?;
                rest = &rest[size..];
                Some(&block["Tree=".len()..])
            })
            .collect::<Option<Vec<&str>>>()
            .filter(|_| rest.trim_start().starts_with("end of trees"))
    });
    sliced.unwrap_or_else(|| {
        body.split("end of trees")
            .next()
            .unwrap_or("")
            .split("Tree=")
            .filter(|b| !b.trim().is_empty())
            .collect()
    })
}

fn parse_tree(block: &str, t: usize) -> Result<Tree> {
    let lines = TreeLines::read(block, t);
    let num_leaves: usize = lines
        .get("num_leaves")?
        .trim()
        .parse()
        .map_err(|_| bad(format!("tree {t}: num_leaves is not a positive integer")))?;
    let leaf_values: Vec<f64> = lines.numbers("leaf_value", num_leaves)?;
    if num_leaves == 0 || leaf_values.len() != num_leaves {
        return Err(bad(format!(
            "tree {t}: num_leaves = {num_leaves} but {} leaf values",
            leaf_values.len()
        )));
    }
    if let Some(v) = leaf_values.iter().find(|v| !v.is_finite()) {
        return Err(bad(format!("tree {t}: leaf value {v} is not finite")));
    }
    let linear = lines.optional("is_linear").is_some_and(|v| v.trim() != "0");
    if linear {
        return Err(bad(format!(
            "tree {t} is a linear tree (linear_tree=true); only constant leaves are supported"
        )));
    }
    if num_leaves == 1 {
        return Ok(Tree {
            splits: Vec::new(),
            leaf_values,
        });
    }
    let internal = num_leaves - 1;
    let features: Vec<usize> = lines.numbers("split_feature", internal)?;
    let thresholds: Vec<f64> = lines.numbers("threshold", internal)?;
    let decisions: Vec<u8> = lines.numbers("decision_type", internal)?;
    let lefts: Vec<i64> = lines.numbers("left_child", internal)?;
    let rights: Vec<i64> = lines.numbers("right_child", internal)?;
    for (name, len) in [
        ("split_feature", features.len()),
        ("threshold", thresholds.len()),
        ("decision_type", decisions.len()),
        ("left_child", lefts.len()),
        ("right_child", rights.len()),
    ] {
        if len != internal {
            return Err(bad(format!(
                "tree {t}: {name} has {len} entries for {internal} splits"
            )));
        }
    }
    let child = |node: usize, c: i64| -> Result<Child> {
        let out = if c < 0 {
            let leaf = (-(c + 1)) as usize;
            (leaf < num_leaves).then_some(Child::Leaf(leaf))
        } else {
            let c = c as usize;
            (c > node && c < internal).then_some(Child::Node(c))
        };
        out.ok_or_else(|| bad(format!("tree {t}: node {node} has an invalid child {c}")))
    };
    let splits = (0..internal)
        .map(|i| {
            let decision = decisions[i];
            if decision & 1 != 0 {
                return Err(bad(format!(
                    "tree {t} has a categorical split (node {i}); only numerical splits are \
                     supported"
                )));
            }
            let missing = match (decision >> 2) & 3 {
                0 => MissingType::None,
                1 => MissingType::Zero,
                2 => MissingType::NaN,
                other => {
                    return Err(bad(format!(
                        "tree {t}: node {i} has an unknown missing type {other}"
                    )))
                }
            };
            if thresholds[i].is_nan() {
                return Err(bad(format!("tree {t}: node {i} has a NaN threshold")));
            }
            Ok(Split {
                feature: features[i],
                threshold: thresholds[i],
                default_left: decision & 2 != 0,
                missing,
                left: child(i, lefts[i])?,
                right: child(i, rights[i])?,
            })
        })
        .collect::<Result<Vec<Split>>>()?;
    check_single_parents(&splits, num_leaves, t)?;
    Ok(Tree {
        splits,
        leaf_values,
    })
}

/// Checks that every node but the root and every leaf has exactly one parent. Children already
/// come after their parents, so this makes the splits a tree: a child shared by two parents
/// would give a graph with exponentially many root-to-leaf paths (a hang in the transform), an
/// unreferenced one a leaf that is never reached.
fn check_single_parents(splits: &[Split], num_leaves: usize, t: usize) -> Result<()> {
    let internal = splits.len();
    let mut parents = vec![0u8; internal + num_leaves];
    for split in splits {
        for child in [split.left, split.right] {
            let slot = match child {
                Child::Node(c) => c,
                Child::Leaf(l) => internal + l,
            };
            parents[slot] = parents[slot].saturating_add(1);
        }
    }
    match parents.iter().skip(1).position(|&p| p != 1).map(|i| i + 1) {
        None => Ok(()),
        Some(slot) => {
            let what = if slot < internal {
                format!("node {slot}")
            } else {
                format!("leaf {}", slot - internal)
            };
            Err(bad(format!(
                "tree {t}: {what} is reached from {} parents; every node but the root and \
                 every leaf must have exactly one",
                parents[slot]
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hand-written model: one stump on feature 1 with the given decision type and threshold.
    pub(crate) fn stump(decision_type: u8, threshold: &str) -> String {
        format!(
            "tree\nversion=v4\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\n\
             max_feature_idx=2\nobjective=regression\n\nTree=0\nnum_leaves=2\nnum_cat=0\n\
             split_feature=1\nthreshold={threshold}\ndecision_type={decision_type}\n\
             left_child=-1\nright_child=-2\nleaf_value=10 20\nis_linear=0\nshrinkage=1\n\n\n\
             end of trees\n"
        )
    }

    #[test]
    fn missing_value_rules_on_zero_and_one() {
        // missing None, default left: 0 ≤ 1e-35 goes left.
        let e = Ensemble::from_model_text(&stump(2, "1.0000000180025095e-35")).unwrap();
        let s = &e.trees[0].splits[0];
        assert_eq!(
            (s.route(0.0), s.route(1.0)),
            (Child::Leaf(0), Child::Leaf(1))
        );
        // missing Zero, default right: zero is missing and goes right, one goes right too.
        let e = Ensemble::from_model_text(&stump(4, "0.5")).unwrap();
        let s = &e.trees[0].splits[0];
        assert_eq!(
            (s.route(0.0), s.route(1.0)),
            (Child::Leaf(1), Child::Leaf(1))
        );
        // missing Zero, default left: zero left, one compared with the threshold.
        let e = Ensemble::from_model_text(&stump(6, "0.5")).unwrap();
        let s = &e.trees[0].splits[0];
        assert_eq!(
            (s.route(0.0), s.route(1.0)),
            (Child::Leaf(0), Child::Leaf(1))
        );
        // missing NaN: plain comparison on 0/1.
        let e = Ensemble::from_model_text(&stump(8, "1.5")).unwrap();
        let s = &e.trees[0].splits[0];
        assert_eq!(
            (s.route(0.0), s.route(1.0)),
            (Child::Leaf(0), Child::Leaf(0))
        );
    }

    #[test]
    fn tree_sizes_slice_the_blocks_and_bad_sizes_fall_back_to_scanning() {
        let plain = stump(2, "0.5");
        let start = plain.find("Tree=0").unwrap();
        let size = plain.find("end of trees").unwrap() - start;
        let with_sizes =
            |sizes: &str| plain.replace("objective=", &format!("tree_sizes={sizes}\nobjective="));
        let expected = Ensemble::from_model_text(&plain).unwrap();
        for sizes in [
            size.to_string(),
            "3".into(),
            "x".into(),
            format!("{size} 7"),
        ] {
            assert_eq!(
                Ensemble::from_model_text(&with_sizes(&sizes)).unwrap(),
                expected,
                "{sizes}"
            );
        }
        // Sizes that stop short of the last tree are not trusted.
        let block = &plain[start..start + size];
        let two = with_sizes(&size.to_string()).replace(
            "end of trees",
            &format!("{}end of trees", block.replace("Tree=0", "Tree=1")),
        );
        assert_eq!(Ensemble::from_model_text(&two).unwrap().trees.len(), 2);
    }

    #[test]
    fn rejects_what_it_cannot_transform() {
        let err = |text: &str| Ensemble::from_model_text(text).unwrap_err().to_string();
        assert!(err(&stump(1, "0")).contains("categorical"));
        assert!(err("hello").contains("model text"));
        let binary = stump(2, "0.5").replace("objective=regression", "objective=binary sigmoid:1");
        assert!(err(&binary).contains("\"binary\""));
        let multi = stump(2, "0.5").replace("num_class=1", "num_class=3");
        assert!(err(&multi).contains("single-output"));
        let cycle = stump(2, "0.5").replace("left_child=-1", "left_child=0");
        assert!(err(&cycle).contains("invalid child"));
        let short = stump(2, "0.5").replace("leaf_value=10 20", "leaf_value=10");
        assert!(err(&short).contains("leaf values"));
        let garbage = stump(2, "0.5").replace("threshold=0.5", "threshold=abc");
        assert!(err(&garbage).contains("threshold"));
        let linear = stump(2, "0.5").replace("is_linear=0", "is_linear=1");
        assert!(err(&linear).contains("linear"));
        assert!(err(&stump(2, "nan")).contains("NaN threshold"));
        let huge = stump(2, "0.5").replace("leaf_value=10 20", "leaf_value=1e308 -1e308");
        assert!(err(&huge).contains("would overflow"));
    }

    /// A chain of `depth` splits on features `0..depth`: node `i` has leaf `i` on its left and
    /// node `i + 1` on its right (the last one leaf `depth`), every leaf worth `leaf`.
    fn chain(depth: usize, lefts: &str, leaf: &str) -> String {
        let rights: Vec<String> = (1..depth)
            .map(|i| i.to_string())
            .chain([format!("-{}", depth + 1)])
            .collect();
        let features: Vec<String> = (0..depth).map(|i| i.to_string()).collect();
        format!(
            "tree\nnum_class=1\nnum_tree_per_iteration=1\nmax_feature_idx={}\n\
             objective=regression\n\nTree=0\nnum_leaves={}\nsplit_feature={}\nthreshold={}\n\
             decision_type={}\nleft_child={lefts}\nright_child={}\nleaf_value={}\n\n\
             end of trees\n",
            depth - 1,
            depth + 1,
            features.join(" "),
            vec!["0.5"; depth].join(" "),
            vec!["2"; depth].join(" "),
            rights.join(" "),
            vec![leaf; depth + 1].join(" "),
        )
    }

    #[test]
    fn shared_children_are_refused_before_the_paths_multiply() {
        let depth = 60;
        let leaves: Vec<String> = (0..depth).map(|i| format!("-{}", i + 1)).collect();
        assert!(Ensemble::from_model_text(&chain(depth, &leaves.join(" "), "0")).is_ok());
        // Node i's left child is node i + 2, which node i + 1 reaches too: Fibonacci(60) paths
        // through zero-valued leaves, which the transform used to walk one by one (a hang).
        let shared: Vec<String> = (0..depth)
            .map(|i| {
                if i + 2 < depth {
                    (i + 2).to_string()
                } else {
                    "-1".into()
                }
            })
            .collect();
        let err = Ensemble::from_model_text(&chain(depth, &shared.join(" "), "0"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("node 2 is reached from 2 parents"), "{err}");
        // A leaf reached twice, and one never reached.
        let twice = stump(2, "0.5").replace("right_child=-2", "right_child=-1");
        let err = Ensemble::from_model_text(&twice).unwrap_err().to_string();
        assert!(err.contains("leaf 0 is reached from 2 parents"), "{err}");
    }
}
