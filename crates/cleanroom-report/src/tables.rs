//! The report's tables, built once and rendered by the Markdown and HTML
//! reporters. A cell says whether its text is ours (numbers, class names)
//! or came from a task, an agent SPEC or an environment: each format
//! escapes the latter its own way (HTML escapes everything).

use cleanroom_store::{CacheBytes, Outcome, TrialRecord, VerdictStage};

use crate::class_row::ClassRow;
use crate::format::{bytes, count, duration, interval, p_value, pct, plural, points, rate_cell, share, usd};
use crate::model::{ArmCounts, Costs, Rate, Report, TagRow};
use crate::stats::TaskAverage;
use crate::why::trial_dir;

pub const EXPLAIN_RATE: &str =
    "Passed of judged trials (rate) [Wilson 95% interval, in %]; infra errors and \
skipped trials are outside n; - where an agent has no judged trial.";
/// Said under the table with `--by tag`.
pub const EXPLAIN_TAG_SLICES: &str = "A task with several tags counts in the row of each.";
pub const EXPLAIN_REPEATS: &str = "pass@k: the chance that at least one of k trials passes (unbiased estimator, \
1 − C(n−c,k)/C(n,k) per task); pass^k: the chance that all k pass (C(c,k)/C(n,k)); both averaged over the tasks \
with at least k judged trials.";
pub const EXPLAIN_PAIRS: &str =
    "A − B in percentage points, with Newcombe's hybrid score interval for paired \
proportions (95%); p: exact McNemar test (two-sided binomial on the tasks that only one of the two passed).";
pub const EXPLAIN_MATRIX: &str =
    "✓ passed, ✗ failed, E infra error, S skipped, one symbol per trial in trial order; then passed/judged.";

#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub text: String,
    /// Written by us: safe to show as it is where the format allows.
    pub ours: bool,
    /// An HTML class for the cell.
    pub class: Option<&'static str>,
    /// Hover text (HTML only).
    pub title: Option<String>,
    /// A second, smaller line in HTML (an interval); after a space in
    /// Markdown. Always ours.
    pub detail: Option<String>,
    /// Where the cell links to (HTML only): the viewer's pages.
    pub href: Option<String>,
}

impl Cell {
    pub fn ours(text: impl Into<String>) -> Cell {
        Cell { text: text.into(), ours: true, class: None, title: None, detail: None, href: None }
    }

    pub fn theirs(text: impl Into<String>) -> Cell {
        Cell { text: text.into(), ours: false, class: None, title: None, detail: None, href: None }
    }
}

#[derive(Debug, Clone)]
pub struct Row {
    /// `overall` (emphasised) or `outside` (muted).
    pub class: Option<&'static str>,
    pub cells: Vec<Cell>,
}

impl Row {
    fn plain(cells: Vec<Cell>) -> Row {
        Row { class: None, cells }
    }
}

#[derive(Debug, Clone)]
pub struct Table {
    pub head: Vec<Cell>,
    pub rows: Vec<Row>,
    /// Leading columns of text, aligned left; the rest are numbers.
    pub text_columns: usize,
}

fn arm_head(report: &Report, first: &str) -> Vec<Cell> {
    std::iter::once(Cell::ours(first)).chain(report.arms.iter().map(|a| Cell::theirs(&a.label))).collect()
}

/// `passed/n (rate%)` with the interval as the detail; `-` without
/// judged trials.
fn rate(r: &Rate) -> Cell {
    match r.interval {
        Some(i) => Cell {
            detail: Some(interval(i)),
            ..Cell::ours(format!("{}/{} ({})", r.passed, r.n, pct(r.rate)))
        },
        None => Cell::ours(rate_cell(r)),
    }
}

fn ours_row(first: impl Into<String>, rest: impl IntoIterator<Item = String>) -> Row {
    Row::plain(std::iter::once(Cell::ours(first)).chain(rest.into_iter().map(Cell::ours)).collect())
}

