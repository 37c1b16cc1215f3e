//! `tasks calibrate`: tolerances from the spread of the oracle's own results.
//! A new observation falls, with 95% probability, within the prediction
//! interval mean ± t(0.975, n-1) · s · √(1 + 1/n) of n earlier ones (as
//! CORE-Bench grades). A check's tolerance is widened or narrowed to hold
//! that interval; where the oracle always gives the same number, a small
//! relative tolerance stands in for the spread that other machines add.

use cleanroom_task::Comparison;

/// Relative tolerance proposed when every run gave the same value.
pub const ZERO_SPREAD_REL_TOL: f64 = 1e-6;

/// Two-sided 95% quantiles of Student's t for 1..=30 degrees of freedom.
const T_975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
    2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
];

/// t(0.975, df); beyond the table, the next tabulated value down (40, 60,
/// 120 degrees of freedom), which errs wide.
pub fn t_975(df: usize) -> f64 {
    match df {
        0 => f64::INFINITY,
        1..=30 => T_975[df - 1],
        31..=40 => 2.042,
        41..=60 => 2.021,
        61..=120 => 2.000,
        _ => 1.980,
    }
}

/// Mean and half-width of the 95% prediction interval of `values`.
pub fn prediction_interval(values: &[f64]) -> Option<(f64, f64)> {
    let n = values.len();
    if n < 2 {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let half = t_975(n - 1) * var.sqrt() * (1.0 + 1.0 / n as f64).sqrt();
    Some((mean, half))
}

/// A check's new comparison, in task-format terms.
#[derive(Debug, Clone, PartialEq)]
pub enum Proposal {
    /// `expect` stays; `abs_tol` covers the interval (rel_tol dropped).
    AbsTol(f64),
    /// `expect` stays; the spread was zero.
    RelTol(f64),
    Range(f64, f64),
}

/// The proposal for a numeric check, or None for other kinds.
pub fn propose(compare: &Comparison, values: &[f64]) -> Option<Proposal> {
    let (mean, half) = prediction_interval(values)?;
    let (lo, hi) = (mean - half, mean + half);
    match compare {
        Comparison::Number { expect, .. } if half == 0.0 => {
            let off = if *expect == 0.0 { 0.0 } else { (mean - expect).abs() / expect.abs() };
            if *expect == 0.0 && mean != 0.0 {
                Some(Proposal::AbsTol(mean.abs()))
            } else {
                Some(Proposal::RelTol(ZERO_SPREAD_REL_TOL.max(2.0 * off)))
            }
        }
        Comparison::Number { expect, .. } => {
            Some(Proposal::AbsTol((lo - expect).abs().max((hi - expect).abs())))
        }
        Comparison::Range { .. } if half == 0.0 => {
            let pad = ZERO_SPREAD_REL_TOL * mean.abs();
            Some(Proposal::Range(mean - pad, mean + pad))
        }
        Comparison::Range { .. } => Some(Proposal::Range(lo, hi)),
        Comparison::Equals(_) | Comparison::Exists => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn number(expect: f64) -> Comparison {
        Comparison::Number { expect, abs_tol: None, rel_tol: None }
    }

    #[test]
    fn interval_matches_a_hand_computation() {
        // n = 4: mean 2.5, s = sqrt(5/3); t(0.975, 3) = 3.182.
        let (mean, half) = prediction_interval(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(mean, 2.5);
        let expected = 3.182 * (5.0f64 / 3.0).sqrt() * (1.25f64).sqrt();
        assert!((half - expected).abs() < 1e-12, "{half} vs {expected}");
        assert!(prediction_interval(&[1.0]).is_none());
    }

    #[test]
    fn tolerance_covers_the_interval_around_the_expected_value() {
        let values = [1.0, 2.0, 3.0, 4.0];
        let (mean, half) = prediction_interval(&values).unwrap();
        let Some(Proposal::AbsTol(tol)) = propose(&number(2.0), &values) else { panic!() };
        assert!((tol - (mean + half - 2.0)).abs() < 1e-12);
    }

    #[test]
    fn zero_spread_gives_a_relative_tolerance() {
        assert_eq!(propose(&number(0.5), &[0.5, 0.5, 0.5]), Some(Proposal::RelTol(ZERO_SPREAD_REL_TOL)));
        let range = Comparison::Range { lo: 0.0, hi: 1.0 };
        assert_eq!(propose(&range, &[2.0, 2.0]), Some(Proposal::Range(2.0 - 2e-6, 2.0 + 2e-6)));
        assert_eq!(propose(&Comparison::Equals("x".into()), &[1.0, 2.0]), None);
    }

    #[test]
    fn t_quantiles_fall_with_degrees_of_freedom() {
        assert_eq!(t_975(1), 12.706);
        assert_eq!(t_975(30), 2.042);
        assert!(t_975(1000) < t_975(31));
        assert!(t_975(0).is_infinite());
    }
}
