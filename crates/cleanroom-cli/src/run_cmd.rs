//! `cleanroom run`: prepare (sweep, images, artifacts, run directory), run
//! the trials, and consume the runner's events: result files, progress
//! lines, summary.json after every trial, the table at the end.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use cleanroom_agent::{AgentSpec, Config, GateMode};
use cleanroom_env::CancelToken;
use cleanroom_report::{summary_table, trial_line};
use cleanroom_runner::{plan, AgentEntry, AgentSetup, Event, RunInput};
use cleanroom_store::{
    agent_ids, new_run_id, AgentEntry as StoredAgent, ArtifactEntry, RunConfig, RunDir, Summary, TrialRecord,
};
use cleanroom_task::{load_tasks, Task};

use crate::args::RunArgs;
use crate::error::{input, internal, CliError};
use crate::{interrupt, prepare};

pub fn run(args: RunArgs, config_file: Option<&Path>) -> Result<(), CliError> {
    let (existing, mut config) = match &args.resume {
        Some(path) => {
            let (dir, config) = resume(path, &args)?;
            (Some(dir), config)
        }
        None => (None, fresh(&args, config_file)?),
    };
    let agent_config = Config {
        models: config.models.clone(),
        agents: config.external_agents.clone(),
        sources: config.config_sources.clone(),
    };
    // Everything that can be bad input or a host unfit for environments is
    // found before a run directory is made.
    let backend = prepare::backend(&config.backend)?;
    let all_tasks = load_tasks(&config.tasks.iter().map(PathBuf::from).collect::<Vec<_>>()).map_err(input)?;
    let tasks = select_tasks(all_tasks, &config.task_ids)?;
    let agents = parse_agents(&config, &agent_config)?;
    check_api_keys(&agent_config)?;
    let prepared = prepare::prepare(backend, &tasks, &config.run_id)?;
    let agent_setup = AgentSetup {
        installed: cleanroom_agent::external::install_all(
            &cleanroom_env::image::cleanroom_home(),
            &config.external_agents.keys().cloned().collect::<Vec<_>>(),
            &agent_config,
            &mut |line| eprintln!("cleanroom: {line}"),
        )
        .map_err(|e| internal(format!("external agents: {e}")))?,
        config: agent_config,
        max_steps: config.max_steps,
        max_tokens: config.max_tokens,
        max_cost_usd: config.max_cost_usd,
        gate: GateMode::parse(&config.gate).ok_or_else(|| {
            input(format!("run.toml: gate `{}` is not off, advisory or enforced", config.gate))
        })?,
    };
    let run_dir = match existing {
        Some(dir) => dir,
        None => RunDir::create(&args.out, &config.run_id).map_err(internal)?,
    };
    config.images.extend(prepared.image_digests.clone());
    for (id, staged) in &prepared.artifacts {
        match staged {
            Ok(s) => {
                config.artifacts.insert(
                    id.clone(),
                    ArtifactEntry {
                        kind: s.record.kind.clone(),
                        location: s.record.location.clone(),
                        sha256: s.record.sha256.clone(),
                        revision: s.record.revision.clone(),
                    },
                );
            }
            Err(why) => eprintln!("cleanroom: {why}"),
        }
    }
    run_dir.write_run_config(&config).map_err(internal)?;

    let planned = plan(&tasks, &agents, config.trials);
    let todo: Vec<_> =
        planned.iter().filter(|k| !run_dir.has_result(&k.task, &k.agent_id, k.trial)).cloned().collect();
    eprintln!(
        "cleanroom: run {} in {}: {} trial(s) to run of {}",
        run_dir.run_id(),
        run_dir.path().display(),
        todo.len(),
        planned.len()
    );

    let cancel = CancelToken::new().map_err(internal)?;
    interrupt::watch(cancel.clone());
    let run_input = RunInput {
        tasks: &tasks,
        agents: &agents,
        trials: config.trials,
        jobs: config.jobs as usize,
        retries: config.retries,
        timeout_multiplier: config.timeout_multiplier,
        allow_unlimited: config.allow_unlimited,
        agent_setup: &agent_setup,
        backend: prepared.backend.as_ref(),
        images: &prepared.images,
        artifacts: &prepared.artifacts,
        cancel: cancel.clone(),
    };
    let (tx, rx) = mpsc::channel();
    let mut records = run_dir.load_results().map_err(internal)?;
    let index = crate::index_cmd::open_for_run(&run_dir, &config, &records);
    let mut interrupted = false;
    let mut write_error = None;
    std::thread::scope(|scope| {
        scope.spawn(|| cleanroom_runner::run(&run_input, todo, tx));
        for event in rx {
            match consume(&run_dir, index.as_ref(), event, &mut records, planned.len()) {
                Ok(Some(was_interrupted)) => interrupted = was_interrupted,
                Ok(None) => {}
                Err(e) => {
                    // Nothing recorded is lost: stop the run, keep what is written.
                    cancel.cancel();
                    write_error.get_or_insert(e);
                }
            }
        }
    });
    drop(prepared);
    if let Some(e) = write_error {
        return Err(e);
    }

    let summary = Summary::from_records(&records, planned.len());
    println!("{}", summary_table(&summary));
    println!("results: {}", run_dir.path().display());
    if interrupted {
        return Err(CliError::Interrupted(run_dir.path().display().to_string()));
    }
    if let Some(threshold) = config.fail_under {
        let rate = overall_rate(&summary);
        if rate < threshold {
            return Err(CliError::BelowThreshold { rate, threshold });
        }
    }
    Ok(())
}

