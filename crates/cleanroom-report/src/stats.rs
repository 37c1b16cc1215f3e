//! The statistics of a report: pass rates with Wilson intervals, pass@k and
//! pass^k over repeated trials, the spread of pass rates across tasks, and
//! the paired comparison of two agents on the same tasks.
//!
//! Written by hand (no statistics crate): each is a few lines of closed
//! form, and the crates that have them pull in far more than they save.
//!
//! Conventions: 95% intervals (z = 1.959964); a "trial" here is a judged
//! trial, passed or failed. Infra errors and skipped trials never reach
//! these functions: the reports count them apart.

/// The two-sided 97.5% quantile of the standard normal distribution.
pub const Z95: f64 = 1.959_963_984_540_054;

/// A closed interval of proportions (or of differences of proportions).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Interval {
    pub lo: f64,
    pub hi: f64,
}

/// The Wilson score interval (95%) for `k` successes in `n` trials; none
/// when `n` is 0. Unlike the Wald interval it stays inside [0, 1] and does
/// not collapse to a point at 0/n or n/n, which matters for pass rates of
/// small task sets: 0 of 7 still allows a rate of up to 35%.
pub fn wilson(k: u64, n: u64) -> Option<Interval> {
    wilson_z(k, n, Z95)
}

fn wilson_z(k: u64, n: u64, z: f64) -> Option<Interval> {
    if n == 0 || k > n {
        return None;
    }
    let n = n as f64;
    let p = k as f64 / n;
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denom;
    let half = z / denom * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    Some(Interval { lo: (center - half).max(0.0), hi: (center + half).min(1.0) })
}

/// The unbiased estimator of pass@k (Chen et al. 2021) for one task with
/// `n` trials of which `c` passed: the chance that at least one of k trials
/// drawn without replacement passed, `1 - C(n-c, k) / C(n, k)`, computed as
/// `1 - prod_{i=n-c+1..=n} (1 - k/i)` so that no binomial coefficient is
/// formed. None when `k` is 0 or exceeds `n`.
pub fn pass_at_k(n: u64, c: u64, k: u64) -> Option<f64> {
    if k == 0 || k > n || c > n {
        return None;
    }
    if n - c < k {
        return Some(1.0);
    }
    let mut all_fail = 1.0;
    for i in (n - c + 1)..=n {
        all_fail *= 1.0 - k as f64 / i as f64;
    }
    Some(1.0 - all_fail)
}

/// pass^k for one task: the chance that k trials drawn without replacement
/// from its `n` all passed, `C(c, k) / C(n, k) = prod_{i=0..k} (c-i)/(n-i)`.
/// None when `k` is 0 or exceeds `n`.
pub fn pass_hat_k(n: u64, c: u64, k: u64) -> Option<f64> {
    if k == 0 || k > n || c > n {
        return None;
    }
    if c < k {
        return Some(0.0);
    }
    let mut all_pass = 1.0;
    for i in 0..k {
        all_pass *= (c - i) as f64 / (n - i) as f64;
    }
    Some(all_pass)
}

/// One task's judged trials: `n` trials, `c` of them passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskTrials {
    pub n: u64,
    pub c: u64,
}

/// An estimate averaged over tasks, and how many tasks had too few judged
/// trials to take part.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct TaskAverage {
    pub k: u64,
    /// None when no task had at least k judged trials.
    pub value: Option<f64>,
    /// Tasks with at least k judged trials.
    pub tasks: usize,
    /// Tasks left out: fewer than k judged trials.
    pub excluded: usize,
}

/// pass@k averaged over the tasks that have at least k judged trials.
pub fn mean_pass_at_k(tasks: &[TaskTrials], k: u64) -> TaskAverage {
    average(tasks, k, pass_at_k)
}

/// pass^k averaged over the tasks that have at least k judged trials.
pub fn mean_pass_hat_k(tasks: &[TaskTrials], k: u64) -> TaskAverage {
    average(tasks, k, pass_hat_k)
}