/// DeployBench's table: Overall, one row per slice, then the trials
/// outside the denominators.
pub fn pass_rates(report: &Report) -> Table {
    let arms = 0..report.arms.len();
    let mut rows = vec![Row {
        class: Some("overall"),
        cells: std::iter::once(Cell::ours("Overall"))
            .chain(arms.clone().map(|a| rate(&report.overall(a))))
            .collect(),
    }];
    for s in report.slices().unwrap_or_default() {
        let mut cells = vec![Cell::theirs(format!("{} ({} task{})", s.label, s.tasks, plural(s.tasks)))];
        cells.extend(s.cells.iter().map(rate));
        rows.push(Row::plain(cells));
    }
    let counts: Vec<_> = arms.map(|a| report.counts(a)).collect();
    for (name, f) in [
        ("infra_error (outside n)", (|c: &ArmCounts| c.infra_error) as fn(&_) -> u64),
        ("skipped (outside n)", |c| c.skipped),
    ] {
        let mut row = ours_row(name, counts.iter().map(|c| f(c).to_string()));
        row.class = Some("outside");
        rows.push(row);
    }
    Table { head: arm_head(report, &format!("by {}", report.by.as_str())), rows, text_columns: 1 }
}

fn average(a: &TaskAverage) -> String {
    match a.value {
        Some(v) if a.excluded > 0 => {
            format!("{} ({} of {} tasks)", pct(Some(v)), a.tasks, a.tasks + a.excluded)
        }
        Some(v) => pct(Some(v)),
        None => "-".to_string(),
    }
}

/// pass@k, pass^k and the spread across tasks; none with one trial per task.
pub fn repeats(report: &Report) -> Option<Table> {
    let rep = report.repeats()?;
    let mut rows = Vec::new();
    for row in &rep.rows {
        rows.push(ours_row(format!("pass@{}", row.k), row.pass_at_k.iter().map(average)));
    }
    for row in rep.rows.iter().filter(|r| r.k > 1) {
        rows.push(ours_row(format!("pass^{}", row.k), row.pass_hat_k.iter().map(average)));
    }
    rows.push(ours_row(
        "tasks always / sometimes / never passed",
        rep.spread.iter().map(|s| format!("{} / {} / {}", s.always, s.mixed, s.never)),
    ));
    rows.push(ours_row(
        "per-task rate: mean ± sd",
        rep.spread.iter().map(|s| match (s.mean_rate, s.sd_rate) {
            (Some(m), Some(sd)) => format!("{} ± {:.1}", pct(Some(m)), sd * 100.0),
            (Some(m), None) => pct(Some(m)),
            _ => "-".to_string(),
        }),
    ));
    Some(Table { head: arm_head(report, "statistic"), rows, text_columns: 1 })
}

/// Pairs of agents with fewer tasks in common are folded into a count:
/// below three, no difference could be told from chance.
pub const MIN_PAIRED_TASKS: u64 = 3;

/// Every pair of agents that ran at least `MIN_PAIRED_TASKS` tasks in
/// common, and how many pairs had fewer; none with fewer than two agents.
pub fn comparisons(report: &Report) -> Option<(Table, usize)> {
    let all = report.comparisons();
    if all.is_empty() {
        return None;
    }
    let enough = |p: &crate::model::PairRow| p.comparison.as_ref().is_some_and(|c| c.n >= MIN_PAIRED_TASKS);
    let folded = all.iter().filter(|p| !enough(p)).count();
    let pairs: Vec<_> = all.into_iter().filter(|p| enough(p)).collect();
    let head = ["A", "B", "tasks", "A passed", "B passed", "A − B [95% CI]", "only A / only B", "McNemar p"]
        .map(Cell::ours)
        .to_vec();
    let rows = pairs
        .iter()
        .filter_map(|p| {
            let c = p.comparison.as_ref()?;
            let tasks =
                if p.left_out > 0 { format!("{} ({} left out)", c.n, p.left_out) } else { c.n.to_string() };
            let passed = |k: u64, rate: f64| format!("{k}/{} ({})", c.n, pct(Some(rate)));
            let mut cells = vec![Cell::theirs(&p.a), Cell::theirs(&p.b)];
            cells.extend(
                [
                    tasks,
                    passed(c.table.both + c.table.only_a, c.rate_a),
                    passed(c.table.both + c.table.only_b, c.rate_b),
                    format!(
                        "{} [{}, {}]",
                        points(c.difference),
                        points(c.interval.lo),
                        points(c.interval.hi)
                    ),
                    format!("{} / {}", c.table.only_a, c.table.only_b),
                    p_value(c.p_value),
                ]
                .map(Cell::ours),
            );
            Some(Row::plain(cells))
        })
        .collect();
    Some((Table { head, rows, text_columns: 2 }, folded))
}

