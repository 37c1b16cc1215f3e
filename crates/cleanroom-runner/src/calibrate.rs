//! `tasks calibrate`: tolerances from the spread of correct deployments'
//! results. A new observation falls, with 95% probability, within the
//! prediction interval mean ± t(0.975, n-1) · s · √(1 + 1/n) of n earlier
//! ones (as CORE-Bench grades). A check is widened to hold that interval,
//! and never narrowed unless asked: an author's tolerance may be deliberate
//! (another library version, another machine), which no number of runs in
//! one environment shows. No proposal goes below a floor that stands in for
//! what other machines and library versions add to the spread seen here.

use cleanroom_task::Comparison;

/// The smallest tolerance proposed, relative to the value: summation order,
/// another BLAS or another compiler move results by far more than the
/// double-precision roundoff (1e-16) one environment shows, and by less
/// than this for the stable computations checks are written for.
pub const REL_FLOOR: f64 = 1e-6;

/// The smallest tolerance proposed around a value of zero, where a relative
/// floor has no scale: roundoff of order-one terms (1e-16 to 1e-13) with
/// room to spare.
pub const ZERO_ABS_FLOOR: f64 = 1e-10;

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

/// The smallest tolerance proposed around `centre`.
pub fn floor(centre: f64) -> f64 {
    if centre == 0.0 {
        ZERO_ABS_FLOOR
    } else {
        REL_FLOOR * centre.abs()
    }
}

/// What calibration makes of a numeric check. Its numbers are final: they
/// are what is shown and what is written.
#[derive(Debug, Clone, PartialEq)]
pub enum Proposal {
    /// The check already holds the interval (or, with `tighten`, is what
    /// it would be made): it stays as written.
    Keep,
    /// `expect` stays, with these tolerances (None: no such key).
    Tolerance {
        abs_tol: Option<f64>,
        rel_tol: Option<f64>,
    },
    Range(f64, f64),
}

/// The proposal for a check from the values observed, or None for a check
/// that is not numeric or where fewer than two values were seen. Without
/// `tighten` a tolerance or a range only ever widens.
pub fn propose(compare: &Comparison, values: &[f64], tighten: bool) -> Option<Proposal> {
    let (mean, half) = prediction_interval(values)?;
    match compare {
        Comparison::Number { expect, abs_tol, rel_tol } => {
            Some(propose_tolerance(*expect, *abs_tol, *rel_tol, mean, half, tighten))
        }
        Comparison::Range { lo, hi } => Some(propose_range(*lo, *hi, mean, half, tighten)),
        Comparison::Equals(_) | Comparison::Exists => None,
    }
}

/// Which key carries a check's tolerance.
#[derive(Clone, Copy)]
enum Kind {
    Abs,
    Rel,
}

fn propose_tolerance(
    expect: f64,
    abs_tol: Option<f64>,
    rel_tol: Option<f64>,
    mean: f64,
    half: f64,
    tighten: bool,
) -> Proposal {
    let spread = (mean - half - expect).abs().max((mean + half - expect).abs());
    let needed = spread.max(floor(expect));
    let now = abs_tol.unwrap_or(0.0).max(rel_tol.unwrap_or(0.0) * expect.abs());
    if !tighten && needed <= now {
        return Proposal::Keep;
    }
    // The author's kind of tolerance where there is one (the one that
    // decides where there are two); a new one is relative where the floor
    // decides, as the floor is, and absolute around zero.
    let kind = match (abs_tol, rel_tol) {
        _ if expect == 0.0 => Kind::Abs,
        (Some(a), Some(r)) => {
            if a >= r * expect.abs() {
                Kind::Abs
            } else {
                Kind::Rel
            }
        }
        (Some(_), None) => Kind::Abs,
        (None, Some(_)) => Kind::Rel,
        (None, None) if spread <= floor(expect) => Kind::Rel,
        (None, None) => Kind::Abs,
    };
    // Widening leaves the other key as the author wrote it (it no longer
    // decides); tightening drops it, as max() would let it undo the change.
    let other = |t: Option<f64>| if tighten { None } else { t };
    let proposal = match kind {
        Kind::Abs => Proposal::Tolerance { abs_tol: Some(round_up(needed)), rel_tol: other(rel_tol) },
        Kind::Rel => {
            Proposal::Tolerance { abs_tol: other(abs_tol), rel_tol: Some(round_up(needed / expect.abs())) }
        }
    };
    if proposal == (Proposal::Tolerance { abs_tol, rel_tol }) {
        Proposal::Keep
    } else {
        proposal
    }
}

