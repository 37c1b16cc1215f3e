//! What every report format shows, computed once from the trial records of
//! one or several runs: pass rates per agent and slice, failure classes and
//! tags, the task × agent matrix, repeated-trial statistics, paired
//! comparisons, and cost and time.
//!
//! An "arm" is one column of the report: an agent of a run. The same agent
//! id in two runs (gate off in one, on in the other) makes two arms,
//! labelled `agent_id@run_id`; so does one SPEC under two gates of one run
//! (`<id>-gate-off`, `<id>-gate-enforced`). Each arm knows its gate, and
//! `gate_effect` pairs the arms of one SPEC with the gate off and on.
//!
//! Only judged trials (passed or failed) enter a rate; infra errors and
//! skipped trials are counted apart (DESIGN.md, "Outcomes"), and so are the
//! trials of negative-control tasks, whose passes are flagged.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use cleanroom_store::{CacheBytes, GateMode, Outcome, TaskInfo, TrialRecord};
use cleanroom_verify::VerdictStage;

use crate::class_row::ClassRow;
use crate::format::plural;
use crate::stats::{self, Comparison, Interval, Paired, Spread, TaskAverage, TaskTrials};

/// One run's records.
#[derive(Debug, Clone, Default)]
pub struct RunInput {
    pub run_id: String,
    /// The agent ids in run.toml's order; agents found only in the records
    /// come after them.
    pub agents: Vec<String>,
    pub records: Vec<TrialRecord>,
    /// Each agent's completion gate as run.toml gives it, by agent id; an
    /// agent without one is in no gate comparison.
    pub gates: BTreeMap<String, GateMode>,
}

#[derive(Debug, Clone, Default)]
pub struct ReportInput {
    pub runs: Vec<RunInput>,
    /// Task id to metadata; none when the tasks could not be loaded (the
    /// report then has no slices, and a note should say why).
    pub tasks: Option<BTreeMap<String, TaskInfo>>,
    /// Said at the top of every report, e.g. why there are no slices.
    pub notes: Vec<String>,
}

/// What the rows below "Overall" are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SliceBy {
    Domain,
    Difficulty,
    Gpu,
    Legacy,
    Language,
    Tag,
}

impl SliceBy {
    pub fn as_str(self) -> &'static str {
        match self {
            SliceBy::Domain => "domain",
            SliceBy::Difficulty => "difficulty",
            SliceBy::Gpu => "gpu",
            SliceBy::Legacy => "legacy",
            SliceBy::Language => "language",
            SliceBy::Tag => "tag",
        }
    }

    /// Labels in the order they are shown; others follow, sorted.
    fn known_order(self) -> &'static [&'static str] {
        match self {
            SliceBy::Domain => &["ai", "systems", "scientific"],
            SliceBy::Difficulty => &["easy", "medium", "hard"],
            SliceBy::Gpu => &["GPU", "no GPU"],
            SliceBy::Legacy => &["legacy", "not legacy"],
            SliceBy::Language | SliceBy::Tag => &[],
        }
    }
}

/// The label of a slice of tasks without metadata.
pub const UNKNOWN_SLICE: &str = "(unknown task)";

/// A column of the report: one agent of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Arm {
    /// `agent_id`, or `agent_id@run_id` when the id is in several runs.
    pub label: String,
    /// The SPEC as given.
    pub agent: String,
    pub agent_id: String,
    pub run_id: String,
    pub model: Option<String>,
    /// The completion gate the agent ran under, where its run says.
    pub gate: Option<GateMode>,
}

#[derive(Debug, Clone)]
pub struct Trial {
    pub arm: usize,
    pub run_id: String,
    pub record: TrialRecord,
}

impl Trial {
    /// Passed or failed, on a task that is not a negative control.
    pub fn judged(&self) -> bool {
        matches!(self.record.outcome, Outcome::Passed | Outcome::Failed) && !self.record.negative_control
    }

