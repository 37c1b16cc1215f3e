//! What `tasks check` finds without running anything: expected values of
//! checks.toml that leak into instruction.md, exactly or rounded within the
//! check's tolerance (an error: the agent would read the answer), or into
//! the artifact (a warning: maybe a coincidence), and
//! files of verify/ or solution/ copied into the artifact (an error).

use std::collections::HashMap;
use std::path::Path;

use cleanroom_task::{Comparison, Task};
use sha2::{Digest, Sha256};

use super::rounded;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

#[derive(Debug, Clone)]
pub struct Finding {
    pub severity: Severity,
    pub message: String,
}

/// Files larger than this are not searched for leaked values.
const MAX_SCANNED: u64 = 1 << 20;

/// A value that must not be given away: a number of 4 or more significant
/// digits, or a string of 6 or more characters.
#[derive(Debug, Clone)]
enum Secret {
    Number(f64),
    Text(String),
}

fn secrets(task: &Task) -> Vec<(String, Secret)> {
    let mut out = Vec::new();
    for check in &task.verify.checks {
        let numbers: Vec<f64> = match &check.compare {
            Comparison::Number { expect, .. } => vec![*expect],
            Comparison::Range { lo, hi } => vec![*lo, *hi],
            Comparison::Equals(text) => {
                if text.chars().count() >= 6 {
                    out.push((check.name.clone(), Secret::Text(text.clone())));
                } else if let Ok(n) = text.trim().parse::<f64>() {
                    out.push((check.name.clone(), Secret::Number(n)));
                }
                Vec::new()
            }
            Comparison::Exists => Vec::new(),
        };
        out.extend(
            numbers
                .into_iter()
                .filter(|n| significant_digits(*n) >= 4)
                .map(|n| (check.name.clone(), Secret::Number(n))),
        );
    }
    out.retain(|(_, s)| !matches!(s, Secret::Number(n) if significant_digits(*n) < 4));
    out
}

/// Significant digits of the shortest decimal that round-trips to `x`.
fn significant_digits(x: f64) -> usize {
    if !x.is_finite() || x == 0.0 {
        return 0;
    }
    let text = format!("{:e}", x.abs());
    let mantissa = text.split('e').next().unwrap_or("");
    mantissa.chars().filter(char::is_ascii_digit).collect::<String>().trim_end_matches('0').len()
}

/// Tokens of a text: runs of characters that can make up a number or a word.
fn tokens(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || matches!(c, '.' | '-' | '+' | '_')))
        .map(|t| t.trim_matches(|c: char| c == '.' || c == '-' || c == '+'))
        .filter(|t| !t.is_empty())
}

fn same_number(token: &str, n: f64) -> bool {
    token.parse::<f64>().is_ok_and(|t| t == n || (t - n).abs() <= 1e-12 * n.abs())
}

/// Whether `needle` stands in `text` as a whole token (no letter or digit
/// right before or after it).
fn contains_token(text: &str, needle: &str) -> bool {
    text.match_indices(needle).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + needle.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// The secrets that `text` gives away, each with the name of its check.
fn leaked_in<'a>(text: &str, secrets: &'a [(String, Secret)]) -> Vec<(&'a str, String)> {
    secrets
        .iter()
        .filter(|(_, secret)| match secret {
            Secret::Number(n) => tokens(text).any(|t| same_number(t, *n)),
            Secret::Text(s) => contains_token(text, s),
        })
        .map(|(check, secret)| match secret {
            Secret::Number(n) => (check.as_str(), format!("{n} (check `{check}`)")),
            Secret::Text(s) => (check.as_str(), format!("\"{s}\" (check `{check}`)")),
        })
        .collect()
}

/// Every file under `dir` (no links followed), by path relative to it.
fn files_under(dir: &Path) -> Vec<(String, std::path::PathBuf)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                stack.push(e.path());
            } else if ft.is_file() {
                let rel = e.path().strip_prefix(dir).unwrap_or(&e.path()).display().to_string();
                out.push((rel, e.path()));
            }
        }
    }
    out.sort();
    out
}

fn sha256(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    Some(Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect())
}