/// Handles one event; Some(interrupted) at the end of the run.
fn consume(
    run_dir: &RunDir,
    index: Option<&cleanroom_store::Index>,
    event: Event,
    records: &mut Vec<TrialRecord>,
    planned: usize,
) -> Result<Option<bool>, CliError> {
    match event {
        Event::Preparing(what) => eprintln!("{what}"),
        Event::Planned { .. } => {}
        Event::TrialStarted { key, attempt } => {
            let again = if attempt > 1 { format!(" (attempt {attempt})") } else { String::new() };
            eprintln!("start {} {} #{}{again}", key.task, key.agent_id, key.trial);
        }
        Event::AttemptFailed { record, files } => {
            write_files(run_dir, &record, &files)?;
            run_dir.write_attempt(&record).map_err(internal)?;
            eprintln!("{}", trial_line(&record));
        }
        Event::TrialFinished { record, files } => {
            write_files(run_dir, &record, &files)?;
            run_dir.write_result(&record).map_err(internal)?;
            crate::index_cmd::record_trial(index, run_dir, &record);
            eprintln!("{}", trial_line(&record));
            records.push(record);
            run_dir.write_summary(&Summary::from_records(records, planned)).map_err(internal)?;
        }
        Event::Finished { interrupted } => return Ok(Some(interrupted)),
    }
    Ok(None)
}

fn write_files(
    run_dir: &RunDir,
    record: &TrialRecord,
    files: &[cleanroom_runner::TrialFile],
) -> Result<(), CliError> {
    for f in files {
        run_dir
            .write_file(&record.task, &record.agent_id, record.trial, &f.name, &f.bytes)
            .map_err(internal)?;
    }
    Ok(())
}

fn overall_rate(summary: &Summary) -> f64 {
    let (passed, judged) = summary
        .agents
        .iter()
        .fold((0, 0), |(p, j), a| (p + a.counts.passed, j + a.counts.passed + a.counts.failed));
    if judged == 0 {
        0.0
    } else {
        passed as f64 / judged as f64
    }
}

