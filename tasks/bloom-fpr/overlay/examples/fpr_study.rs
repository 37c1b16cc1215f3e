//! False-positive rate of `bloomfilter` 1.0 filters: measured vs. theory.
//!
//!     cargo run --release --example fpr_study -- --out results/fpr.csv
//!
//! Two series (Table 1 of the report):
//!
//! * `bpk`: filters of m = bits_per_key * n bits, built with
//!   `Bloom::new_with_seed` (the crate picks k = ceil(m/n * ln 2));
//! * `target`: filters sized by the crate for a target rate p with
//!   `Bloom::new_for_fp_rate_with_seed`.
//!
//! n keys are inserted, then `queries` keys that were never inserted are
//! looked up; every positive answer is a false positive.  Keys are u64 from
//! SplitMix64 (a bijection of its counter, so inserted and queried keys are
//! distinct by construction); the SipHash keys come from the seed.  The
//! counts are therefore exactly reproducible.

use bloomfilter::Bloom;
use std::env;
use std::fs;
use std::io::Write;
use std::path::Path;
use std::process;

struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

struct Args {
    n: usize,
    queries: usize,
    seed: u64,
    bits_per_key: Vec<u64>,
    targets: Vec<f64>,
    out: Option<String>,
}

fn usage() -> ! {
    eprintln!(
        "usage: fpr_study [--n N] [--queries Q] [--seed S] [--bits-per-key 4,8,..] \
         [--targets 0.01,..] [--out FILE]"
    );
    process::exit(2)
}

fn parse_args() -> Args {
    let mut a = Args {
        n: 100_000,
        queries: 1_000_000,
        seed: 2022,
        bits_per_key: vec![4, 6, 8, 10, 12, 16, 20],
        targets: vec![0.1, 0.01, 0.001, 0.0001],
        out: None,
    };
    let argv: Vec<String> = env::args().skip(1).collect();
    let mut i = 0;
    while i < argv.len() {
        let val = || argv.get(i + 1).cloned().unwrap_or_else(|| usage());
        match argv[i].as_str() {
            "--n" => a.n = val().parse().unwrap_or_else(|_| usage()),
            "--queries" => a.queries = val().parse().unwrap_or_else(|_| usage()),
            "--seed" => a.seed = val().parse().unwrap_or_else(|_| usage()),
            "--bits-per-key" => {
                a.bits_per_key = val()
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(|s| s.trim().parse().unwrap_or_else(|_| usage()))
                    .collect()
            }
            "--targets" => {
                a.targets = val()
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(|s| s.trim().parse().unwrap_or_else(|_| usage()))
                    .collect()
            }
            "--out" => a.out = Some(val()),
            _ => usage(),
        }
        i += 2;
    }
    if a.n == 0 || a.queries == 0 {
        usage();
    }
    a
}

fn sip_seed(seed: u64) -> [u8; 32] {
    let mut r = SplitMix64(seed ^ 0x5151_5151_5151_5151);
    let mut s = [0u8; 32];
    for chunk in s.chunks_mut(8) {
        chunk.copy_from_slice(&r.next().to_le_bytes());
    }
    s
}

/// Fills the filter with the n member keys, probes `queries` non-members and
/// returns the number of false positives.
fn measure(bloom: &mut Bloom<u64>, n: usize, queries: usize, seed: u64) -> u64 {
    let mut keys = SplitMix64(seed);
    for _ in 0..n {
        let k = keys.next();
        bloom.set(&k);
    }
    let mut fp = 0u64;
    for _ in 0..queries {
        let k = keys.next();
        if bloom.check(&k) {
            fp += 1;
        }
    }
    fp
}

fn theory(m: u64, k: u32, n: usize) -> f64 {
    let x = -(k as f64) * (n as f64) / (m as f64);
    (1.0 - x.exp()).powi(k as i32)
}

fn main() {
    let a = parse_args();
    let seed = sip_seed(a.seed);
    let mut rows = vec![String::from(
        "series,param,n,m_bits,k,queries,false_positives,fpr,fpr_theory,bits_set",
    )];

    for &bpk in &a.bits_per_key {
        let bytes = ((bpk * a.n as u64) + 7) / 8;
        let mut b: Bloom<u64> = Bloom::new_with_seed(bytes as usize, a.n, &seed);
        let fp = measure(&mut b, a.n, a.queries, a.seed);
        rows.push(row("bpk", &bpk.to_string(), &a, &b, fp));
    }
    for &p in &a.targets {
        let mut b: Bloom<u64> = Bloom::new_for_fp_rate_with_seed(a.n, p, &seed);
        let fp = measure(&mut b, a.n, a.queries, a.seed);
        rows.push(row("target", &p.to_string(), &a, &b, fp));
    }

    let text = rows.join("\n") + "\n";
    match &a.out {
        Some(path) => {
            if let Some(dir) = Path::new(path).parent() {
                if !dir.as_os_str().is_empty() {
                    fs::create_dir_all(dir).expect("cannot create output directory");
                }
            }
            fs::write(path, &text).expect("cannot write output");
            eprintln!("wrote {} ({} rows)", path, rows.len() - 1);
        }
        None => {
            std::io::stdout().write_all(text.as_bytes()).unwrap();
        }
    }
}

fn row(series: &str, param: &str, a: &Args, b: &Bloom<u64>, fp: u64) -> String {
    let m = b.number_of_bits();
    let k = b.number_of_hash_functions();
    let set = b.bit_vec().iter().filter(|x| *x).count();
    format!(
        "{},{},{},{},{},{},{},{:.6},{:.6},{}",
        series,
        param,
        a.n,
        m,
        k,
        a.queries,
        fp,
        fp as f64 / a.queries as f64,
        theory(m, k, a.n),
        set
    )
}