/// Lints `task` whose artifact (overlay applied) is staged at `artifact`.
pub fn lint(task: &Task, artifact: &Path) -> Vec<Finding> {
    let mut findings = Vec::new();
    let secrets = secrets(task);
    let exact = leaked_in(&task.instruction, &secrets);
    for (_, leak) in &exact {
        findings.push(Finding {
            severity: Severity::Error,
            message: format!("instruction.md gives away the expected value {leak}"),
        });
    }
    // A check already given away exactly is not told twice.
    let mut tolerated = rounded::tolerated(task);
    tolerated.retain(|t| !exact.iter().any(|(check, _)| *check == t.check));
    for leak in rounded::rounded_in(tokens(&task.instruction), &tolerated) {
        findings.push(Finding {
            severity: Severity::Error,
            message: format!("instruction.md gives away a rounded expected value: {leak}"),
        });
    }
    for (i, m) in task.verify.mutations.iter().enumerate() {
        let problem = match std::fs::read_to_string(artifact.join(&m.file)).map(|t| m.apply(&t)) {
            Ok(Ok(_)) => continue,
            Ok(Err(n)) => format!("holds its text {n} times, not once"),
            Err(e) => format!("cannot be read as text ({e})"),
        };
        findings.push(Finding {
            severity: Severity::Error,
            message: format!("[[mutation]] {} of checks.toml: the artifact's {} {problem}", i + 1, m.file),
        });
    }
    let artifact_files = files_under(artifact);
    for (rel, path) in &artifact_files {
        if std::fs::metadata(path).is_ok_and(|m| m.len() <= MAX_SCANNED) {
            let text = String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).into_owned();
            for (_, leak) in leaked_in(&text, &secrets) {
                findings.push(Finding {
                    severity: Severity::Warning,
                    message: format!("artifact file {rel} contains the expected value {leak}"),
                });
            }
        }
    }
    let mut hidden: HashMap<String, String> = HashMap::new();
    for (kind, dir) in [("verify", task.verify_dir()), ("solution", task.solution_dir())] {
        for (rel, path) in files_under(&dir) {
            // Tiny files (an empty __init__.py, "set -e") say nothing.
            if std::fs::metadata(&path).is_ok_and(|m| m.len() >= 64) {
                if let Some(digest) = sha256(&path) {
                    hidden.insert(digest, format!("{kind}/{rel}"));
                }
            }
        }
    }
    for (rel, path) in &artifact_files {
        let name = Path::new(rel).file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name == "checks.toml" {
            findings.push(Finding {
                severity: Severity::Error,
                message: format!("artifact file {rel} is named like the hidden checks"),
            });
        }
        if let Some(original) = sha256(path).and_then(|d| hidden.get(&d)) {
            findings.push(Finding {
                severity: Severity::Error,
                message: format!("artifact file {rel} is a copy of the hidden {original}"),
            });
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn significant_digits_ignore_leading_and_trailing_zeros() {
        assert_eq!(significant_digits(0.012345), 5);
        assert_eq!(significant_digits(1.23e-4), 3);
        assert_eq!(significant_digits(1000.0), 1);
        assert_eq!(significant_digits(12340.0), 4);
        assert_eq!(significant_digits(-0.9625), 4);
    }

    #[test]
    fn numbers_leak_as_whole_tokens_in_any_notation() {
        let s = vec![("max error".to_string(), Secret::Number(0.012345))];
        assert_eq!(leaked_in("the error was 0.012345.", &s).len(), 1);
        assert_eq!(leaked_in("error: 1.2345e-2", &s).len(), 1);
        assert!(leaked_in("error about 0.0123 or 10.012345", &s).is_empty());
    }

    /// The instruction of a task whose check expects 0.123456 within 1e-3.
    fn instruction_findings(instruction: &str) -> Vec<String> {
        let root = crate::testing::temp_dir("rounded-lint");
        let dir = root.join("t");
        crate::testing::task(&root, "t");
        std::fs::write(dir.join("instruction.md"), instruction).unwrap();
        let checks = "[[step]]\nname = \"s\"\nrun = \"true\"\n\n\
                      [[check]]\nname = \"error\"\nfile = \"e.txt\"\nexpect = 0.123456\nabs_tol = 1e-3\n";
        std::fs::write(dir.join("verify/checks.toml"), checks).unwrap();
        let task = cleanroom_task::load_task(&dir).unwrap();
        lint(&task, &dir.join("artifact")).into_iter().map(|f| f.message).collect()
    }

    #[test]
    fn an_instruction_gives_away_a_rounded_value_once() {
        assert_eq!(
            instruction_findings("The error is about 0.1235 with 1000 samples.\n"),
            ["instruction.md gives away a rounded expected value: 0.1235 (check `error`, expected 0.123456)"]
        );
        assert_eq!(
            instruction_findings("The error is 0.123456, about 0.1235.\n"),
            ["instruction.md gives away the expected value 0.123456 (check `error`)"],
            "the exact value is told, not again rounded"
        );
        assert!(instruction_findings("Run Table 2 with 1000 samples and a step of 0.25.\n").is_empty());
    }

    #[test]
    fn strings_leak_only_as_whole_tokens() {
        let s = vec![("digest".to_string(), Secret::Text("0252ff0a".to_string()))];
        assert_eq!(leaked_in("checksum: 0252ff0a\n", &s).len(), 1);
        assert!(leaked_in("checksum: 0252ff0a99", &s).is_empty());
    }
}