fn fresh(args: &RunArgs, config_file: Option<&Path>) -> Result<RunConfig, CliError> {
    if args.trials == 0 {
        return Err(input("--trials must be at least 1"));
    }
    if args.timeout_multiplier.is_nan() || args.timeout_multiplier <= 0.0 {
        return Err(input("--timeout-multiplier must be a positive number"));
    }
    if let Some(rate) = args.fail_under {
        if !(0.0..=1.0).contains(&rate) {
            return Err(input("--fail-under must be between 0 and 1"));
        }
    }
    if args.max_cost.is_some_and(|c| c.is_nan() || c <= 0.0) {
        return Err(input("--max-cost must be a positive number of dollars"));
    }
    let agent_config = Config::load(config_file).map_err(input)?;
    // Only what the run's agents use goes into run.toml.
    let mut models = BTreeMap::new();
    let mut external_agents = BTreeMap::new();
    for spec in &args.agents {
        let parsed = AgentSpec::parse(spec, &agent_config).map_err(input)?;
        if let Some(model) = parsed.model() {
            models.insert(model.to_string(), agent_config.model(model).map_err(input)?.clone());
        }
        if let AgentSpec::Command { name, .. } = &parsed {
            external_agents.insert(name.clone(), agent_config.agent(name).map_err(input)?.clone());
        }
    }
    let tasks = args
        .tasks
        .iter()
        .map(|p| {
            std::fs::canonicalize(p)
                .map(|p| p.display().to_string())
                .map_err(|e| input(format!("--tasks {}: {e}", p.display())))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let run_id = new_run_id();
    let ids = agent_ids(&args.agents);
    let config = RunConfig {
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        created: cleanroom_store::rfc3339_utc_now(),
        run_id,
        backend: args.backend.clone(),
        images: BTreeMap::new(),
        tasks,
        task_ids: args.task_ids.clone(),
        agents: args
            .agents
            .iter()
            .zip(ids)
            .map(|(spec, id)| StoredAgent { spec: spec.clone(), id })
            .collect(),
        trials: args.trials,
        jobs: args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())) as u32,
        gate: args.gate.as_str().into(),
        timeout_multiplier: args.timeout_multiplier,
        retries: args.retries,
        max_steps: args.max_steps,
        max_tokens: args.max_tokens,
        max_cost_usd: args.max_cost,
        config_sources: agent_config.sources.clone(),
        models,
        external_agents,
        allow_unlimited: args.allow_unlimited,
        fail_under: args.fail_under,
        artifacts: BTreeMap::new(),
    };
    Ok(config)
}

/// A resumed run takes its configuration from run.toml; only --jobs may
/// differ.
fn resume(path: &Path, args: &RunArgs) -> Result<(RunDir, RunConfig), CliError> {
    if !args.tasks.is_empty() || !args.agents.is_empty() || !args.task_ids.is_empty() {
        return Err(input(
            "--resume takes the tasks and agents from the run's run.toml; drop --tasks, --task and --agent",
        ));
    }
    let run_dir = RunDir::open(path).map_err(input)?;
    let mut config = run_dir.read_run_config().map_err(input)?;
    if let Some(jobs) = args.jobs {
        config.jobs = jobs as u32;
    }
    Ok((run_dir, config))
}

fn select_tasks(all: Vec<Task>, ids: &[String]) -> Result<Vec<Task>, CliError> {
    if ids.is_empty() {
        return Ok(all);
    }
    for id in ids {
        if !all.iter().any(|t| &t.id == id) {
            let known: Vec<&str> = all.iter().map(|t| t.id.as_str()).collect();
            return Err(input(format!("--task {id}: no such task (have: {})", known.join(", "))));
        }
    }
    Ok(all.into_iter().filter(|t| ids.contains(&t.id)).collect())
}

/// A model whose key variable is unset would fail every trial: say so now.
fn check_api_keys(config: &Config) -> Result<(), CliError> {
    for (name, model) in &config.models {
        model.api_key().map_err(|why| input(format!("model {name}: {why}")))?;
    }
    Ok(())
}

fn parse_agents(config: &RunConfig, agent_config: &Config) -> Result<Vec<AgentEntry>, CliError> {
    config
        .agents
        .iter()
        .map(|a| {
            Ok(AgentEntry {
                spec: AgentSpec::parse(&a.spec, agent_config).map_err(input)?,
                spec_text: a.spec.clone(),
                id: a.id.clone(),
            })
        })
        .collect()
}