    /// A pass on a negative control: a suspected forgery or broken verifier.
    pub fn suspected(&self) -> bool {
        self.record.negative_control && self.record.outcome == Outcome::Passed
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct RunMeta {
    pub run_id: String,
    pub trials: usize,
    /// The package cache's bytes, summed over the run's trials; none when
    /// no trial had the cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packages: Option<CacheBytes>,
}

#[derive(Debug, Clone)]
pub struct Report {
    pub by: SliceBy,
    pub runs: Vec<RunMeta>,
    pub notes: Vec<String>,
    pub tasks: Option<BTreeMap<String, TaskInfo>>,
    pub arms: Vec<Arm>,
    /// Ordered by task, arm and trial number.
    pub trials: Vec<Trial>,
    /// Every task with a record, sorted.
    pub task_ids: Vec<String>,
}

/// `passed` of `n` judged trials.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Rate {
    pub passed: u64,
    pub n: u64,
    pub rate: Option<f64>,
    /// Wilson, 95%.
    pub interval: Option<Interval>,
}

impl Rate {
    pub(crate) fn of(passed: u64, n: u64) -> Rate {
        Rate {
            passed,
            n,
            rate: (n > 0).then(|| passed as f64 / n as f64),
            interval: stats::wilson(passed, n),
        }
    }
}

/// An arm's trials by outcome, class and stage.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArmCounts {
    pub recorded: u64,
    pub passed: u64,
    pub failed: u64,
    pub infra_error: u64,
    pub skipped: u64,
    /// Trials of negative-control tasks, in no other count.
    pub negative_control: u64,
    /// Failed trials by class, every row present.
    pub failed_by_class: BTreeMap<ClassRow, u64>,
    /// Failed trials by how far the hidden pipeline got, every stage present.
    pub failed_by_stage: BTreeMap<VerdictStage, u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SliceRow {
    pub label: String,
    /// Tasks in the slice (with a record of any arm).
    pub tasks: usize,
    /// One per arm.
    pub cells: Vec<Rate>,
}

/// pass@k and pass^k for one k, one entry per arm.
#[derive(Debug, Clone, Serialize)]
pub struct KRow {
    pub k: u64,
    pub pass_at_k: Vec<TaskAverage>,
    pub pass_hat_k: Vec<TaskAverage>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Repeats {
    pub rows: Vec<KRow>,
    /// One per arm.
    pub spread: Vec<Spread>,
}

/// Two arms on the tasks where both have a judged trial.
#[derive(Debug, Clone, Serialize)]
pub struct PairRow {
    pub a: String,
    pub b: String,
    /// Tasks of either arm left out: the other has no judged trial there.
    pub left_out: usize,
    pub comparison: Option<Comparison>,
}

/// How paired comparisons pick one verdict per task and arm.
pub const PAIRING_RULE: &str = "each task's verdict is the agent's first judged trial (the lowest trial \
number that passed or failed); tasks where either agent has none are left out";

/// A classifier tag across the report.
#[derive(Debug, Clone, Serialize)]
pub struct TagRow {
    pub name: String,
    /// Failed trials with the tag, per arm.
    pub failed: Vec<u64>,
    /// Passed trials with the tag, per arm.
    pub passed: Vec<u64>,
    /// Indices into `Report::trials`.
    #[serde(skip)]
    pub trials: Vec<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Costs {
    /// Trials that ran (not skipped), infra errors included: they cost too.
    pub trials: u64,
    pub cost_usd: f64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cached_tokens: u64,
    /// Seconds of all phases, summed over trials.
    pub total_secs: f64,
    pub agent_secs: f64,
    pub verify_secs: f64,
    /// Of the trials' total times.
    pub mean_secs: Option<f64>,
    pub median_secs: Option<f64>,
    pub max_secs: Option<f64>,
    /// What the agents' downloads took through the package cache; none
    /// when no trial had it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packages: Option<CacheBytes>,
}

impl Report {
    pub fn build(input: ReportInput, by: SliceBy) -> Report {
        let mut arms: Vec<Arm> = Vec::new();
        let mut trials = Vec::new();
        let mut runs = Vec::new();
        // Agent ids in more than one run get the run id in their label.
        let mut runs_of_id: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for run in &input.runs {
            for id in
                run.agents.iter().map(String::as_str).chain(run.records.iter().map(|r| r.agent_id.as_str()))
            {
                runs_of_id.entry(id).or_default().insert(&run.run_id);
            }
        }
        for run in &input.runs {
            runs.push(RunMeta {
                run_id: run.run_id.clone(),
                trials: run.records.len(),
                packages: packages(&run.records),
            });
            let mut order: Vec<&str> = run.agents.iter().map(String::as_str).collect();
            for r in &run.records {
                if !order.contains(&r.agent_id.as_str()) {
                    order.push(&r.agent_id);
                }
            }
            let first = arms.len();
            for id in order {
                let Some(example) = run.records.iter().find(|r| r.agent_id == id) else { continue };
                let shared = runs_of_id.get(id).is_some_and(|runs| runs.len() > 1);
                arms.push(Arm {
                    label: if shared { format!("{id}@{}", run.run_id) } else { id.to_string() },
                    agent: example.agent.clone(),
                    agent_id: id.to_string(),
                    run_id: run.run_id.clone(),
                    model: example.model.clone(),
                    gate: run.gates.get(id).copied(),
                });
            }
            for r in &run.records {
                let arm = first
                    + arms[first..].iter().position(|a| a.agent_id == r.agent_id).expect("arm of a record");
                trials.push(Trial { arm, run_id: run.run_id.clone(), record: r.clone() });
            }
        }
        trials.sort_by(|a, b| {
            (&a.record.task, a.arm, a.record.trial).cmp(&(&b.record.task, b.arm, b.record.trial))
        });
        let task_ids: Vec<String> =
            trials.iter().map(|t| t.record.task.clone()).collect::<BTreeSet<_>>().into_iter().collect();
        Report { by, runs, notes: input.notes, tasks: input.tasks, arms, trials, task_ids }
    }

