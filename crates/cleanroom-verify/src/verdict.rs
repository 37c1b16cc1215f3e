//! The verdict of the hidden pipeline: how each step and each check went,
//! the stage reached, and whether the trial passed. Serialised as the
//! `verdict` field of result.json (DESIGN.md).

use serde::{Deserialize, Serialize};

use crate::checks::CheckResult;
use crate::task::Stage;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub steps: Vec<StepResult>,
    pub checks: Vec<CheckResult>,
    pub stage: VerdictStage,
    pub passed: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepResult {
    pub name: String,
    #[serde(with = "stage_name")]
    pub stage: Stage,
    /// The exit code (128 + signal when killed by one); none when the step
    /// timed out or did not run.
    pub exit_code: Option<i32>,
    pub seconds: f64,
    pub status: StepStatus,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Passed,
    Failed,
    TimedOut,
    NotRun,
}

/// How far the pipeline got; ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictStage {
    None,
    Setup,
    Build,
    Run,
    Results,
}

impl StepResult {
    /// How the step ended, in a few words: `exited 2`, `timed out`, `did
    /// not run`, `passed`, or `failed` when it has no exit code.
    pub fn ending(&self) -> String {
        match (self.status, self.exit_code) {
            (StepStatus::TimedOut, _) => "timed out".to_string(),
            (StepStatus::NotRun, _) => "did not run".to_string(),
            (StepStatus::Passed, _) => "passed".to_string(),
            (StepStatus::Failed, Some(code)) => format!("exited {code}"),
            (StepStatus::Failed, None) => "failed".to_string(),
        }
    }
}

impl VerdictStage {
    pub const ALL: [VerdictStage; 5] = [
        VerdictStage::None,
        VerdictStage::Setup,
        VerdictStage::Build,
        VerdictStage::Run,
        VerdictStage::Results,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            VerdictStage::None => "none",
            VerdictStage::Setup => "setup",
            VerdictStage::Build => "build",
            VerdictStage::Run => "run",
            VerdictStage::Results => "results",
        }
    }
}

impl std::fmt::Display for VerdictStage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Verdict {
    /// The verdict of these steps and checks: its stage and whether it passed.
    pub fn new(steps: Vec<StepResult>, checks: Vec<CheckResult>) -> Verdict {
        let stage = stage_reached(&steps, &checks);
        let passed = stage == VerdictStage::Results;
        Verdict { steps, checks, stage, passed }
    }
}

/// The highest of setup, build, run, results such that every step of that
/// stage and of the earlier ones passed (results: every step and every check
/// passed); none otherwise.
///
/// A stage without steps is passed vacuously, as the rule reads: a task whose
/// only steps are `run` steps reaches `build` when they fail, `run` when they
/// pass and a check fails. So the stage compares agents on one task; across
/// tasks, compare only stages that the tasks' steps define.
pub fn stage_reached(steps: &[StepResult], checks: &[CheckResult]) -> VerdictStage {
    let passed_through =
        |stage: Stage| steps.iter().filter(|s| s.stage <= stage).all(|s| s.status == StepStatus::Passed);
    if passed_through(Stage::Run) && checks.iter().all(|c| c.passed) {
        VerdictStage::Results
    } else if passed_through(Stage::Run) {
        VerdictStage::Run
    } else if passed_through(Stage::Build) {
        VerdictStage::Build
    } else if passed_through(Stage::Setup) {
        VerdictStage::Setup
    } else {
        VerdictStage::None
    }
}

