//! `cleanroom report RUN...`: one report over the trials of one or several
//! runs, in Markdown, JSON, CSV, JUnit or HTML.
//!
//! RUN is a run directory or the id of a run under `--runs-dir`. Task
//! metadata (domain, difficulty, languages, ...) comes from loading the
//! task directories that each run.toml names; where that fails the report
//! goes on without slices and says why.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use cleanroom_report::{
    render_csv, render_html, render_json, render_junit, render_markdown, Report, ReportInput, RunInput,
    SliceBy, TaskInfo,
};
use cleanroom_store::{Index, RunConfig, RunDir, StoreError, TrialRecord, RESULT_FILE};

use crate::args::{ReportArgs, ReportFormat, ReportSlice};
use crate::error::{input, internal, CliError};
use crate::task_info::task_info;

pub fn report(args: ReportArgs) -> Result<(), CliError> {
    let mut notes = Vec::new();
    let mut runs = Vec::new();
    let mut known = KnownTasks::default();
    let mut seen = BTreeSet::new();
    if args.runs.is_empty() {
        runs = from_index(&args.runs_dir, &mut known)?;
    }
    for run in &args.runs {
        let path = resolve(run, &args.runs_dir)?;
        if !seen.insert(path.canonicalize().unwrap_or_else(|_| path.clone())) {
            continue;
        }
        let (config, records) = read_run(&path, &mut notes)?;
        known.add(&config);
        let run_id =
            path.file_name().map_or_else(|| config.run_id.clone(), |n| n.to_string_lossy().into_owned());
        runs.push(RunInput {
            run_id,
            agents: config.agents.iter().map(|a| a.id.clone()).collect(),
            records,
            gates: config.agent_gates(),
        });
    }
    let tasks = task_metadata(known, &runs, &mut notes);
    let by = match args.by {
        ReportSlice::Domain => SliceBy::Domain,
        ReportSlice::Difficulty => SliceBy::Difficulty,
        ReportSlice::Gpu => SliceBy::Gpu,
        ReportSlice::Legacy => SliceBy::Legacy,
        ReportSlice::Language => SliceBy::Language,
        ReportSlice::Tag => SliceBy::Tag,
    };
    let report = Report::build(ReportInput { runs, tasks, notes }, by);
    let text = match args.format {
        ReportFormat::Md => render_markdown(&report),
        ReportFormat::Json => render_json(&report),
        ReportFormat::Csv => render_csv(&report),
        ReportFormat::Junit => render_junit(&report),
        ReportFormat::Html => render_html(&report),
    };
    match &args.out {
        Some(path) => {
            std::fs::write(path, text)
                .map_err(|e| internal(format!("cannot write {}: {e}", path.display())))?;
            eprintln!("cleanroom: wrote {}", path.display());
        }
        None => print!("{text}"),
    }
    Ok(())
}

/// Every run of the results index in `runs_dir`, across runs: the index
/// is derived from the run directories (`cleanroom index rebuild`).
fn from_index(runs_dir: &Path, known: &mut KnownTasks) -> Result<Vec<RunInput>, CliError> {
    if !runs_dir.join(cleanroom_store::INDEX_FILE).is_file() {
        return Err(input(format!(
            "no RUN given and no results index in {}: give run directories, or run `cleanroom index rebuild --out {}`",
            runs_dir.display(),
            runs_dir.display()
        )));
    }
    let index = Index::open(runs_dir)?;
    let mut runs = Vec::new();
    for run in index.runs()? {
        known.add(&run.config);
        let records = index.trials(std::slice::from_ref(&run.run_id))?;
        let agents = run.config.agents.iter().map(|a| a.id.clone()).collect();
        let gates = run.config.agent_gates();
        runs.push(RunInput { run_id: run.run_id, agents, records, gates });
    }
    Ok(runs)
}

/// A run directory as given, else `<runs_dir>/<run>`.
fn resolve(run: &Path, runs_dir: &Path) -> Result<PathBuf, CliError> {
    if run.join("run.toml").is_file() {
        return Ok(run.to_path_buf());
    }
    let under = runs_dir.join(run);
    if run.components().count() == 1 && under.join("run.toml").is_file() {
        return Ok(under);
    }
    Err(input(format!(
        "{}: not a run directory (no run.toml), and no run of that id in {}: give a run directory or a run id \
         with --runs-dir",
        run.display(),
        runs_dir.display()
    )))
}

