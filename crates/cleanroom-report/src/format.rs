//! Numbers for people, shared by every format: rates, intervals, times,
//! money and token counts.

use crate::model::Rate;
use crate::stats::Interval;

/// `51.0%`; `-` for none.
pub fn pct(rate: Option<f64>) -> String {
    rate.map_or("-".to_string(), |r| format!("{:.1}%", r * 100.0))
}

/// `[37.7–64.1]`, in percent.
pub fn interval(i: Interval) -> String {
    format!("[{:.1}–{:.1}]", i.lo * 100.0, i.hi * 100.0)
}

/// DeployBench's cell with n and the interval: `26/51 (51.0%) [37.7–64.1]`;
/// `-` without judged trials.
pub fn rate_cell(r: &Rate) -> String {
    match (r.rate, r.interval) {
        (Some(rate), Some(i)) => format!("{}/{} ({}) {}", r.passed, r.n, pct(Some(rate)), interval(i)),
        _ => "-".to_string(),
    }
}

/// A difference of rates in percentage points: `+12.5`, `-3.0`.
pub fn points(d: f64) -> String {
    format!("{:+.1}", d * 100.0)
}

/// `12.3s`, `4m05s`, `2h03m`.
pub fn duration(secs: f64) -> String {
    let secs = if secs.is_finite() { secs.max(0.0) } else { 0.0 };
    if secs < 60.0 {
        format!("{secs:.1}s")
    } else if secs < 3600.0 {
        let s = secs as u64;
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        let m = secs as u64 / 60;
        format!("{}h{:02}m", m / 60, m % 60)
    }
}

/// `$1.23`, `$0.0042` for small amounts.
pub fn usd(x: f64) -> String {
    if x != 0.0 && x.abs() < 0.01 {
        format!("${x:.4}")
    } else {
        format!("${x:.2}")
    }
}

/// `812 B`, `3.4 kB`, `71.2 MB`, `1.3 GB` (powers of 1000).
pub fn bytes(n: u64) -> String {
    let units = [(1e9, "GB"), (1e6, "MB"), (1e3, "kB")];
    match units.iter().find(|(size, _)| n as f64 >= *size) {
        Some((size, unit)) => format!("{:.1} {unit}", n as f64 / size),
        None => format!("{n} B"),
    }
}

/// `1,234,567`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `""` or `"s"`.
pub fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// `3 (25%)`: k and its share of `of`; `0` for none.
pub fn share(k: u64, of: u64) -> String {
    if k == 0 {
        "0".to_string()
    } else {
        format!("{k} ({:.0}%)", k as f64 * 100.0 / of.max(1) as f64)
    }
}

/// A p-value: `0.109`, `<0.001`.
pub fn p_value(p: f64) -> String {
    if p < 0.001 {
        "<0.001".to_string()
    } else {
        format!("{p:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(count(0), "0");
        assert_eq!(count(1234567), "1,234,567");
        assert_eq!(count(100), "100");
        assert_eq!(usd(0.0), "$0.00");
        assert_eq!(usd(0.0042), "$0.0042");
        assert_eq!(usd(12.345), "$12.35");
        assert_eq!(p_value(0.109375), "0.109");
        assert_eq!(p_value(0.0001), "<0.001");
        assert_eq!(points(0.125), "+12.5");
        assert_eq!(duration(3725.0), "1h02m");
        assert_eq!(rate_cell(&Rate::default()), "-");
        assert_eq!(share(0, 0), "0");
        assert_eq!(share(1, 3), "1 (33%)");
    }
}
