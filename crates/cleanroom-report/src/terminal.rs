//! Plain text for a terminal: one progress line per finished trial and a
//! table of the run at the end. Everything that came from a task, an agent
//! SPEC or an environment goes through `escape_terminal`.

use cleanroom_store::{Counts, FailureClass, Outcome, Summary, TrialRecord};

use crate::class_row::ClassRow;
use crate::escape::escape_terminal as esc;
use crate::format::{duration, plural};
use crate::model::SUSPECTED;

/// Longest first line of an infra error shown on a progress line; the rest
/// is in result.json.
const ERROR_WIDTH: usize = 160;

/// One line for a finished trial, e.g. `PASS  sobol-seq  oracle #1  12.3s`.
pub fn trial_line(record: &TrialRecord) -> String {
    let suspected = record.negative_control && record.outcome == Outcome::Passed;
    let label = match record.outcome {
        _ if suspected => "SUSPECT",
        Outcome::Passed => "PASS",
        Outcome::Failed => "FAIL",
        Outcome::InfraError => "ERROR",
        Outcome::Skipped => "SKIP",
    };
    let mut line = format!("{label:<5} {}  {} #{}", esc(&record.task), esc(&record.agent_id), record.trial);
    if record.attempt > 1 {
        line += &format!(" (attempt {})", record.attempt);
    }
    let detail = match record.outcome {
        _ if suspected => Some(SUSPECTED.to_string()),
        Outcome::Failed if record.negative_control => {
            Some("negative control: failed, as it should".to_string())
        }
        Outcome::Passed => None,
        Outcome::Failed => Some(format!("{} (stage {})", ClassRow::of(record.class).as_str(), record.stage)),
        Outcome::InfraError => Some(match record.error.as_deref().and_then(|e| e.lines().next()) {
            Some(first) => format!("infra_error: {}", esc(&shorten(first, ERROR_WIDTH))),
            None => "infra_error".to_string(),
        }),
        Outcome::Skipped => Some(esc(record.skip_reason.as_deref().unwrap_or("skipped")).into_owned()),
    };
    if let Some(detail) = detail {
        line += "  ";
        line += &detail;
    }
    // A skipped trial never ran: its time says nothing.
    if record.outcome != Outcome::Skipped {
        line += "  ";
        line += &duration(record.timings.total());
    }
    line
}

/// A table with a row per agent (and a total row when there are several):
/// passed of judged trials with the rate, failures by class, infra errors
/// and skipped trials, which are outside the rate.
pub fn summary_table(summary: &Summary) -> String {
    // The columns of `row`: passed, failed by class, then the trials
    // outside the rate.
    let mut head = vec!["agent", Outcome::Passed.as_str()];
    head.extend(FailureClass::ALL.map(FailureClass::as_str));
    head.extend([Outcome::InfraError.as_str(), Outcome::Skipped.as_str()]);
    let mut rows = vec![head.into_iter().map(String::from).collect()];
    for agent in &summary.agents {
        rows.push(row(&esc(&agent.agent_id), &agent.counts));
    }
    if summary.agents.len() > 1 {
        rows.push(row("total", &summary.totals));
    }
    let mut table = render(&rows);
    let controls = summary.totals.negative_control;
    if controls > 0 {
        table += &format!(
            "negative controls, outside every rate: {controls} trial{}, {} passed\n",
            plural(controls),
            summary.totals.negative_control_passed
        );
    }
    for trial in &summary.suspected {
        table += &format!("SUSPECT {}: {SUSPECTED}\n", esc(trial));
    }
    if !summary.complete {
        table += &format!("recorded {} of {} planned trials\n", summary.totals.recorded, summary.planned);
    }
    table
}

fn row(name: &str, c: &Counts) -> Vec<String> {
    let judged = c.passed + c.failed;
    let rate = c.pass_rate.map_or("-".to_string(), |r| format!("{:.1}%", r * 100.0));
    let mut cells = vec![name.to_string(), format!("{}/{judged} ({rate})", c.passed)];
    cells.extend(FailureClass::ALL.iter().map(|k| c.failed_by_class.get(k).unwrap_or(&0).to_string()));
    cells.push(c.infra_error.to_string());
    cells.push(c.skipped.to_string());
    cells
}

/// Columns two spaces apart, the first left-aligned and the numbers
/// right-aligned. Widths count chars: wide characters (CJK) may misalign
/// a row, which is not worth a Unicode width table.
fn render(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|i| rows.iter().filter_map(|r| r.get(i)).map(|c| c.chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (i, cell) in r.iter().enumerate() {
            let pad = " ".repeat(widths[i] - cell.chars().count());
            if i == 0 {
                line += cell;
                line += &pad;
            } else {
                line += "  ";
                line += &pad;
                line += cell;
            }
        }
        out += line.trim_end();
        out += "\n";
    }
    out
}

fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cleanroom_store::{Timings, VerdictStage};

    fn record(task: &str, agent_id: &str, outcome: Outcome) -> TrialRecord {
        let mut r = TrialRecord::new(task, agent_id, agent_id, 1, 1);
        r.outcome = outcome;
        r
    }

    #[test]
    fn a_line_per_outcome() {
        let mut pass = record("sobol-seq", "oracle", Outcome::Passed);
        pass.timings = Timings { environment: 0.1, agent: 8.0, verify: 4.2 };
        assert_eq!(trial_line(&pass), "PASS  sobol-seq  oracle #1  12.3s");

        let mut fail = record("sobol-seq", "nop", Outcome::Failed);
        fail.class = Some(FailureClass::SelfStop);
        fail.timings.agent = 0.4;
        assert_eq!(trial_line(&fail), "FAIL  sobol-seq  nop #1  self_stop (stage none)  0.4s");
        fail.class = Some(FailureClass::Budget);
        fail.stage = VerdictStage::Build;
        fail.timings.agent = 3725.0;
        assert_eq!(trial_line(&fail), "FAIL  sobol-seq  nop #1  budget (stage build)  1h02m");

        let mut err = record("sobol-seq", "oracle", Outcome::InfraError);
        err.attempt = 2;
        err.error = Some("overlay mount failed: EPERM\ndetails follow".into());
        assert_eq!(
            trial_line(&err),
            "ERROR sobol-seq  oracle #1 (attempt 2)  infra_error: overlay mount failed: EPERM  0.0s"
        );

        let mut skip = record("kernel-fix", "oracle", Outcome::Skipped);
        skip.skip_reason = Some("qemu".into());
        assert_eq!(trial_line(&skip), "SKIP  kernel-fix  oracle #1  qemu");
    }

    #[test]
    fn lines_escape_what_came_from_outside() {
        let mut err = record("evil\x1b[2Jtask", "nop", Outcome::InfraError);
        err.error = Some("\x1b]0;owned\x07boom\r\nsecond line".into());
        let line = trial_line(&err);
        assert!(!line.chars().any(char::is_control), "{line:?}");
        assert_eq!(line, "ERROR evil\\x1b[2Jtask  nop #1  infra_error: \\x1b]0;owned\\x07boom  0.0s");

        let mut skip = record("t", "nop", Outcome::Skipped);
        skip.skip_reason = Some("gpus\x1b[31m".into());
        assert_eq!(trial_line(&skip), "SKIP  t  nop #1  gpus\\x1b[31m");
    }

    #[test]
    fn long_errors_are_cut() {
        let mut err = record("t", "nop", Outcome::InfraError);
        err.error = Some("x".repeat(500));
        let line = trial_line(&err);
        assert!(line.contains(&format!("{}...", "x".repeat(ERROR_WIDTH))), "{line}");
        assert!(line.len() < 220, "{line}");
    }

    #[test]
    fn the_table_aligns_a_row_per_agent_and_a_total() {
        let mut records = Vec::new();
        for (agent, outcome, class) in [
            ("oracle", Outcome::Passed, None),
            ("oracle", Outcome::Passed, None),
            ("oracle", Outcome::InfraError, None),
            ("script-agent-sh", Outcome::Failed, Some(FailureClass::SelfStop)),
            ("script-agent-sh", Outcome::Failed, Some(FailureClass::Tampered)),
            ("script-agent-sh", Outcome::Passed, None),
            ("script-agent-sh", Outcome::Skipped, None),
        ] {
            let mut r = record("t", agent, outcome);
            r.class = class;
            records.push(r);
        }
        let table = summary_table(&Summary::from_records(&records, 8));
        let expected = "\
agent                  passed  self_stop  budget  agent_error  tampered  infra_error  skipped
oracle           2/2 (100.0%)          0       0            0         0            1        0
script-agent-sh   1/3 (33.3%)          1       0            0         1            0        1
total             3/5 (60.0%)          1       0            0         1            1        1
recorded 7 of 8 planned trials
";
        assert_eq!(table, expected, "\n{table}");
    }

    #[test]
    fn the_table_escapes_agent_ids_and_shows_no_rate_without_judged_trials() {
        let r = record("t", "a\x1b[8mb", Outcome::InfraError);
        let table = summary_table(&Summary::from_records(&[r], 1));
        assert!(!table.chars().any(|c| c.is_control() && c != '\n'), "{table:?}");
        assert!(table.contains("a\\x1b[8mb  0/0 (-)"), "{table}");
        assert!(!table.contains("recorded"), "{table}");
    }
}
