//! summary.json: counts per agent and in total, rewritten after every trial
//! so that a run cut short still says how far it got.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::record::{FailureClass, Outcome, TrialRecord};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Trials the run planned.
    pub planned: usize,
    /// Every planned trial has a result.
    pub complete: bool,
    /// In the order the agents first appear in the records.
    pub agents: Vec<AgentSummary>,
    pub totals: Counts,
    /// Passes on negative-control tasks, as `task agent_id #trial`: each is
    /// a suspected forgery or a broken verifier.
    #[serde(default)]
    pub suspected: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentSummary {
    pub agent: String,
    pub agent_id: String,
    #[serde(flatten)]
    pub counts: Counts,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    /// Trials with a result, whatever the outcome.
    pub recorded: usize,
    pub passed: usize,
    pub failed: usize,
    /// Every class, zero or not, so readers need not guess the keys.
    pub failed_by_class: BTreeMap<FailureClass, usize>,
    pub infra_error: usize,
    pub skipped: usize,
    /// Trials of negative-control tasks, whatever their outcome: outside
    /// every other count and the rate.
    #[serde(default)]
    pub negative_control: usize,
    /// Of those, the ones that passed.
    #[serde(default)]
    pub negative_control_passed: usize,
    /// passed / (passed + failed): infra errors and skipped trials are
    /// outside the denominator (DESIGN.md, "Outcomes"). None when no trial
    /// passed or failed.
    pub pass_rate: Option<f64>,
}

impl Default for Counts {
    fn default() -> Self {
        Counts {
            recorded: 0,
            passed: 0,
            failed: 0,
            failed_by_class: FailureClass::ALL.iter().map(|&c| (c, 0)).collect(),
            infra_error: 0,
            skipped: 0,
            negative_control: 0,
            negative_control_passed: 0,
            pass_rate: None,
        }
    }
}

impl Counts {
    fn add(&mut self, record: &TrialRecord) {
        self.recorded += 1;
        if record.negative_control {
            self.negative_control += 1;
            self.negative_control_passed += usize::from(record.outcome == Outcome::Passed);
            return;
        }
        match record.outcome {
            Outcome::Passed => self.passed += 1,
            Outcome::Failed => {
                self.failed += 1;
                // A failure without a class counts as failed, in no class.
                if let Some(class) = record.class {
                    *self.failed_by_class.entry(class).or_default() += 1;
                }
            }
            Outcome::InfraError => self.infra_error += 1,
            Outcome::Skipped => self.skipped += 1,
        }
        let judged = self.passed + self.failed;
        self.pass_rate = (judged > 0).then(|| self.passed as f64 / judged as f64);
    }
}

impl Summary {
    /// Counts `records` (one per trial) against the `planned` trials.
    pub fn from_records(records: &[TrialRecord], planned: usize) -> Summary {
        let mut agents: Vec<AgentSummary> = Vec::new();
        let mut totals = Counts::default();
        let mut suspected = Vec::new();
        for record in records {
            if record.negative_control && record.outcome == Outcome::Passed {
                suspected.push(format!("{} {} #{}", record.task, record.agent_id, record.trial));
            }
            let i = match agents.iter().position(|a| a.agent_id == record.agent_id) {
                Some(i) => i,
                None => {
                    agents.push(AgentSummary {
                        agent: record.agent.clone(),
                        agent_id: record.agent_id.clone(),
                        counts: Counts::default(),
                    });
                    agents.len() - 1
                }
            };
            agents[i].counts.add(record);
            totals.add(record);
        }
        Summary { planned, complete: totals.recorded == planned, agents, totals, suspected }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(agent_id: &str, outcome: Outcome, class: Option<FailureClass>) -> TrialRecord {
        let mut r = TrialRecord::new("sobol-seq", format!("spec:{agent_id}"), agent_id, 1, 1);
        r.outcome = outcome;
        r.class = class;
        r
    }

    #[test]
    fn counts_per_agent_in_first_seen_order() {
        use FailureClass::*;
        use Outcome::*;
        let records = [
            record("oracle", Passed, None),
            record("nop", Failed, Some(SelfStop)),
            record("oracle", Passed, None),
            record("oracle", Failed, Some(Budget)),
            record("nop", InfraError, None),
            record("nop", Skipped, None),
            record("oracle", InfraError, None),
        ];
        let s = Summary::from_records(&records, 8);
        assert!(!s.complete);
        assert_eq!(s.agents.iter().map(|a| a.agent_id.as_str()).collect::<Vec<_>>(), ["oracle", "nop"]);

        let oracle = &s.agents[0].counts;
        assert_eq!((oracle.recorded, oracle.passed, oracle.failed), (4, 2, 1));
        assert_eq!((oracle.infra_error, oracle.skipped), (1, 0));
        assert_eq!(oracle.pass_rate, Some(2.0 / 3.0));
        assert_eq!(oracle.failed_by_class[&Budget], 1);
        assert_eq!(oracle.failed_by_class[&SelfStop], 0);

        let nop = &s.agents[1].counts;
        assert_eq!(nop.pass_rate, Some(0.0));
        assert_eq!(s.agents[1].agent, "spec:nop");

        assert_eq!(s.totals.recorded, 7);
        assert_eq!(s.totals.pass_rate, Some(2.0 / 4.0));
        assert!(Summary::from_records(&records, 7).complete);
    }

    #[test]
    fn negative_controls_are_outside_every_rate_and_their_passes_are_named() {
        let mut records = [
            record("oracle", Outcome::Passed, None),
            record("forger", Outcome::Passed, None),
            record("oracle", Outcome::Failed, Some(FailureClass::SelfStop)),
        ];
        records[1].negative_control = true;
        records[2].negative_control = true;
        let s = Summary::from_records(&records, 3);
        let oracle = &s.agents[0].counts;
        assert_eq!((oracle.passed, oracle.failed, oracle.pass_rate), (1, 0, Some(1.0)));
        assert_eq!((oracle.negative_control, oracle.negative_control_passed), (1, 0));
        let forger = &s.agents[1].counts;
        assert_eq!((forger.passed, forger.pass_rate, forger.negative_control_passed), (0, None, 1));
        assert_eq!((s.totals.recorded, s.totals.negative_control), (3, 2));
        assert_eq!(s.suspected, ["sobol-seq forger #1"]);
    }

    #[test]
    fn no_rate_without_judged_trials() {
        let records = [record("nop", Outcome::InfraError, None), record("nop", Outcome::Skipped, None)];
        let s = Summary::from_records(&records, 2);
        assert!(s.complete);
        assert_eq!(s.agents[0].counts.pass_rate, None);
        assert_eq!(Summary::from_records(&[], 0).totals.pass_rate, None);
    }

    #[test]
    fn json_lists_every_class_and_a_null_rate() {
        let s = Summary::from_records(&[record("nop", Outcome::Skipped, None)], 3);
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(
            v["agents"][0],
            serde_json::json!({
                "agent": "spec:nop", "agent_id": "nop", "recorded": 1, "passed": 0, "failed": 0,
                "failed_by_class": {"self_stop": 0, "budget": 0, "agent_error": 0, "tampered": 0},
                "infra_error": 0, "skipped": 1, "negative_control": 0, "negative_control_passed": 0,
                "pass_rate": null
            })
        );
        assert_eq!(v["planned"], 3);
        assert_eq!(v["complete"], false);
        let back: Summary = serde_json::from_value(v).unwrap();
        assert_eq!(back, s);
    }
}