/// run.toml and every result.json of the run. A run that another process
/// is writing is read without its lock, as far as it got, and a note says
/// so.
fn read_run(path: &Path, notes: &mut Vec<String>) -> Result<(RunConfig, Vec<TrialRecord>), CliError> {
    match RunDir::open(path) {
        Ok(dir) => {
            let config = dir.read_run_config()?;
            let records = dir.load_results()?;
            Ok((config, records))
        }
        Err(StoreError::InUse { .. }) => {
            let config = read_config_unlocked(path)?;
            let records = read_results_unlocked(path)?;
            notes.push(format!(
                "run {} is still running: this report has the {} trial results written so far",
                path.display(),
                records.len()
            ));
            Ok((config, records))
        }
        Err(e) => Err(e.into()),
    }
}

fn read_config_unlocked(run: &Path) -> Result<RunConfig, CliError> {
    let path = run.join("run.toml");
    let text =
        std::fs::read_to_string(&path).map_err(|e| input(format!("cannot read {}: {e}", path.display())))?;
    toml_edit::de::from_str(&text)
        .map_err(|e| input(format!("{} is not a valid run configuration: {e}", path.display())))
}

/// trials/<task>/<agent>/<n>/result.json, in the order of
/// `RunDir::load_results`. Files being written are renamed into place
/// whole, so each one read is complete.
fn read_results_unlocked(run: &Path) -> Result<Vec<TrialRecord>, CliError> {
    let mut records = Vec::new();
    let dirs = |p: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(p)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        v.sort();
        v
    };
    for task in dirs(&run.join("trials")) {
        for agent in dirs(&task) {
            for trial in dirs(&agent) {
                let path = trial.join(RESULT_FILE);
                let Ok(bytes) = std::fs::read(&path) else { continue };
                let record: TrialRecord = serde_json::from_slice(&bytes)
                    .map_err(|e| input(format!("{} is not a valid trial record: {e}", path.display())))?;
                records.push(record);
            }
        }
    }
    records.sort_by(|a, b| (&a.task, &a.agent_id, a.trial).cmp(&(&b.task, &b.agent_id, b.trial)));
    Ok(records)
}

/// What the runs' run.toml say of their tasks, and the task directories
/// of the runs made before run.toml kept their metadata.
#[derive(Default)]
struct KnownTasks {
    recorded: BTreeMap<String, TaskInfo>,
    dirs: Vec<PathBuf>,
}

impl KnownTasks {
    fn add(&mut self, config: &RunConfig) {
        if config.task_info.is_empty() {
            for dir in config.tasks.iter().map(PathBuf::from) {
                if !self.dirs.contains(&dir) {
                    self.dirs.push(dir);
                }
            }
        }
        for (id, info) in &config.task_info {
            self.recorded.entry(id.clone()).or_insert_with(|| info.clone());
        }
    }
}

/// The metadata of the runs' tasks: as run.toml recorded it, else from
/// loading the task directories that older runs name; none (with a note)
/// when neither gives any. A directory that fails to load is named in a
/// note and its tasks fall into the `(unknown task)` slice.
fn task_metadata(
    known: KnownTasks,
    runs: &[RunInput],
    notes: &mut Vec<String>,
) -> Option<BTreeMap<String, TaskInfo>> {
    let KnownTasks { recorded: mut tasks, dirs } = known;
    let mut failed = Vec::new();
    for dir in &dirs {
        match cleanroom_task::load_tasks(std::slice::from_ref(dir)) {
            Ok(loaded) => {
                for t in loaded {
                    tasks.entry(t.id.clone()).or_insert_with(|| task_info(&t));
                }
            }
            Err(e) => {
                let first = e.to_string().lines().next().unwrap_or_default().to_string();
                failed.push(format!("{} ({first})", dir.display()));
            }
        }
    }
    if tasks.is_empty() {
        let why =
            if dirs.is_empty() { "the runs name no task directory".to_string() } else { failed.join("; ") };
        notes.push(format!("task metadata could not be loaded, so the report has no slices: {why}"));
        return None;
    }
    if !failed.is_empty() {
        notes.push(format!("some task directories could not be loaded: {}", failed.join("; ")));
    }
    let missing: BTreeSet<&str> = runs
        .iter()
        .flat_map(|r| r.records.iter().map(|t| t.task.as_str()))
        .filter(|id| !tasks.contains_key(*id))
        .collect();
    if !missing.is_empty() {
        let list: Vec<&str> = missing.into_iter().collect();
        notes.push(format!("no metadata for task(s) {} (shown as \"(unknown task)\")", list.join(", ")));
    }
    Some(tasks)
}