fn average(tasks: &[TaskTrials], k: u64, f: fn(u64, u64, u64) -> Option<f64>) -> TaskAverage {
    let values: Vec<f64> = tasks.iter().filter_map(|t| f(t.n, t.c, k)).collect();
    let value = (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64);
    TaskAverage { k, value, tasks: values.len(), excluded: tasks.len() - values.len() }
}

/// How much the pass rate varies from task to task, and whether repeated
/// trials of one task agree.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Spread {
    /// Tasks with at least one judged trial.
    pub tasks: usize,
    /// Every judged trial passed.
    pub always: usize,
    /// No judged trial passed.
    pub never: usize,
    /// Some passed, some failed: the verdict of one trial is a coin flip.
    pub mixed: usize,
    /// The mean of the per-task pass rates (each task weighs the same,
    /// however many trials it had).
    pub mean_rate: Option<f64>,
    /// The standard deviation (n - 1) of the per-task pass rates.
    pub sd_rate: Option<f64>,
}

pub fn spread(tasks: &[TaskTrials]) -> Spread {
    let rates: Vec<f64> = tasks.iter().filter(|t| t.n > 0).map(|t| t.c as f64 / t.n as f64).collect();
    let judged = tasks.iter().filter(|t| t.n > 0);
    let always = judged.clone().filter(|t| t.c == t.n).count();
    let never = judged.clone().filter(|t| t.c == 0).count();
    let mixed = judged.count() - always - never;
    let mean_rate = (!rates.is_empty()).then(|| rates.iter().sum::<f64>() / rates.len() as f64);
    let sd_rate = mean_rate
        .filter(|_| rates.len() > 1)
        .map(|m| (rates.iter().map(|r| (r - m).powi(2)).sum::<f64>() / (rates.len() - 1) as f64).sqrt());
    Spread { tasks: rates.len(), always, never, mixed, mean_rate, sd_rate }
}

/// The 2×2 table of two agents on the same tasks, one verdict per task and
/// agent: `both` passed, `only_a`, `only_b`, `neither`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Paired {
    pub both: u64,
    pub only_a: u64,
    pub only_b: u64,
    pub neither: u64,
}

/// A paired comparison: A's pass rate minus B's on the tasks both ran.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Comparison {
    pub table: Paired,
    /// Tasks in the table.
    pub n: u64,
    pub rate_a: f64,
    pub rate_b: f64,
    /// rate_a - rate_b = (only_a - only_b) / n.
    pub difference: f64,
    /// Newcombe's interval (95%) for the paired difference.
    pub interval: Interval,
    /// Exact McNemar test, two-sided.
    pub p_value: f64,
}

impl Paired {
    pub fn n(&self) -> u64 {
        self.both + self.only_a + self.only_b + self.neither
    }

    /// None when the table is empty.
    pub fn compare(&self) -> Option<Comparison> {
        let n = self.n();
        if n == 0 {
            return None;
        }
        let nf = n as f64;
        let rate_a = (self.both + self.only_a) as f64 / nf;
        let rate_b = (self.both + self.only_b) as f64 / nf;
        Some(Comparison {
            table: *self,
            n,
            rate_a,
            rate_b,
            difference: rate_a - rate_b,
            interval: newcombe_paired(self)?,
            p_value: mcnemar_exact(self.only_a, self.only_b),
        })
    }
}