    pub fn task(&self, id: &str) -> Option<&TaskInfo> {
        self.tasks.as_ref()?.get(id)
    }

    fn of_arm(&self, arm: usize) -> impl Iterator<Item = &Trial> + '_ {
        self.trials.iter().filter(move |t| t.arm == arm)
    }

    /// The trials of `task` and `arm`, by trial number.
    pub fn cell(&self, task: &str, arm: usize) -> Vec<&TrialRecord> {
        // `trials` is ordered by task, arm and trial: the cell is one run of
        // it, found by bisection (the matrix asks for every cell).
        let start = self.trials.partition_point(|t| (t.record.task.as_str(), t.arm) < (task, arm));
        self.trials[start..]
            .iter()
            .take_while(|t| t.arm == arm && t.record.task == task)
            .map(|t| &t.record)
            .collect()
    }

    pub fn counts(&self, arm: usize) -> ArmCounts {
        let mut c = ArmCounts {
            recorded: 0,
            passed: 0,
            failed: 0,
            infra_error: 0,
            skipped: 0,
            negative_control: 0,
            failed_by_class: ClassRow::all().map(|row| (row, 0)).collect(),
            failed_by_stage: VerdictStage::ALL.iter().map(|&stage| (stage, 0)).collect(),
        };
        for t in self.of_arm(arm) {
            c.recorded += 1;
            if t.record.negative_control {
                c.negative_control += 1;
                continue;
            }
            match t.record.outcome {
                Outcome::Passed => c.passed += 1,
                Outcome::Failed => {
                    c.failed += 1;
                    *c.failed_by_class.entry(ClassRow::of(t.record.class)).or_default() += 1;
                    *c.failed_by_stage.entry(t.record.stage).or_default() += 1;
                }
                Outcome::InfraError => c.infra_error += 1,
                Outcome::Skipped => c.skipped += 1,
            }
        }
        c
    }