/// A step's stage as its name in checks.toml ("setup", "build", "run").
mod stage_name {
    use super::Stage;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(stage: &Stage, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(stage.as_str())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Stage, D::Error> {
        let name = String::deserialize(d)?;
        Stage::parse(&name).ok_or_else(|| serde::de::Error::custom(format!("unknown stage {name:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(stage: Stage, status: StepStatus) -> StepResult {
        StepResult {
            name: stage.as_str().to_string(),
            stage,
            exit_code: if status == StepStatus::Passed { Some(0) } else { None },
            seconds: 0.5,
            status,
        }
    }

    fn check(passed: bool) -> CheckResult {
        CheckResult { name: "c".into(), passed, expected: "1 (exact)".into(), observed: "1".into() }
    }

    use StepStatus::*;

    #[test]
    fn stage_names_are_the_serialized_ones_in_order() {
        for stage in VerdictStage::ALL {
            assert_eq!(serde_json::to_value(stage).unwrap(), stage.as_str());
        }
        assert!(VerdictStage::ALL.windows(2).all(|w| w[0] < w[1]), "ALL is in pipeline order");
    }

    #[test]
    fn all_passed_is_results() {
        let v = Verdict::new(
            vec![step(Stage::Setup, Passed), step(Stage::Build, Passed), step(Stage::Run, Passed)],
            vec![check(true), check(true)],
        );
        assert_eq!(v.stage, VerdictStage::Results);
        assert!(v.passed);
    }

    #[test]
    fn a_failed_check_stops_at_run() {
        let v = Verdict::new(
            vec![step(Stage::Setup, Passed), step(Stage::Run, Passed)],
            vec![check(true), check(false)],
        );
        assert_eq!(v.stage, VerdictStage::Run);
        assert!(!v.passed);
    }

    #[test]
    fn the_first_failing_stage_bounds_the_stage() {
        let steps = |a, b, c| vec![step(Stage::Setup, a), step(Stage::Build, b), step(Stage::Run, c)];
        assert_eq!(stage_reached(&steps(Passed, Passed, Failed), &[]), VerdictStage::Build);
        assert_eq!(stage_reached(&steps(Passed, TimedOut, NotRun), &[]), VerdictStage::Setup);
        assert_eq!(stage_reached(&steps(Failed, NotRun, NotRun), &[check(true)]), VerdictStage::None);
    }

    #[test]
    fn every_step_of_a_stage_must_pass() {
        let steps = vec![
            step(Stage::Setup, Passed),
            step(Stage::Build, Passed),
            step(Stage::Build, Failed),
            step(Stage::Run, NotRun),
        ];
        assert_eq!(stage_reached(&steps, &[]), VerdictStage::Setup);
    }

    #[test]
    fn stages_without_steps_pass_vacuously() {
        assert_eq!(stage_reached(&[step(Stage::Run, Failed)], &[]), VerdictStage::Build);
        assert_eq!(stage_reached(&[step(Stage::Run, Passed)], &[check(false)]), VerdictStage::Run);
        assert_eq!(stage_reached(&[step(Stage::Build, Failed)], &[]), VerdictStage::Setup);
        assert_eq!(stage_reached(&[], &[check(false)]), VerdictStage::Run);
        assert_eq!(stage_reached(&[], &[]), VerdictStage::Results);
    }

    #[test]
    fn serialises_as_result_json_shows() {
        let v = Verdict::new(
            vec![
                StepResult {
                    name: "designated experiment".into(),
                    stage: Stage::Run,
                    exit_code: Some(0),
                    seconds: 1.2,
                    status: Passed,
                },
                step(Stage::Run, TimedOut),
                step(Stage::Run, NotRun),
            ],
            vec![check(true)],
        );
        let json = serde_json::to_value(&v).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "steps": [
                    {"name": "designated experiment", "stage": "run", "exit_code": 0, "seconds": 1.2, "status": "passed"},
                    {"name": "run", "stage": "run", "exit_code": null, "seconds": 0.5, "status": "timed_out"},
                    {"name": "run", "stage": "run", "exit_code": null, "seconds": 0.5, "status": "not_run"},
                ],
                "checks": [{"name": "c", "passed": true, "expected": "1 (exact)", "observed": "1"}],
                "stage": "build",
                "passed": false,
            })
        );
        let back: Verdict = serde_json::from_value(json).unwrap();
        assert_eq!(back, v);
        assert!(serde_json::from_str::<StepStatus>("\"not_run\"").is_ok());
        assert!(serde_json::from_value::<StepResult>(serde_json::json!({
            "name": "x", "stage": "deploy", "exit_code": null, "seconds": 0.0, "status": "passed"
        }))
        .is_err());
    }
}