/// Newcombe's hybrid score interval for the difference of paired
/// proportions (Newcombe 1998, method 10): the Wilson intervals of the two
/// marginal rates, combined by "square and add" with a correction for the
/// correlation of the pairs, phi, whose numerator `ad - bc` is shrunk by
/// n/2 towards 0 when positive (the continuity correction of that method).
/// Chosen over the Wald interval on paired differences because that one
/// collapses to a point when no pair is discordant and overshoots [-1, 1]
/// on the small task sets that benchmarks have.
pub fn newcombe_paired(t: &Paired) -> Option<Interval> {
    let n = t.n();
    if n == 0 {
        return None;
    }
    let nf = n as f64;
    let (a, b, c, d) = (t.both as f64, t.only_a as f64, t.only_b as f64, t.neither as f64);
    let p1 = (a + b) / nf;
    let p2 = (a + c) / nf;
    let w1 = wilson(t.both + t.only_a, n)?;
    let w2 = wilson(t.both + t.only_b, n)?;
    let margins = (a + b) * (c + d) * (a + c) * (b + d);
    let phi = if margins == 0.0 {
        0.0
    } else {
        let cross = a * d - b * c;
        let corrected = if cross > nf / 2.0 {
            cross - nf / 2.0
        } else if cross >= 0.0 {
            0.0
        } else {
            cross
        };
        corrected / margins.sqrt()
    };
    let delta = p1 - p2;
    let (dl1, du1) = (p1 - w1.lo, w1.hi - p1);
    let (dl2, du2) = (p2 - w2.lo, w2.hi - p2);
    let lo = delta - (dl1 * dl1 - 2.0 * phi * dl1 * du2 + du2 * du2).max(0.0).sqrt();
    let hi = delta + (du1 * du1 - 2.0 * phi * du1 * dl2 + dl2 * dl2).max(0.0).sqrt();
    Some(Interval { lo: lo.max(-1.0), hi: hi.min(1.0) })
}