    fn rate_where(&self, arm: usize, keep: impl Fn(&Trial) -> bool) -> Rate {
        let judged: Vec<&Trial> = self.of_arm(arm).filter(|t| t.judged() && keep(t)).collect();
        let passed = judged.iter().filter(|t| t.record.outcome == Outcome::Passed).count();
        Rate::of(passed as u64, judged.len() as u64)
    }

    pub fn overall(&self, arm: usize) -> Rate {
        self.rate_where(arm, |_| true)
    }

    /// The slices a task belongs to under `self.by` (a task has several
    /// with `--by tag`, and `(unknown task)` without metadata).
    pub fn slice_labels(&self, task: &str) -> Vec<String> {
        let Some(info) = self.task(task) else { return vec![UNKNOWN_SLICE.to_string()] };
        let yes_no = |flag: bool, yes: &str, no: &str| vec![if flag { yes } else { no }.to_string()];
        match self.by {
            // The task format's names, as every output and the index spell them.
            SliceBy::Domain => vec![info.domain.clone()],
            SliceBy::Difficulty => vec![info.difficulty.clone()],
            SliceBy::Gpu => yes_no(info.gpu, "GPU", "no GPU"),
            SliceBy::Legacy => yes_no(info.legacy, "legacy", "not legacy"),
            SliceBy::Language => {
                vec![info.languages.first().cloned().unwrap_or_else(|| "(none)".to_string())]
            }
            SliceBy::Tag if info.tags.is_empty() => vec!["(no tag)".to_string()],
            SliceBy::Tag => info.tags.clone(),
        }
    }

    /// The rows below "Overall"; none without task metadata.
    pub fn slices(&self) -> Option<Vec<SliceRow>> {
        self.tasks.as_ref()?;
        let mut members: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
        for task in &self.task_ids {
            for label in self.slice_labels(task) {
                members.entry(label).or_default().insert(task);
            }
        }
        let known = self.by.known_order();
        let mut labels: Vec<String> = members.keys().cloned().collect();
        labels.sort_by_key(|l| {
            let rank = known.iter().position(|k| k == l).unwrap_or(known.len());
            (l == UNKNOWN_SLICE, rank, l.clone())
        });
        let rows = labels
            .into_iter()
            .map(|label| {
                let tasks = &members[&label];
                let cells = (0..self.arms.len())
                    .map(|a| self.rate_where(a, |t| tasks.contains(t.record.task.as_str())))
                    .collect();
                SliceRow { label, tasks: tasks.len(), cells }
            })
            .collect();
        Some(rows)
    }

    /// Judged trials per task of `arm`, for tasks with at least one.
    pub fn task_trials(&self, arm: usize) -> Vec<(String, TaskTrials)> {
        let mut per: BTreeMap<&str, TaskTrials> = BTreeMap::new();
        for t in self.of_arm(arm).filter(|t| t.judged()) {
            let e = per.entry(&t.record.task).or_insert(TaskTrials { n: 0, c: 0 });
            e.n += 1;
            e.c += u64::from(t.record.outcome == Outcome::Passed);
        }
        per.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }

    /// pass@k, pass^k and the spread, when some task has several judged
    /// trials of one arm. k runs from 1 to the most judged trials of a task
    /// (at most 10, then 20, 50, 100 if reached).
    pub fn repeats(&self) -> Option<Repeats> {
        let per_arm: Vec<Vec<TaskTrials>> =
            (0..self.arms.len()).map(|a| self.task_trials(a).into_iter().map(|(_, t)| t).collect()).collect();
        let most = per_arm.iter().flatten().map(|t| t.n).max().unwrap_or(0);
        if most < 2 {
            return None;
        }
        let ks = (1..=most.min(10)).chain([20, 50, 100].into_iter().filter(|&k| k <= most));
        let rows = ks
            .map(|k| KRow {
                k,
                pass_at_k: per_arm.iter().map(|t| stats::mean_pass_at_k(t, k)).collect(),
                pass_hat_k: per_arm.iter().map(|t| stats::mean_pass_hat_k(t, k)).collect(),
            })
            .collect();
        Some(Repeats { rows, spread: per_arm.iter().map(|t| stats::spread(t)).collect() })
    }

