//! The completion gate's effect: one agent SPEC with the gate off in one
//! arm and on (advisory or enforced) in another, whether one run gave it
//! both (`--gate off --gate enforced`) or two runs gave it one each. The
//! arms are paired on the tasks both judged, under [`PAIRING_RULE`], as in
//! the paired comparisons; and the tasks whose gate-off verdict was a
//! self-stop, which the gate is there to catch, are followed to what
//! became of them with the gate on.
//!
//! [`PAIRING_RULE`]: crate::PAIRING_RULE

use serde::Serialize;

use cleanroom_store::{FailureClass, GateMode, Outcome, TrialRecord};

use crate::model::{paired, Rate, Report};
use crate::stats::Comparison;

/// One SPEC, gate off against gate on.
#[derive(Debug, Clone, Serialize)]
pub struct GateEffect {
    /// The SPEC as given.
    pub agent: String,
    /// The labels of the arms with the gate off and on.
    pub off: String,
    pub on: String,
    /// The mode of `on`: advisory or enforced.
    pub mode: GateMode,
    /// Pass rates on the paired tasks (each task's first judged trial).
    pub off_rate: Rate,
    pub on_rate: Rate,
    /// Tasks of either arm left out: the other has no judged trial there.
    pub left_out: usize,
    /// A is the gate on, B the gate off: `difference` is on − off, and
    /// `only_a` the tasks that passed only with the gate.
    pub comparison: Option<Comparison>,
    pub self_stops: SelfStops,
}

/// The paired tasks whose gate-off verdict failed as `self_stop` (the
/// agent said it was done and was not), by their verdict with the gate on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct SelfStops {
    pub off: u64,
    pub passed: u64,
    /// Failed as `budget`: the agent's time or model budget ran out.
    pub budget: u64,
    pub self_stop: u64,
    /// Any other failure (agent_error, tampered, unclassified).
    pub other: u64,
}

impl SelfStops {
    fn count(&mut self, on: &TrialRecord) {
        self.off += 1;
        match (on.outcome, on.class) {
            (Outcome::Passed, _) => self.passed += 1,
            (_, Some(FailureClass::Budget)) => self.budget += 1,
            (_, Some(FailureClass::SelfStop)) => self.self_stop += 1,
            _ => self.other += 1,
        }
    }
}