/// The exact McNemar test: under the null hypothesis each of the `b + c`
/// discordant pairs goes either way with probability 1/2, so the two-sided
/// p-value is `min(1, 2 * P(X <= min(b, c)))` with `X ~ Binomial(b + c,
/// 1/2)`. 1 when there is no discordant pair. Summed in log space, so that
/// thousands of pairs neither overflow nor underflow.
pub fn mcnemar_exact(b: u64, c: u64) -> f64 {
    let m = b + c;
    if m == 0 {
        return 1.0;
    }
    let low = b.min(c);
    let ln_half_m = m as f64 * std::f64::consts::LN_2;
    let mut ln_choose = 0.0; // ln C(m, 0)
    let mut tail = 0.0;
    for i in 0..=low {
        if i > 0 {
            ln_choose += ((m - i + 1) as f64).ln() - (i as f64).ln();
        }
        tail += (ln_choose - ln_half_m).exp();
    }
    (2.0 * tail).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[track_caller]
    fn assert_interval(i: Interval, lo: f64, hi: f64) {
        assert!(close(i.lo, lo, 5e-5) && close(i.hi, hi, 5e-5), "{i:?} != [{lo}, {hi}]");
    }

    #[test]
    fn wilson_against_hand_values() {
        // 5/10: p = .5, z² = 3.84146, z²/n = .384146, denominator 1.384146;
        // centre (.5 + .192073)/1.384146 = .5; half-width
        // 1.959964/1.384146 * sqrt(.025 + .0096037) = 1.416009 * .186021
        // = .263408 -> [.236592, .763408].
        assert_interval(wilson(5, 10).unwrap(), 0.2366, 0.7634);
        // 0/7: centre (0 + 3.84146/14)/(1 + 3.84146/7) = .274390/1.548780
        // = .177165; half = 1.959964/1.548780 * sqrt(3.84146/196) = 1.265488
        // * .139998 = .177165 -> [0, .354330].
        assert_interval(wilson(0, 7).unwrap(), 0.0, 0.35433);
        // 7/7 mirrors 0/7.
        assert_interval(wilson(7, 7).unwrap(), 0.64567, 1.0);
        // 26/51 (DeployBench's best, 51.0%): p = .509804, z²/n = .075323;
        // centre (.509804 + .037662)/1.075323 = .509122; half = 1.959964/
        // 1.075323 * sqrt(.509804*.490196/51 + 3.84146/10404) = 1.822674 *
        // sqrt(.0049000 + .00036923) = 1.822674 * .072590 = .132308
        // -> [.376814, .641430].
        assert_interval(wilson(26, 51).unwrap(), 0.37681, 0.64143);
        assert_eq!(wilson(0, 0), None);
    }

    #[test]
    fn pass_at_k_against_hand_values() {
        // n=5, c=2, k=2: 1 - C(3,2)/C(5,2) = 1 - 3/10 = 0.7.
        assert!(close(pass_at_k(5, 2, 2).unwrap(), 0.7, 1e-12));
        // n=10, c=3, k=5: 1 - C(7,5)/C(10,5) = 1 - 21/252 = 0.916667.
        assert!(close(pass_at_k(10, 3, 5).unwrap(), 1.0 - 21.0 / 252.0, 1e-12));
        // k = 1 is the plain rate c/n.
        assert!(close(pass_at_k(4, 1, 1).unwrap(), 0.25, 1e-12));
        // n - c < k: every draw of k holds a pass.
        assert_eq!(pass_at_k(3, 2, 2), Some(1.0));
        assert_eq!(pass_at_k(3, 0, 3), Some(0.0));
        assert_eq!(pass_at_k(2, 1, 3), None);
        assert_eq!(pass_at_k(2, 1, 0), None);
        // Large n stays finite: n=1000, c=1, k=10 is 10/1000.
        assert!(close(pass_at_k(1000, 1, 10).unwrap(), 0.01, 1e-12));
    }

    #[test]
    fn pass_hat_k_against_hand_values() {
        // n=5, c=2, k=2: C(2,2)/C(5,2) = 1/10.
        assert!(close(pass_hat_k(5, 2, 2).unwrap(), 0.1, 1e-12));
        // n=10, c=7, k=3: C(7,3)/C(10,3) = 35/120.
        assert!(close(pass_hat_k(10, 7, 3).unwrap(), 35.0 / 120.0, 1e-12));
        assert_eq!(pass_hat_k(5, 1, 2), Some(0.0));
        assert_eq!(pass_hat_k(5, 5, 5), Some(1.0));
        assert_eq!(pass_hat_k(1, 1, 2), None);
    }

    #[test]
    fn averages_over_tasks_leave_out_short_ones() {
        let tasks = [TaskTrials { n: 5, c: 2 }, TaskTrials { n: 2, c: 0 }, TaskTrials { n: 1, c: 1 }];
        // k=2: (0.7 + 0)/2; the task with one trial is left out.
        let at2 = mean_pass_at_k(&tasks, 2);
        assert!(close(at2.value.unwrap(), 0.35, 1e-12));
        assert_eq!((at2.tasks, at2.excluded), (2, 1));
        // pass^2: (0.1 + 0)/2.
        assert!(close(mean_pass_hat_k(&tasks, 2).value.unwrap(), 0.05, 1e-12));
        // k=1: (0.4 + 0 + 1)/3.
        assert!(close(mean_pass_at_k(&tasks, 1).value.unwrap(), 1.4 / 3.0, 1e-12));
        assert_eq!(mean_pass_at_k(&tasks, 6).value, None);
    }

    #[test]
    fn spread_counts_consistent_and_mixed_tasks() {
        let tasks = [
            TaskTrials { n: 2, c: 2 },
            TaskTrials { n: 2, c: 0 },
            TaskTrials { n: 4, c: 1 },
            TaskTrials { n: 0, c: 0 },
        ];
        let s = spread(&tasks);
        assert_eq!((s.tasks, s.always, s.never, s.mixed), (3, 1, 1, 1));
        // Rates 1, 0, .25: mean .416667; squared deviations .340278,
        // .173611, .027778 sum .541667, / 2 = .270833, sqrt = .520416.
        assert!(close(s.mean_rate.unwrap(), 1.25 / 3.0, 1e-9));
        assert!(close(s.sd_rate.unwrap(), 0.520416, 1e-6));
        assert_eq!(spread(&[TaskTrials { n: 3, c: 1 }]).sd_rate, None);
    }

    #[test]
    fn mcnemar_against_hand_values() {
        // b=8, c=2: m=10, P(X<=2) = (1 + 10 + 45)/1024 = .0546875, x2.
        assert!(close(mcnemar_exact(8, 2), 0.109375, 1e-12));
        assert!(close(mcnemar_exact(2, 8), 0.109375, 1e-12));
        // b=5, c=0: 2 * 1/32.
        assert!(close(mcnemar_exact(5, 0), 0.0625, 1e-12));
        // Balanced: capped at 1.
        assert_eq!(mcnemar_exact(3, 3), 1.0);
        assert_eq!(mcnemar_exact(0, 0), 1.0);
        // Thousands of pairs: 2 * P(X <= 450) for X ~ Bin(1000, .5); the
        // normal approximation with continuity correction gives
        // 2 * Phi((450.5 - 500)/15.8114) = 2 * Phi(-3.1306) = .001745;
        // the exact value (.001731 by summing the terms) is within 1% of it.
        let p = mcnemar_exact(550, 450);
        assert!(close(p, 0.0017305, 2e-7), "{p}");
    }

    #[test]
    fn newcombe_against_hand_values() {
        // a=59 (both), b=6 (only A), c=16 (only B), d=80, n=161.
        // p1 = 65/161 = .403727, p2 = 75/161 = .465839, delta = -.062112.
        // Wilson 65/161 = [.331037, .480904]; 75/161 = [.390481, .542789].
        // ad - bc = 4720 - 96 = 4624 > n/2, corrected 4543.5; margins
        // 65*96*75*86 = 40248000, sqrt 6344.131; phi = .716174.
        // lower: dl1 = p1 - .331037 = .072690, du2 = .542789 - p2 = .076950:
        //   .005284 + .005921 - 2*.716174*.072690*.076950 (= .008012)
        //   = .003193, sqrt .056510 -> -.118621;
        // upper: du1 = .077177, dl2 = .075358:
        //   .005956 + .005679 - .008330 = .003305, sqrt .057487 -> -.004625.
        let t = Paired { both: 59, only_a: 6, only_b: 16, neither: 80 };
        let cmp = t.compare().unwrap();
        assert!(close(cmp.difference, -10.0 / 161.0, 1e-12));
        assert_interval(cmp.interval, -0.11862, -0.00463);

        // No discordant pair: the difference is 0 and the interval is not
        // a point. a=3, d=7, n=10: p1 = p2 = .3, Wilson [.107791, .603222];
        // ad = 21 > 5, phi = 16/sqrt(3*7*3*7) = 16/21 = .761905;
        // dl = .192209, du = .303222:
        //   .036944 + .091944 - 2*.761905*.192209*.303222 (= .088811)
        //   = .040077, sqrt .200193.
        let cmp = Paired { both: 3, only_a: 0, only_b: 0, neither: 7 }.compare().unwrap();
        assert_eq!(cmp.difference, 0.0);
        assert_eq!(cmp.p_value, 1.0);
        assert_interval(cmp.interval, -0.20019, 0.20019);

        // Everything one way: a=0, b=5, c=0, d=0: p1 = 1, p2 = 0, a margin
        // is zero so phi = 0. Wilson 5/5 = [.565518, 1], 0/5 = [0, .434482]:
        // lower = 1 - sqrt(.434482² + .434482²) = 1 - .614451 = .385549.
        let cmp = Paired { both: 0, only_a: 5, only_b: 0, neither: 0 }.compare().unwrap();
        assert_interval(cmp.interval, 0.38555, 1.0);
        assert!(close(cmp.p_value, 0.0625, 1e-12));

        assert_eq!(Paired::default().compare(), None);
    }
}
