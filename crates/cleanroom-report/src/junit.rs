//! JUnit XML for CI systems: one `<testsuite>` per agent, one `<testcase>`
//! per trial. A failed trial is a `<failure>` whose type is its class and
//! whose message names the first failing step or check; an agent error or
//! an infra error is an `<error>` with the error's text; a skipped trial is
//! `<skipped>`. What CI servers' schema (Jenkins xunit's) allows: no
//! `skipped` on `<testsuites>`; each suite with its start (`timestamp`,
//! its first trial's) and `hostname`; property names unique across
//! suites, which some readers need. On a negative control,
//! whose failure is expected and kept out of every rate, a failure is
//! `<skipped>` and a pass is a `<failure>` of type `negative_control_passed`.
//!
//! Written by hand rather than with quick-junit: the document is a few
//! elements, and `escape_xml` (every string, attributes and text) is what
//! keeps it valid, whatever a task or an environment put in a name.

use std::fmt::Write;

use cleanroom_store::{FailureClass, Outcome, TrialRecord};
use cleanroom_verify::StepStatus;

use crate::class_row::ClassRow;
use crate::escape::{escape_xml as x, escape_xml_lines};
use crate::markdown::EVIDENCE_SHOWN;
use crate::model::{Report, SUSPECTED};
use crate::why::first_failure;

pub fn render_junit(report: &Report) -> String {
    let mut suites = String::new();
    let mut all = Totals::default();
    for (a, arm) in report.arms.iter().enumerate() {
        let mut cases = String::new();
        let mut t = Totals::default();
        for trial in report.trials.iter().filter(|t| t.arm == a) {
            let r = &trial.record;
            t.add(r);
            let _ = write!(
                cases,
                "    <testcase name=\"{}\" classname=\"{}\" time=\"{:.3}\"",
                x(&format!("{} #{}", r.task, r.trial)),
                x(&arm.label),
                secs(r.timings.total())
            );
            match r.outcome {
                Outcome::Passed if r.negative_control => {
                    let _ = write!(
                        cases,
                        ">\n      <failure type=\"negative_control_passed\" message=\"{}\"/>\n    </testcase>\n",
                        x(SUSPECTED)
                    );
                }
                Outcome::Failed if r.negative_control => {
                    let _ = write!(
                        cases,
                        ">\n      <skipped message=\"negative control: failed, as no correct deployment can pass it\"/>\n    </testcase>\n"
                    );
                }
                Outcome::Passed => cases.push_str("/>\n"),
                Outcome::Failed if r.class == Some(FailureClass::AgentError) => {
                    let error = r.error.as_deref().unwrap_or("agent error");
                    let _ = write!(
                        cases,
                        ">\n      <error type=\"agent_error\" message=\"{}\">{}</error>\n    </testcase>\n",
                        x(error.lines().next().unwrap_or("agent error")),
                        escape_xml_lines(&format!("{error}\n{}", details(r)))
                    );
                }
                Outcome::Failed => {
                    let message = failure_message(r);
                    let _ = write!(
                        cases,
                        ">\n      <failure type=\"{}\" message=\"{}\">{}</failure>\n    </testcase>\n",
                        ClassRow::of(r.class).as_str(),
                        x(&message),
                        escape_xml_lines(&details(r))
                    );
                }
                Outcome::InfraError => {
                    let first = r.error.as_deref().and_then(|e| e.lines().next()).unwrap_or("infra error");
                    let _ = write!(
                        cases,
                        ">\n      <error type=\"infra_error\" message=\"{}\">{}</error>\n    </testcase>\n",
                        x(first),
                        escape_xml_lines(r.error.as_deref().unwrap_or(""))
                    );
                }
                Outcome::Skipped => {
                    let _ = write!(
                        cases,
                        ">\n      <skipped message=\"{}\"/>\n    </testcase>\n",
                        x(r.skip_reason.as_deref().unwrap_or("skipped"))
                    );
                }
            }
        }
        let started = report.trials.iter().filter(|t| t.arm == a).map(|t| t.record.started_at.as_str()).min();
        let _ = write!(
            suites,
            "  <testsuite name=\"{label}\" {} skipped=\"{}\" timestamp=\"{}\" hostname=\"{}\">\n    <properties>\n      \
             <property name=\"{label}.agent\" value=\"{}\"/>\n      <property name=\"{label}.run_id\" value=\"{}\"/>\n",
            t.attributes(),
            t.skipped,
            x(started.unwrap_or_default()),
            x(&hostname()),
            x(&arm.agent),
            x(&arm.run_id),
            label = x(&arm.label),
        );
        if let Some(model) = &arm.model {
            let _ =
                writeln!(suites, "      <property name=\"{}.model\" value=\"{}\"/>", x(&arm.label), x(model));
        }
        suites.push_str("    </properties>\n");
        suites.push_str(&cases);
        suites.push_str("  </testsuite>\n");
        all.merge(&t);
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"cleanroom\" {}>\n{suites}</testsuites>\n",
        all.attributes()
    )
}

