//! Expected values written rounded: a number of the instruction that a
//! check with a tolerance accepts, and that agrees with the expected value
//! to the digits it is written with ("about 0.1235" for 0.123456 within
//! 1e-3). The agent could write it as its result and pass, so it leaks the
//! answer as surely as the exact value does.

use cleanroom_task::{Comparison, Task};
use cleanroom_verify::within;

/// Fewer written significant digits than this say too little to be a leak
/// ("Table 2", "12 epochs").
const MIN_DIGITS: usize = 3;

/// An `expect` with a tolerance, by its check's name.
#[derive(Debug, Clone)]
pub struct Tolerated {
    pub check: String,
    pub expect: f64,
    pub abs_tol: Option<f64>,
    pub rel_tol: Option<f64>,
}

/// Every check of `task` that compares with `expect` and a tolerance.
pub fn tolerated(task: &Task) -> Vec<Tolerated> {
    task.verify
        .checks
        .iter()
        .filter_map(|check| match check.compare {
            Comparison::Number { expect, abs_tol, rel_tol } if abs_tol.is_some() || rel_tol.is_some() => {
                Some(Tolerated { check: check.name.clone(), expect, abs_tol, rel_tol })
            }
            _ => None,
        })
        .collect()
}

/// The numbers of `tokens` that give away one of `values` rounded, each
/// with the check it passes: `0.1235 (check `x`, expected 0.123456)`.
pub fn rounded_in<'a>(tokens: impl Iterator<Item = &'a str>, values: &[Tolerated]) -> Vec<String> {
    let mut found = Vec::new();
    for token in tokens {
        let Some(written) = Written::parse(token) else { continue };
        if written.digits < MIN_DIGITS {
            continue;
        }
        for v in values {
            let agrees = (written.value - v.expect).abs() <= written.last_place;
            if agrees && within(written.value, v.expect, v.abs_tol, v.rel_tol) {
                let leak = format!("{token} (check `{}`, expected {})", v.check, v.expect);
                if !found.contains(&leak) {
                    found.push(leak);
                }
            }
        }
    }
    found
}

/// A decimal number as written: its value, its significant digits, and the
/// value of one unit in its last significant place.
#[derive(Debug, PartialEq)]
struct Written {
    value: f64,
    digits: usize,
    last_place: f64,
}

impl Written {
    fn parse(token: &str) -> Option<Written> {
        let value = token.parse::<f64>().ok().filter(|v| v.is_finite())?;
        let (mantissa, exponent) = match token.split_once(['e', 'E']) {
            Some((m, e)) => (m, e.parse::<i32>().ok()?),
            None => (token, 0),
        };
        let mantissa = mantissa.trim_start_matches(['+', '-']);
        if mantissa.is_empty() || !mantissa.chars().all(|c| c.is_ascii_digit() || c == '.') {
            return None;
        }
        let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let all: String = format!("{whole}{fraction}");
        let leading = all.trim_start_matches('0');
        // Without a decimal point, trailing zeros are not significant.
        let (digits, place) = if mantissa.contains('.') {
            (leading.len(), exponent - fraction.len() as i32)
        } else {
            let zeros = leading.len() - leading.trim_end_matches('0').len();
            (leading.len() - zeros, exponent + zeros as i32)
        };
        Some(Written { value, digits, last_place: 10f64.powi(place) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(expect: f64, abs_tol: f64) -> Vec<Tolerated> {
        vec![Tolerated { check: "x".into(), expect, abs_tol: Some(abs_tol), rel_tol: None }]
    }

    #[test]
    fn written_numbers_know_their_precision() {
        let w = Written::parse("0.1235").unwrap();
        assert_eq!((w.digits, w.value), (4, 0.1235));
        assert!((w.last_place - 1e-4).abs() < 1e-18);
        assert_eq!(Written::parse("1230").unwrap().digits, 3);
        assert!((Written::parse("1230").unwrap().last_place - 10.0).abs() < 1e-9);
        assert_eq!(Written::parse("2.0").unwrap().digits, 2);
        let e = Written::parse("1.235e-1").unwrap();
        assert_eq!(e.digits, 4);
        assert!((e.last_place - 1e-4).abs() < 1e-18);
        assert_eq!(Written::parse("v1.2"), None);
        assert_eq!(Written::parse("inf"), None);
    }

    #[test]
    fn a_rounded_expected_value_within_the_tolerance_leaks() {
        let values = value(0.123456, 1e-3);
        let leaks = rounded_in(["about", "0.1235"].into_iter(), &values);
        assert_eq!(leaks, ["0.1235 (check `x`, expected 0.123456)"]);
        assert_eq!(rounded_in(["0.123"].into_iter(), &values).len(), 1, "truncated, still within 1e-3");
    }

    #[test]
    fn unrelated_or_too_coarse_numbers_do_not_leak() {
        let values = value(0.123456, 1e-3);
        // Outside the tolerance; within it but not the value rounded; too
        // few digits; plain unrelated numbers.
        for token in ["0.12", "0.1240", "0.1", "1000", "2", "0.5", "3.14159"] {
            assert!(rounded_in([token].into_iter(), &values).is_empty(), "{token}");
        }
        // Within a wide tolerance, a number of few digits still says nothing.
        assert!(rounded_in(["12"].into_iter(), &value(12.3456, 1.0)).is_empty());
    }
}