impl Report {
    /// Every arm with the gate off against every arm of the same SPEC with
    /// it on, in column order.
    pub fn gate_effects(&self) -> Vec<GateEffect> {
        let mut rows = Vec::new();
        for (a, off) in self.arms.iter().enumerate().filter(|(_, arm)| arm.gate == Some(GateMode::Off)) {
            let first_off = self.first_judged(a);
            for (b, on) in self.arms.iter().enumerate() {
                let Some(mode) = on.gate.filter(|&m| m != GateMode::Off) else { continue };
                if on.agent != off.agent {
                    continue;
                }
                let first_on = self.first_judged(b);
                let (table, left_out) = paired(&first_on, &first_off);
                let mut self_stops = SelfStops::default();
                let stopped = first_off
                    .iter()
                    .filter(|(_, r)| r.outcome == Outcome::Failed && r.class == Some(FailureClass::SelfStop));
                for (task, _) in stopped {
                    if let Some(under_gate) = first_on.get(task) {
                        self_stops.count(under_gate);
                    }
                }
                let n = table.n();
                rows.push(GateEffect {
                    agent: off.agent.clone(),
                    off: off.label.clone(),
                    on: on.label.clone(),
                    mode,
                    off_rate: Rate::of(table.both + table.only_b, n),
                    on_rate: Rate::of(table.both + table.only_a, n),
                    left_out,
                    comparison: table.compare(),
                    self_stops,
                });
            }
        }
        rows
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use cleanroom_store::{FailureClass, GateMode, Outcome, TrialRecord};

    use crate::model::{Report, ReportInput, RunInput, SliceBy};

    use super::SelfStops;

    use FailureClass::*;

    /// A judged trial: passed without a class, else failed with it.
    fn rec(task: &str, spec: &str, id: &str, class: Option<FailureClass>) -> TrialRecord {
        let mut r = TrialRecord::new(task, spec, id, 1, 1);
        r.outcome = if class.is_some() { Outcome::Failed } else { Outcome::Passed };
        r.class = class;
        r
    }

    fn run(run_id: &str, agents: &[(&str, GateMode)], records: Vec<TrialRecord>) -> RunInput {
        RunInput {
            run_id: run_id.into(),
            agents: agents.iter().map(|(id, _)| id.to_string()).collect(),
            records,
            gates: agents.iter().map(|&(id, g)| (id.to_string(), g)).collect::<BTreeMap<_, _>>(),
        }
    }

    fn report(runs: Vec<RunInput>) -> Report {
        Report::build(ReportInput { runs, tasks: None, notes: vec![] }, SliceBy::Domain)
    }

    /// llm:m with the gate off and enforced in one run, on six tasks:
    ///
    /// | task | off       | enforced  |
    /// |------|-----------|-----------|
    /// | t1   | self_stop | ✓         |
    /// | t2   | self_stop | ✓         |
    /// | t3   | self_stop | budget    |
    /// | t4   | self_stop | self_stop |
    /// | t5   | ✓         | ✓         |
    /// | t6   | agent_err | tampered  |
    ///
    /// and t7 judged only with the gate off (the enforced trial was an
    /// infra error): left out.
    fn one_run() -> Report {
        let (off, on) = ("llm-m-gate-off", "llm-m-gate-enforced");
        let mut records = Vec::new();
        for (task, a, b) in [
            ("t1", Some(SelfStop), None),
            ("t2", Some(SelfStop), None),
            ("t3", Some(SelfStop), Some(Budget)),
            ("t4", Some(SelfStop), Some(SelfStop)),
            ("t5", None, None),
            ("t6", Some(AgentError), Some(Tampered)),
        ] {
            records.push(rec(task, "llm:m", off, a));
            records.push(rec(task, "llm:m", on, b));
        }
        records.push(rec("t7", "llm:m", off, Some(SelfStop)));
        let mut lost = rec("t7", "llm:m", on, None);
        lost.outcome = Outcome::InfraError;
        records.push(lost);
        report(vec![run("run-1", &[(off, GateMode::Off), (on, GateMode::Enforced)], records)])
    }

    #[test]
    fn self_stops_under_the_gate_pass_run_out_of_budget_or_stay() {
        let rows = one_run().gate_effects();
        assert_eq!(rows.len(), 1);
        let row = &rows[0];
        assert_eq!((row.off.as_str(), row.on.as_str()), ("llm-m-gate-off", "llm-m-gate-enforced"));
        assert_eq!((row.agent.as_str(), row.mode), ("llm:m", GateMode::Enforced));
        // t7 has no judged trial with the gate on: out of the pairs and of
        // the self-stops alike.
        assert_eq!(row.left_out, 1);
        assert_eq!(row.self_stops, SelfStops { off: 4, passed: 2, budget: 1, self_stop: 1, other: 0 });
        // Off passed t5 of six, on t1, t2 and t5: 1/6 against 3/6.
        assert_eq!((row.off_rate.passed, row.off_rate.n), (1, 6));
        assert_eq!((row.on_rate.passed, row.on_rate.n), (3, 6));
        let c = row.comparison.expect("six paired tasks");
        assert_eq!((c.table.both, c.table.only_a, c.table.only_b, c.table.neither), (1, 2, 0, 3));
        assert!((c.difference - 2.0 / 6.0).abs() < 1e-12, "on − off: {c:?}");
        // McNemar: 2 discordant tasks, both for the gate: 2 * (1/2)^2.
        assert!((c.p_value - 0.5).abs() < 1e-12, "{c:?}");
        // Wilson of 1/6: [.0301, .5635].
        let i = row.off_rate.interval.unwrap();
        assert!((i.lo - 0.0301).abs() < 1e-4 && (i.hi - 0.5635).abs() < 1e-4, "{i:?}");
    }

    #[test]
    fn a_failure_of_another_class_goes_to_other() {
        let r = report(vec![run(
            "run-1",
            &[("a-gate-off", GateMode::Off), ("a-gate-advisory", GateMode::Advisory)],
            vec![
                rec("t", "nop", "a-gate-off", Some(SelfStop)),
                rec("t", "nop", "a-gate-advisory", Some(Tampered)),
            ],
        )]);
        let rows = r.gate_effects();
        assert_eq!(rows[0].mode, GateMode::Advisory);
        assert_eq!(rows[0].self_stops, SelfStops { off: 1, other: 1, ..SelfStops::default() });
    }

    /// The same id in two runs, one with the gate off and one with it on,
    /// pairs as one run's two gates do; arms of other SPECs, of the same
    /// gate, or of no known gate do not pair.
    #[test]
    fn across_runs_only_the_same_spec_off_and_on_pairs() {
        let first = run(
            "run-1",
            &[("a", GateMode::Off), ("b", GateMode::Off)],
            vec![rec("t", "llm:m", "a", Some(SelfStop)), rec("t", "llm:n", "b", Some(SelfStop))],
        );
        let mut second = run(
            "run-2",
            &[("a", GateMode::Enforced), ("b", GateMode::Off)],
            vec![rec("t", "llm:m", "a", None), rec("t", "llm:n", "b", None)],
        );
        let third = run("run-3", &[], vec![rec("t", "llm:m", "a", None)]);
        let r = report(vec![first.clone(), second.clone(), third]);
        let rows = r.gate_effects();
        let pairs: Vec<(&str, &str)> = rows.iter().map(|g| (g.off.as_str(), g.on.as_str())).collect();
        assert_eq!(pairs, [("a@run-1", "a@run-2")]);
        assert_eq!(rows[0].self_stops, SelfStops { off: 1, passed: 1, ..SelfStops::default() });

        // Another SPEC under the same id is another agent.
        second.records[0].agent = "llm:other".into();
        assert!(report(vec![first, second]).gate_effects().is_empty());
    }

    #[test]
    fn without_gates_in_the_input_there_is_no_gate_effect() {
        let r = report(vec![RunInput {
            run_id: "run-1".into(),
            agents: vec!["a".into()],
            records: vec![rec("t", "nop", "a", None)],
            gates: BTreeMap::new(),
        }]);
        assert_eq!(r.arms[0].gate, None);
        assert!(r.gate_effects().is_empty());
    }
}