/// The sentence under the comparisons about the pairs folded away.
pub fn folded_pairs(folded: usize) -> String {
    format!(
        "{folded} pair{} of agents with fewer than {MIN_PAIRED_TASKS} tasks in common left out.",
        plural(folded)
    )
}

pub const EXPLAIN_GATE: &str = "Each agent with the completion gate off in one column and on in another: \
pass rates [Wilson 95% interval, in %], on − off in percentage points [Newcombe 95%], the tasks that \
passed only with the gate on / only with it off, and the exact McNemar p; then the tasks whose gate-off \
verdict was a self_stop (the agent stopped, the experiment did not pass) and what each became with the \
gate on: passed, a budget failure (its time or model budget ran out), still self_stop, or another \
failure.";

/// Said under the gate's table when a row has fewer than
/// `MIN_PAIRED_TASKS` tasks.
pub fn few_gate_tasks() -> String {
    format!(
        "Rows marked (few) have fewer than {MIN_PAIRED_TASKS} tasks in common: no difference there can be \
         told from chance."
    )
}

/// One row per agent with the gate off against the same agent with it on;
/// none without such a pair. Rows with fewer than `MIN_PAIRED_TASKS`
/// tasks are kept, marked (the whole point of a gate run is this row),
/// and the flag says whether any is.
pub fn gate_effect(report: &Report) -> Option<(Table, bool)> {
    let rows = report.gate_effects();
    if rows.is_empty() {
        return None;
    }
    let few = rows.iter().any(|g| g.off_rate.n < MIN_PAIRED_TASKS);
    let head = [
        "gate off → on",
        "mode",
        "tasks",
        "off passed",
        "on passed",
        "on − off [95% CI]",
        "only on / only off",
        "McNemar p",
        "self_stop off",
        "→ passed",
        "→ budget",
        "→ self_stop",
        "→ other",
    ]
    .map(Cell::ours)
    .to_vec();
    let rows = rows
        .iter()
        .map(|g| {
            let n = g.off_rate.n;
            let mut tasks = n.to_string();
            if g.left_out > 0 {
                tasks += &format!(" ({} left out)", g.left_out);
            }
            if n < MIN_PAIRED_TASKS {
                tasks += " (few)";
            }
            let dash = || "-".to_string();
            let c = g.comparison.as_ref();
            let s = &g.self_stops;
            let mut cells = vec![Cell::theirs(format!("{} → {}", g.off, g.on)), Cell::ours(g.mode.as_str())];
            cells.extend([Cell::ours(tasks), rate(&g.off_rate), rate(&g.on_rate)]);
            cells.extend(
                [
                    c.map_or_else(dash, |c| {
                        format!(
                            "{} [{}, {}]",
                            points(c.difference),
                            points(c.interval.lo),
                            points(c.interval.hi)
                        )
                    }),
                    c.map_or_else(dash, |c| format!("{} / {}", c.table.only_a, c.table.only_b)),
                    c.map_or_else(dash, |c| p_value(c.p_value)),
                    s.off.to_string(),
                    s.passed.to_string(),
                    s.budget.to_string(),
                    s.self_stop.to_string(),
                    s.other.to_string(),
                ]
                .map(Cell::ours),
            );
            Row::plain(cells)
        })
        .collect();
    Some((Table { head, rows, text_columns: 2 }, few))
}

