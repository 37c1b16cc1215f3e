use std::time::SystemTime;

use cleanroom_runner::{EventKind, TrialFile};
use cleanroom_store::{Outcome, RunDir, TrialRecord};

use super::*;

/// Hears what reaches it.
struct Heard(Vec<String>);

impl Reporter for Heard {
    fn report(&mut self, event: &Event) -> Result<(), CliError> {
        if let EventKind::TrialFinished { record, .. } = &event.kind {
            self.0.push(format!("{}#{}", record.task, record.trial));
        }
        Ok(())
    }
}

fn event(kind: EventKind) -> Event {
    Event { timestamp: SystemTime::now(), kind }
}

fn finished(task: &str, files: Vec<TrialFile>) -> Event {
    let mut record = TrialRecord::new(task, "nop", "nop", 1, 1);
    record.outcome = Outcome::Failed;
    event(EventKind::TrialFinished { record, files, second_verdict: None })
}

#[test]
fn a_record_the_run_directory_refuses_reaches_no_reporter_after_it() {
    let out = std::env::temp_dir().join(format!("cleanroom-cli-reporters-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let run_dir = RunDir::create(&out, "run-1").unwrap();
    let mut results = RunDirReporter::new(&run_dir);
    let mut summary = SummaryReporter::new(&run_dir, Vec::new());
    let mut heard = Heard(Vec::new());
    {
        let mut reporters: [&mut dyn Reporter; 3] = [&mut results, &mut summary, &mut heard];
        report_to(&mut reporters, &event(EventKind::Planned { trials: 3, of: 5 })).unwrap();
        let attempt = TrialRecord::new("a", "nop", "nop", 1, 1);
        let log = TrialFile { name: "agent.log".into(), bytes: b"tried".to_vec() };
        report_to(&mut reporters, &event(EventKind::AttemptFailed { record: attempt, files: vec![log] }))
            .unwrap();
        report_to(&mut reporters, &finished("a", Vec::new())).unwrap();
        // A file named like the store's own record is refused: the trial has
        // no result, so neither the summary nor anything later counts it.
        let forged = TrialFile { name: "result.json".into(), bytes: b"{}".to_vec() };
        assert!(report_to(&mut reporters, &finished("b", vec![forged])).is_err());
        // The next event is reported as ever.
        report_to(&mut reporters, &finished("c", Vec::new())).unwrap();
    }

    assert_eq!(heard.0, ["a#1", "c#1"]);
    let trials = run_dir.path().join("trials");
    assert!(trials.join("a/nop/1/attempt-1.json").is_file());
    assert_eq!(std::fs::read(trials.join("a/nop/1/attempt-1/agent.log")).unwrap(), b"tried");
    assert!(trials.join("a/nop/1/result.json").is_file() && trials.join("c/nop/1/result.json").is_file());
    assert!(!trials.join("b/nop/1/result.json").exists());
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run_dir.path().join("summary.json")).unwrap()).unwrap();
    assert_eq!(written["planned"], 5, "{written}");
    assert_eq!(summary.summary().planned, 5);
    let agents = &written["agents"];
    assert_eq!((&agents[0]["recorded"], &agents[0]["failed"]), (&2.into(), &2.into()), "{written}");
}