    /// Each task's verdict of `arm` under [`PAIRING_RULE`]: its first
    /// judged trial, by task.
    pub fn first_judged(&self, arm: usize) -> BTreeMap<&str, &TrialRecord> {
        let mut m = BTreeMap::new();
        // Trials are sorted by trial number within a task and arm.
        for t in self.of_arm(arm).filter(|t| t.judged()) {
            m.entry(t.record.task.as_str()).or_insert(&t.record);
        }
        m
    }

    /// Every pair of arms, in column order (see `PAIRING_RULE`).
    pub fn comparisons(&self) -> Vec<PairRow> {
        let first: Vec<_> = (0..self.arms.len()).map(|a| self.first_judged(a)).collect();
        let mut rows = Vec::new();
        for a in 0..self.arms.len() {
            for b in a + 1..self.arms.len() {
                let (table, left_out) = paired(&first[a], &first[b]);
                rows.push(PairRow {
                    a: self.arms[a].label.clone(),
                    b: self.arms[b].label.clone(),
                    left_out,
                    comparison: table.compare(),
                });
            }
        }
        rows
    }

    /// Every tag on a judged trial, most frequent on failures first.
    pub fn tags(&self) -> Vec<TagRow> {
        let mut rows: BTreeMap<&str, TagRow> = BTreeMap::new();
        for (i, t) in self.trials.iter().enumerate() {
            let mut seen = BTreeSet::new();
            for tag in &t.record.tags {
                if !seen.insert(tag.name.as_str()) {
                    continue;
                }
                let row = rows.entry(&tag.name).or_insert_with(|| TagRow {
                    name: tag.name.clone(),
                    failed: vec![0; self.arms.len()],
                    passed: vec![0; self.arms.len()],
                    trials: Vec::new(),
                });
                match t.record.outcome {
                    Outcome::Failed => row.failed[t.arm] += 1,
                    Outcome::Passed => row.passed[t.arm] += 1,
                    _ => {}
                }
                row.trials.push(i);
            }
        }
        let mut rows: Vec<TagRow> = rows.into_values().collect();
        rows.sort_by_key(|r| std::cmp::Reverse(r.failed.iter().sum::<u64>()));
        rows
    }

    pub fn costs(&self, arm: usize) -> Costs {
        let ran: Vec<&TrialRecord> =
            self.of_arm(arm).map(|t| &t.record).filter(|r| r.outcome != Outcome::Skipped).collect();
        let mut c = Costs { trials: ran.len() as u64, ..Costs::default() };
        let mut totals: Vec<f64> = Vec::new();
        for r in &ran {
            c.cost_usd += finite(r.cost_usd);
            c.prompt_tokens += r.tokens.prompt;
            c.completion_tokens += r.tokens.completion;
            c.cached_tokens += r.tokens.cached;
            c.agent_secs += finite(r.timings.agent);
            c.verify_secs += finite(r.timings.verify);
            totals.push(finite(r.timings.total()));
        }
        c.packages = packages(ran.iter().copied());
        c.total_secs = totals.iter().sum();
        totals.sort_by(f64::total_cmp);
        if !totals.is_empty() {
            c.mean_secs = Some(c.total_secs / totals.len() as f64);
            let m = totals.len() / 2;
            c.median_secs =
                Some(if totals.len() % 2 == 1 { totals[m] } else { (totals[m - 1] + totals[m]) / 2.0 });
            c.max_secs = totals.last().copied();
        }
        c
    }