#[derive(Default)]
struct Totals {
    tests: u64,
    failures: u64,
    errors: u64,
    skipped: u64,
    time: f64,
}

impl Totals {
    fn add(&mut self, r: &TrialRecord) {
        self.tests += 1;
        match r.outcome {
            Outcome::Passed if r.negative_control => self.failures += 1,
            Outcome::Failed if r.negative_control => self.skipped += 1,
            Outcome::Passed => {}
            Outcome::Failed if r.class == Some(FailureClass::AgentError) => self.errors += 1,
            Outcome::Failed => self.failures += 1,
            Outcome::InfraError => self.errors += 1,
            Outcome::Skipped => self.skipped += 1,
        }
        self.time += secs(r.timings.total());
    }

    fn merge(&mut self, o: &Totals) {
        self.tests += o.tests;
        self.failures += o.failures;
        self.errors += o.errors;
        self.skipped += o.skipped;
        self.time += o.time;
    }

    /// What both `<testsuites>` and `<testsuite>` may say.
    fn attributes(&self) -> String {
        format!(
            "tests=\"{}\" failures=\"{}\" errors=\"{}\" time=\"{:.3}\"",
            self.tests, self.failures, self.errors, self.time
        )
    }
}

/// The name of the host the report is made on (where a local run ran).
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_default()
}

fn secs(x: f64) -> f64 {
    if x.is_finite() {
        x.max(0.0)
    } else {
        0.0
    }
}

/// `self_stop (stage build): build step make exited 2`; for a tampered
/// trial, the protected files it changed.
fn failure_message(r: &TrialRecord) -> String {
    let head = format!("{} (stage {})", ClassRow::of(r.class).as_str(), r.stage);
    if r.class == Some(FailureClass::Tampered) && !r.tampered.is_empty() {
        return format!("{head}: protected files changed: {}", r.tampered.join(", "));
    }
    match first_failure(r) {
        Some(what) => format!("{head}: {what}"),
        None => head,
    }
}

/// The failure's body: how the agent stopped, every step that did not
/// pass, every failed check, and the tags with their first evidence lines.
fn details(r: &TrialRecord) -> String {
    let mut d = String::new();
    let _ = writeln!(
        d,
        "class: {}\nstage reached: {}\nstop reason: {}\nexit code: {}",
        ClassRow::of(r.class).as_str(),
        r.stage,
        r.stop_reason.map_or("none", |s| s.as_str()),
        r.exit_code.map_or("none".to_string(), |c| c.to_string())
    );
    if let Some(v) = &r.verdict {
        for s in v.steps.iter().filter(|s| s.status != StepStatus::Passed) {
            let status = match s.status {
                StepStatus::Failed => "failed",
                StepStatus::TimedOut => "timed out",
                StepStatus::NotRun => "not run",
                StepStatus::Passed => "passed",
            };
            let code = s.exit_code.map(|c| format!(", exit code {c}")).unwrap_or_default();
            let _ = writeln!(d, "step {} ({}): {status}{code}", s.name, s.stage.as_str());
        }
        for c in v.checks.iter().filter(|c| !c.passed) {
            let _ = writeln!(d, "check {}: expected {}, observed {}", c.name, c.expected, c.observed);
        }
    }
    if !r.tampered.is_empty() {
        let _ = writeln!(d, "protected files changed: {}", r.tampered.join(", "));
    }
    for tag in &r.tags {
        let _ = writeln!(d, "tag {}", tag.name);
        for e in tag.evidence.iter().take(EVIDENCE_SHOWN) {
            let _ = writeln!(d, "  {}:{}: {}", e.file, e.line, e.text);
        }
    }
    d
}
