//! verify/checks.toml as typed data: the steps of the designated experiment
//! and the checks that judge its outputs.

use serde::{Serialize, Serializer};

#[derive(Debug, Clone, Serialize)]
pub struct VerifySpec {
    pub steps: Vec<Step>,
    pub checks: Vec<Check>,
    /// **[cleanroom]** Secret changes to the artifact's source that the
    /// harness makes before the `mutated` steps (see [`Mutation`]).
    pub mutations: Vec<Mutation>,
}

/// **[cleanroom]** One `[[mutation]]`: in `file` (relative to
/// `artifact.dest`), the text `replace`, which the original holds exactly
/// once, becomes `with`. The harness applies every mutation from outside
/// the environment after the unmutated steps, in a phase of their own; the
/// `mutated` steps then rebuild and rerun with the deployment the agent
/// made, and checks judge the shifted results, which a distribution
/// package, another release or a reimplementation cannot know.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mutation {
    pub file: String,
    pub replace: String,
    pub with: String,
}

impl Mutation {
    /// `text` with the mutation applied; the number of times it holds
    /// `replace` when that is not exactly once (a deployment that rewrote
    /// the file, or a task whose text the artifact lacks).
    pub fn apply(&self, text: &str) -> Result<String, usize> {
        match text.matches(self.replace.as_str()).count() {
            1 => Ok(text.replacen(self.replace.as_str(), &self.with, 1)),
            found => Err(found),
        }
    }
}

/// One `[[step]]`.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    pub name: String,
    pub stage: Stage,
    /// A shell command, run with `bash -lc`.
    pub run: String,
    /// None: what is left of `verify.timeout_sec`.
    pub timeout_sec: Option<u64>,
    /// Globs relative to `artifact.dest`, removed before the step.
    pub clean: Vec<String>,
    /// **[cleanroom]** Runs after the mutations (always after every
    /// unmutated step).
    pub mutated: bool,
}

/// A step's stage; stages never decrease along the steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    Setup,
    Build,
    Run,
}

impl Stage {
    pub const ALL: [Stage; 3] = [Stage::Setup, Stage::Build, Stage::Run];

    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Setup => "setup",
            Stage::Build => "build",
            Stage::Run => "run",
        }
    }

    pub fn parse(s: &str) -> Option<Stage> {
        Stage::ALL.into_iter().find(|x| x.as_str() == s)
    }
}

/// One `[[check]]`.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: String,
    pub file: CheckFile,
    /// None: the whole file.
    pub select: Option<Selector>,
    pub compare: Comparison,
}

/// What a check reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckFile {
    /// Relative to `$CLEANROOM_OUT`; no `..`, not absolute.
    Path(String),
    /// `stdout:<step name>`: the standard output of that step.
    StepStdout(String),
    /// **[cleanroom]** `opened` / `executed` with `step`: whether a file of
    /// the artifact matching the glob was opened or executed during that
    /// step, as the harness saw it from outside the environment. The
    /// comparison is always `Exists` (at least one such file).
    Access(AccessQuery),
}

/// **[cleanroom]** What an access check asks of one step.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct AccessQuery {
    pub kind: AccessKind,
    /// A glob relative to `artifact.dest`.
    pub glob: String,
    pub step: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AccessKind {
    /// Opened in any way: read, mapped as a library, run as a script.
    Opened,
    /// Run with execve (a binary, or a script through its #! line).
    Executed,
}

impl AccessKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AccessKind::Opened => "opened",
            AccessKind::Executed => "executed",
        }
    }
}

/// How a value is selected from the file.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Selector {
    /// An RFC 6901 JSON pointer.
    Json(String),
    /// Multi-line mode; the value is the first capture group of the first
    /// match (validation ensures there is one).
    Regex(#[serde(serialize_with = "serialize_regex")] regex::Regex),
    /// RFC 4180; the first record is the header.
    Csv {
        row: CsvRow,
        /// A header name.
        column: String,
        delimiter: u8,
    },
}

/// Which data record a `csv` selector reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CsvRow {
    /// The N-th data record, 0-based.
    Index(usize),
    /// The first data record whose `column` equals `text`.
    Match { column: String, text: String },
}

/// How the selected value is judged; exactly one per check.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Comparison {
    /// Passes when |observed - expect| <= max(abs_tol, rel_tol * |expect|);
    /// neither tolerance means exact equality.
    Number { expect: f64, abs_tol: Option<f64>, rel_tol: Option<f64> },
    /// lo <= observed <= hi.
    Range { lo: f64, hi: f64 },
    /// The selected string, verbatim.
    Equals(String),
    /// The file exists and is a regular file.
    Exists,
}

impl Comparison {
    /// What the comparison wants, for people (verify.log).
    pub fn expected_text(&self) -> String {
        match self {
            Comparison::Number { expect, abs_tol: None, rel_tol: None } => {
                format!("{} (exact)", fmt_num(*expect))
            }
            Comparison::Number { expect, abs_tol, rel_tol } => {
                let mut tols = Vec::new();
                if let Some(a) = abs_tol {
                    tols.push(format!("abs_tol {}", fmt_num(*a)));
                }
                if let Some(r) = rel_tol {
                    tols.push(format!("rel_tol {}", fmt_num(*r)));
                }
                format!("{} ({})", fmt_num(*expect), tols.join(", "))
            }
            Comparison::Range { lo, hi } => format!("in [{}, {}]", fmt_num(*lo), fmt_num(*hi)),
            Comparison::Equals(text) => text.clone(),
            Comparison::Exists => "a regular file".to_string(),
        }
    }
}

/// A number for people: plain for ordinary magnitudes, with an exponent for
/// tiny or huge ones (Rust's `{}` writes 1e300 with 300 zeros).
fn fmt_num(x: f64) -> String {
    let a = x.abs();
    if a != 0.0 && a.is_finite() && !(1e-3..1e15).contains(&a) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

fn serialize_regex<S: Serializer>(re: &regex::Regex, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(re.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_shown_readably() {
        assert_eq!(fmt_num(1.23e-4), "1.23e-4");
        assert_eq!(fmt_num(0.001), "0.001");
        assert_eq!(fmt_num(1e300), "1e300");
        assert_eq!(fmt_num(0.0), "0");
        assert_eq!(fmt_num(-2.5), "-2.5");
    }
}