    /// Trials left out of every rate, over all arms.
    pub fn outside(&self) -> Outside<'_> {
        let ordinary = || self.trials.iter().filter(|t| !t.record.negative_control);
        Outside {
            infra_error: ordinary().filter(|t| t.record.outcome == Outcome::InfraError).count(),
            skipped: ordinary().filter(|t| t.record.outcome == Outcome::Skipped).count(),
            negative_control: self.trials.iter().filter(|t| t.record.negative_control).count(),
            suspected: self.trials.iter().filter(|t| t.suspected()).collect(),
        }
    }
}

impl RunMeta {
    /// What the run's downloads took, in words; none without the cache.
    pub fn packages_sentence(&self) -> Option<String> {
        self.packages.map(|p| {
            format!(
                "Packages of run {}: {} from the registries, {} from the package cache.",
                self.run_id,
                crate::format::bytes(p.bytes_upstream),
                crate::format::bytes(p.bytes_from_cache)
            )
        })
    }
}

/// The package cache's bytes of these trials, summed; none when none had
/// the cache.
fn packages<'a>(records: impl IntoIterator<Item = &'a TrialRecord>) -> Option<CacheBytes> {
    records.into_iter().filter_map(|r| r.cache).reduce(|a, b| CacheBytes {
        bytes_upstream: a.bytes_upstream + b.bytes_upstream,
        bytes_from_cache: a.bytes_from_cache + b.bytes_from_cache,
    })
}

/// The 2×2 table of two arms' verdicts (from [`Report::first_judged`]) on
/// the tasks both have, and how many tasks of either the other lacks.
pub(crate) fn paired(a: &BTreeMap<&str, &TrialRecord>, b: &BTreeMap<&str, &TrialRecord>) -> (Paired, usize) {
    let mut table = Paired::default();
    let mut left_out = 0;
    let passed = |r: &&TrialRecord| r.outcome == Outcome::Passed;
    for task in a.keys().chain(b.keys()).copied().collect::<BTreeSet<&str>>() {
        match (a.get(task).map(passed), b.get(task).map(passed)) {
            (Some(true), Some(true)) => table.both += 1,
            (Some(true), Some(false)) => table.only_a += 1,
            (Some(false), Some(true)) => table.only_b += 1,
            (Some(false), Some(false)) => table.neither += 1,
            _ => left_out += 1,
        }
    }
    (table, left_out)
}

/// The trials that no rate counts, and why.
pub struct Outside<'a> {
    pub infra_error: usize,
    pub skipped: usize,
    /// Trials of negative-control tasks, whatever their outcome.
    pub negative_control: usize,
    /// Of those, the passes.
    pub suspected: Vec<&'a Trial>,
}

/// What every report says of a pass on a negative control.
pub const SUSPECTED: &str = "passed a negative control: a suspected forgery or a broken verifier";

impl Outside<'_> {
    /// "Left out of every rate: ..." in plain text; the caller escapes it.
    pub fn sentence(&self) -> String {
        let mut text = format!(
            "Left out of every rate: {} infra error{} and {} skipped trial{}",
            self.infra_error,
            plural(self.infra_error),
            self.skipped,
            plural(self.skipped)
        );
        if self.negative_control > 0 {
            text += &format!(
                ", and {} trial{} of negative controls",
                self.negative_control,
                plural(self.negative_control)
            );
        }
        text.push('.');
        text
    }

    /// One line per suspected trial: `task agent #trial`.
    pub fn suspected_lines(&self, arms: &[Arm]) -> Vec<String> {
        self.suspected
            .iter()
            .map(|t| {
                let agent = arms.get(t.arm).map_or(t.record.agent_id.as_str(), |a| a.label.as_str());
                format!("{} {agent} #{}", t.record.task, t.record.trial)
            })
            .collect()
    }
}

fn finite(x: f64) -> f64 {
    if x.is_finite() {
        x
    } else {
        0.0
    }
}