/// Failed trials per class (or per stage reached), with shares of each
/// column's failures and an `all` column. `rows` are the row names, each
/// with its count per arm (in `counts`' order).
fn failure_table(
    report: &Report,
    first: &str,
    counts: &[ArmCounts],
    rows: impl Iterator<Item = (&'static str, Vec<u64>)>,
) -> Table {
    let total: u64 = counts.iter().map(|c| c.failed).sum();
    let mut head = arm_head(report, first);
    head.push(Cell::ours("all"));
    let rows = rows
        .map(|(name, per)| {
            let mut cells: Vec<String> = per.iter().zip(counts).map(|(&k, c)| share(k, c.failed)).collect();
            cells.push(share(per.iter().sum(), total));
            ours_row(name, cells)
        })
        .collect();
    Table { head, rows, text_columns: 1 }
}

fn all_counts(report: &Report) -> Vec<ArmCounts> {
    (0..report.arms.len()).map(|a| report.counts(a)).collect()
}

/// Every class; `unclassified` only where a failure has no class.
pub fn classes(report: &Report) -> Table {
    let counts = all_counts(report);
    let rows = ClassRow::all()
        .map(|row| (row, counts.iter().map(|c| c.failed_by_class[&row]).collect::<Vec<u64>>()))
        .filter(|(row, per)| *row != ClassRow::Unclassified || per.iter().any(|&k| k > 0))
        .map(|(row, per)| (row.as_str(), per));
    failure_table(report, "class", &counts, rows)
}

pub fn stages(report: &Report) -> Table {
    let counts = all_counts(report);
    let rows = VerdictStage::ALL
        .into_iter()
        .map(|stage| (stage.as_str(), counts.iter().map(|c| c.failed_by_stage[&stage]).collect()));
    failure_table(report, "stage reached", &counts, rows)
}

/// Failed trials per tag and agent, with shares of the failures, and how
/// many passed trials carry the tag too.
pub fn tags(report: &Report, tags: &[TagRow]) -> Table {
    let counts = all_counts(report);
    let total: u64 = counts.iter().map(|c| c.failed).sum();
    let mut head = arm_head(report, "tag (failed trials)");
    head.push(Cell::ours("all"));
    head.push(Cell::ours("on passed trials"));
    let rows = tags
        .iter()
        .map(|t| {
            let mut cells = vec![Cell::theirs(&t.name)];
            cells.extend(t.failed.iter().zip(&counts).map(|(&k, c)| Cell::ours(share(k, c.failed))));
            cells.push(Cell::ours(share(t.failed.iter().sum(), total)));
            cells.push(Cell::ours(t.passed.iter().sum::<u64>().to_string()));
            Row::plain(cells)
        })
        .collect();
    Table { head, rows, text_columns: 1 }
}

/// ✓ passed, ✗ failed, E infra error, S skipped.
pub fn symbol(o: Outcome) -> char {
    match o {
        Outcome::Passed => '✓',
        Outcome::Failed => '✗',
        Outcome::InfraError => 'E',
        Outcome::Skipped => 'S',
    }
}

/// `passed`, `failed, self_stop`, `infra_error`, `skipped`.
pub fn outcome_text(r: &TrialRecord) -> String {
    match r.outcome {
        Outcome::Failed => format!("failed, {}", ClassRow::of(r.class).as_str()),
        o => o.as_str().to_string(),
    }
}

/// The trials of one task and arm: their symbols in trial order, then
/// passed/judged when there are several trials; `·` for none.
pub fn matrix_cell(trials: &[&TrialRecord]) -> Cell {
    let judged = trials.iter().filter(|r| matches!(r.outcome, Outcome::Passed | Outcome::Failed)).count();
    let passed = trials.iter().filter(|r| r.outcome == Outcome::Passed).count();
    let symbols: String = trials.iter().map(|r| symbol(r.outcome)).collect();
    let text = match trials.len() {
        0 => "·".to_string(),
        1 => symbols,
        _ if judged == 0 => symbols,
        _ => format!("{symbols} {passed}/{judged}"),
    };
    let class = if judged == 0 {
        "none"
    } else if passed == judged {
        "pass"
    } else if passed == 0 {
        "fail"
    } else {
        "mixed"
    };
    let title: Vec<String> = trials.iter().map(|r| format!("#{} {}", r.trial, outcome_text(r))).collect();
    Cell { class: Some(class), title: Some(title.join(", ")), ..Cell::ours(text) }
}

/// Tasks as rows, agents as columns; with the task's title and slice when
/// the tasks' metadata is known and `titles` is asked for.
pub fn matrix(report: &Report, titles: bool) -> Table {
    let known = report.tasks.is_some();
    let mut head = vec![Cell::ours("task")];
    if known && titles {
        head.push(Cell::ours("title"));
    }
    if known {
        head.push(Cell::ours(report.by.as_str()));
    }
    head.extend(report.arms.iter().map(|a| Cell::theirs(&a.label)));
    let rows = report
        .task_ids
        .iter()
        .map(|task| {
            let mut cells = vec![Cell::theirs(task)];
            if known && titles {
                let title = report.task(task).map(|t| t.title.as_str()).unwrap_or("");
                cells.push(Cell { class: Some("wrap"), ..Cell::theirs(title) });
            }
            if known {
                cells.push(Cell::theirs(report.slice_labels(task).join(", ")));
            }
            cells.extend((0..report.arms.len()).map(|a| matrix_cell(&report.cell(task, a))));
            Row::plain(cells)
        })
        .collect();
    let text_columns = 1 + usize::from(known) + usize::from(known && titles);
    Table { head, rows, text_columns }
}

/// Whether any trial reported tokens or cost (llm and command agents do;
/// oracle, nop and script agents do not).
pub fn has_spend(report: &Report) -> bool {
    report.trials.iter().any(|t| {
        let r = &t.record;
        r.cost_usd != 0.0 || r.tokens.prompt + r.tokens.completion + r.tokens.cached > 0
    })
}

pub const NO_SPEND: &str = "No trial reported tokens or cost (oracle, nop and script agents have none).";

/// Cost and tokens (when any trial reported them) and time per agent.
pub fn costs(report: &Report) -> Table {
    let costs: Vec<Costs> = (0..report.arms.len()).map(|a| report.costs(a)).collect();
    let row = |name: &str, f: &dyn Fn(&Costs) -> String| ours_row(name, costs.iter().map(f));
    let opt = |x: Option<f64>| x.map_or("-".to_string(), duration);
    let mut rows = vec![row("trials run (not skipped)", &|c| c.trials.to_string())];
    if has_spend(report) {
        rows.extend([
            row("cost", &|c| usd(c.cost_usd)),
            row("cost per trial", &|c| {
                if c.trials > 0 {
                    usd(c.cost_usd / c.trials as f64)
                } else {
                    "-".into()
                }
            }),
            row("prompt tokens", &|c| count(c.prompt_tokens)),
            row("completion tokens", &|c| count(c.completion_tokens)),
            row("cached tokens", &|c| count(c.cached_tokens)),
        ]);
    }
    if costs.iter().any(|c| c.packages.is_some()) {
        let side = |pick: fn(&CacheBytes) -> u64| {
            move |c: &Costs| c.packages.as_ref().map_or("-".into(), |p| bytes(pick(p)))
        };
        rows.extend([
            row("packages from the registries", &side(|p| p.bytes_upstream)),
            row("packages from the cache", &side(|p| p.bytes_from_cache)),
        ]);
    }
    rows.extend([
        row("time, all trials", &|c| duration(c.total_secs)),
        row("time per trial: mean", &|c| opt(c.mean_secs)),
        row("time per trial: median", &|c| opt(c.median_secs)),
        row("time per trial: max", &|c| opt(c.max_secs)),
        row("agent phase, all trials", &|c| duration(c.agent_secs)),
        row("verify phase, all trials", &|c| duration(c.verify_secs)),
    ]);
    Table { head: arm_head(report, "per agent"), rows, text_columns: 1 }
}

/// Failed trials listed one by one; the rest are counted.
pub const FAILED_SHOWN: usize = 100;

pub const EXPLAIN_FAILED: &str = "Each failed trial (and infra error) with its first failure: the first \
verification step that failed, its exit code, else the first failed check or the error; and the file \
to read, relative to the directory of runs.";

/// One row per failed trial, up to `FAILED_SHOWN`, and how many more
/// there are.
pub fn failed_trials(report: &Report) -> (Table, usize) {
    let all = crate::why::failed_trials(report);
    let rows = all
        .iter()
        .take(FAILED_SHOWN)
        .map(|(t, why)| {
            let r = &t.record;
            Row::plain(vec![
                Cell::theirs(format!("{} · {} #{}", r.task, report.arms[t.arm].label, r.trial)),
                Cell { class: Some("wrap"), ..Cell::theirs(&why.text) },
                Cell {
                    class: Some("path"),
                    ..Cell::theirs(format!("{}/{}", trial_dir(&t.run_id, r), why.log))
                },
            ])
        })
        .collect();
    let head = ["trial", "first failure", "log"].map(Cell::ours).to_vec();
    (Table { head, rows, text_columns: 3 }, all.len().saturating_sub(FAILED_SHOWN))
}