fn propose_range(lo: f64, hi: f64, mean: f64, half: f64, tighten: bool) -> Proposal {
    let pad = half.max(floor(mean));
    // Bounds to two significant digits of the pad: close to the interval,
    // and short to read.
    let place = pad.log10().floor() as i32 - 1;
    let (new_lo, new_hi) = (round_at(mean - pad, place, false), round_at(mean + pad, place, true));
    // A bound moves only where what was observed crosses it: the floor pads
    // a bound that moves, but an analytic one that holds (a fraction's 0)
    // stays as the author wrote it. A range of one point is an exact value,
    // floored as one.
    let reach = if lo == hi { pad } else { half };
    let (lo2, hi2) = if tighten {
        (new_lo, new_hi)
    } else {
        (if mean - reach < lo { new_lo } else { lo }, if mean + reach > hi { new_hi } else { hi })
    };
    if (lo2, hi2) == (lo, hi) {
        Proposal::Keep
    } else {
        Proposal::Range(lo2, hi2)
    }
}

/// `x` up to three significant digits, so a written tolerance is never
/// narrower than the one computed.
pub fn round_up(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    round_at(x, x.abs().log10().floor() as i32 - 2, true)
}

/// `x` rounded at the decimal place 10^place, up or down. Powers of ten are
/// applied by division where they are fractions, so that the result is the
/// double nearest its decimal and prints as such (0.000153, not
/// 0.00015300000000000001).
fn round_at(x: f64, place: i32, up: bool) -> f64 {
    let (scale, fraction) = (10f64.powi(place.abs()), place < 0);
    let scaled = if fraction { x * scale } else { x / scale };
    let near = scaled.round();
    // A product a few units in the last place off a whole number (1e-6 ·
    // 1e8 = 100.00000000000001) is that number, or the rounding would add
    // a whole unit.
    let whole = if (scaled - near).abs() <= 8.0 * f64::EPSILON * scaled.abs().max(1.0) {
        near
    } else if up {
        scaled.ceil()
    } else {
        scaled.floor()
    };
    let rounded = if fraction { whole / scale } else { whole * scale };
    // No negative zero: it would be written "-0.0".
    if rounded == 0.0 {
        0.0
    } else {
        rounded
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn number(expect: f64, abs_tol: Option<f64>, rel_tol: Option<f64>) -> Comparison {
        Comparison::Number { expect, abs_tol, rel_tol }
    }

    fn tolerance(abs_tol: Option<f64>, rel_tol: Option<f64>) -> Option<Proposal> {
        Some(Proposal::Tolerance { abs_tol, rel_tol })
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
    fn an_exact_check_gets_a_tolerance_that_covers_the_interval() {
        let values = [1.0, 2.0, 3.0, 4.0];
        let (mean, half) = prediction_interval(&values).unwrap();
        let Some(Proposal::Tolerance { abs_tol: Some(tol), rel_tol: None }) =
            propose(&number(2.0, None, None), &values, false)
        else {
            panic!()
        };
        let needed = mean + half - 2.0;
        assert!(tol >= needed && tol < needed * 1.01, "{tol} vs {needed}");
    }

    #[test]
    fn zero_spread_gives_the_relative_floor() {
        let exact = number(0.5, None, None);
        assert_eq!(propose(&exact, &[0.5, 0.5, 0.5], false), tolerance(None, Some(REL_FLOOR)));
        assert_eq!(propose(&Comparison::Equals("x".into()), &[1.0, 2.0], false), None);
        assert_eq!(propose(&exact, &[0.5], false), None);
    }

    #[test]
    fn a_tiny_spread_is_floored_as_no_spread_is() {
        // Roundoff-level spread around 0.3: not an abs_tol of 3e-16.
        let values = [0.3, 0.30000000000000004, 0.29999999999999993, 0.3];
        assert_eq!(propose(&number(0.3, None, None), &values, false), tolerance(None, Some(REL_FLOOR)));
        // With an author's abs_tol, its kind stays, at the floor.
        assert_eq!(
            propose(&number(0.3, Some(1e-16), None), &values, false),
            tolerance(Some(round_up(0.3 * REL_FLOOR)), None)
        );
        // Around zero the floor is absolute.
        let noise = [1e-17, -2e-17, 0.0, 3e-17];
        assert_eq!(propose(&number(0.0, None, None), &noise, false), tolerance(Some(ZERO_ABS_FLOOR), None));
        let Some(Proposal::Range(lo, hi)) =
            propose(&Comparison::Range { lo: 0.0, hi: 0.0 }, &[0.0, 0.0], false)
        else {
            panic!()
        };
        assert_eq!((lo, hi), (-ZERO_ABS_FLOOR, ZERO_ABS_FLOOR));
    }

    #[test]
    fn an_authors_tolerance_is_never_narrowed_unless_asked() {
        let values = [0.123456, 0.123457, 0.123456, 0.123457];
        let deliberate = number(0.123456, None, Some(1e-4));
        assert_eq!(propose(&deliberate, &values, false), Some(Proposal::Keep));
        let Some(Proposal::Tolerance { abs_tol: None, rel_tol: Some(r) }) =
            propose(&deliberate, &values, true)
        else {
            panic!()
        };
        assert!((REL_FLOOR..1e-4).contains(&r), "{r}");
        // Both given, the one that decides widens and the other stays.
        let both = number(10.0, Some(1e-3), Some(1e-6));
        let wide = [10.0, 10.01, 9.99, 10.0];
        let Some(Proposal::Tolerance { abs_tol: Some(a), rel_tol: Some(r) }) = propose(&both, &wide, false)
        else {
            panic!()
        };
        assert!(a > 1e-3 && r == 1e-6, "{a} {r}");
        // Tightening drops the other, which max() would let undo it.
        let Some(Proposal::Tolerance { abs_tol: Some(_), rel_tol: None }) = propose(&both, &wide, true)
        else {
            panic!()
        };
    }

    #[test]
    fn an_authors_range_is_kept_unless_widening_is_needed() {
        let analytic = Comparison::Range { lo: 3.0, hi: 3.3 };
        assert_eq!(propose(&analytic, &[3.12, 3.13, 3.12, 3.13], false), Some(Proposal::Keep));
        // Only the side the values cross moves.
        let Some(Proposal::Range(lo, hi)) = propose(&analytic, &[3.25, 3.29, 3.27, 3.28], false) else {
            panic!()
        };
        assert_eq!(lo, 3.0);
        assert!(hi > 3.3 && hi < 3.4, "{hi}");
        // A bound the values sit on exactly holds: the floor does not move it.
        let fraction = Comparison::Range { lo: 0.0, hi: 0.01 };
        assert_eq!(propose(&fraction, &[0.0, 0.0], false), Some(Proposal::Keep));
        // Tightened, both sides hold the interval, rounded outward.
        let values = [2.0001229, 2.0001231, 2.000123, 2.000123];
        let (mean, half) = prediction_interval(&values).unwrap();
        let Some(Proposal::Range(lo, hi)) = propose(&analytic, &values, true) else { panic!() };
        let pad = half.max(REL_FLOOR * mean);
        assert!(lo <= mean - pad && hi >= mean + pad, "[{lo}, {hi}]");
        assert!(hi - lo < 4.0 * pad, "[{lo}, {hi}]");
    }

    #[test]
    fn a_proposal_equal_to_what_is_written_keeps_it() {
        let floored = number(0.5, None, Some(REL_FLOOR));
        assert_eq!(propose(&floored, &[0.5, 0.5], true), Some(Proposal::Keep));
    }

    #[test]
    fn rounding_is_outward_and_prints_short() {
        assert_eq!(round_up(0.00015234), 0.000153);
        assert_eq!(round_up(1e-6), 1e-6);
        assert_eq!(round_up(1234.5), 1240.0);
        assert_eq!(round_at(2.00012345, -7, false), 2.0001234);
        assert_eq!(round_at(-0.04, -1, true), 0.0);
        assert!(round_at(-0.04, -1, true).is_sign_positive());
        assert_eq!(format!("{}", round_up(0.00015234)), "0.000153");
    }

    #[test]
    fn t_quantiles_fall_with_degrees_of_freedom() {
        assert_eq!(t_975(1), 12.706);
        assert_eq!(t_975(30), 2.042);
        assert!(t_975(1000) < t_975(31));
        assert!(t_975(0).is_infinite());
    }
}
