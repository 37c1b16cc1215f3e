//! `cleanroom run`: the configuration (fresh or resumed), the runner's
//! preparation, the run directory and run.toml, then the run, its events
//! handed to the reporters (the run directory, the index, the terminal,
//! summary.json), and the table at the end.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cleanroom_agent::{AgentSpec, Config, GateMode};
use cleanroom_env::privilege::{self, Privilege};
use cleanroom_env::{Backend, CancelToken, SlurmOptions};
use cleanroom_report::summary_table;
use cleanroom_runner::{AgentEntry, AgentSetup, Executor, Local, Plan, RunInput};
use cleanroom_store::{
    make_out_dir, new_run_id, AgentEntry as StoredAgent, ArtifactEntry, RunConfig, RunDir, Summary,
};
use cleanroom_task::{load_tasks, Task};

use crate::args::{ExecutorArg, RunArgs};
use crate::error::{input, internal, CliError};
use crate::reporter::{report_to, IndexReporter, Reporter, RunDirReporter, SummaryReporter, Terminal};
use crate::slurm::{RootlessSubmitter, SlurmExecutor};
use crate::task_info::task_info;
use crate::{interrupt, prepare};

/// What a fresh run takes where a flag is not given.
const DEFAULT_TRIALS: u32 = 1;
const DEFAULT_RETRIES: u32 = 1;
const DEFAULT_OUT: &str = "runs";

pub fn run(args: RunArgs, config_file: Option<&Path>) -> Result<(), CliError> {
    // Absolute, as run.toml records it: a resumed run and the Slurm nodes
    // read it from elsewhere.
    let absolute = config_file.map(|f| std::fs::canonicalize(f).unwrap_or_else(|_| f.to_path_buf()));
    let config_file = absolute.as_deref();
    let out = args.out.as_deref().unwrap_or(Path::new(DEFAULT_OUT));
    if let Some(path) = &args.resume {
        // Before the run's lock is taken: this process may only be the
        // rootless sandbox's waiting parent.
        if cleanroom_store::read_run_config(path).is_ok_and(|c| c.backend == "sandbox" && c.slurm.is_none()) {
            prepare::enter_user_namespace_if_unprivileged()?;
        }
    }
    let (existing, mut config) = match &args.resume {
        Some(path) => {
            let (dir, config) = resume(path, &args, config_file)?;
            (Some(dir), config)
        }
        None => (None, fresh(&args, config_file)?),
    };
    let recorded = recorded_config_file(existing.is_some(), &config);
    let config_file = recorded.as_deref().or(config_file);
    let agent_config = agent_config(&config);
    // Everything that can be bad input or a host unfit for environments is
    // found before a run directory is made.
    let backend = submitting_backend(&config, config_file)?;
    if let (false, Some(why)) = (config.allow_unlimited, backend.limits_never_enforced()) {
        return Err(input(format!(
            "the {} backend cannot enforce memory and process limits here ({why}): pass --allow-unlimited to run without them",
            config.backend
        )));
    }
    let all_tasks = load_tasks(&config.tasks.iter().map(PathBuf::from).collect::<Vec<_>>())?;
    let tasks = select_tasks(all_tasks, &config.task_ids)?;
    // A resumed run keeps the metadata it started with.
    if config.task_info.is_empty() {
        config.task_info = tasks.iter().map(|t| (t.id.clone(), task_info(t))).collect();
    }
    let agents = parse_agents(&config, &agent_config)?;
    check_api_keys(&agent_config)?;
    if existing.is_none() {
        make_out_dir(out)?;
    }
    let prepared = prepare::prepare(backend.as_ref(), &tasks, &config.run_id)?;
    let agent_setup = agent_setup(&config, agent_config)?;
    let run_dir = match existing {
        Some(dir) => dir,
        None => RunDir::create(out, &config.run_id)?,
    };
    config.images.extend(prepared.images.iter().map(|img| (img.name.clone(), img.digest.clone())));
    config.accelerator = backend.accelerator().map(String::from);
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
    run_dir.write_run_config(&config)?;

    let cancel = CancelToken::new().map_err(internal)?;
    interrupt::watch(cancel.clone());
    let cache = (!config.no_cache)
        .then(|| prepare::package_cache(args.cache_dir.as_deref(), args.cache_size))
        .flatten();
    // Environments made ahead of need, one per trial under way (none for
    // Slurm, whose nodes make their own), drained when the trials end.
    if config.slurm.is_none() {
        backend.keep_ready(config.jobs as usize)?;
    }
    let run_input = RunInput {
        cache: cache.as_ref(),
        ..run_input(&config, &tasks, &agents, &agent_setup, backend.as_ref(), &prepared.artifacts, &cancel)
    };
    let executor: Box<dyn Executor> = match &config.slurm {
        Some(options) => Box::new(
            SlurmExecutor::new(run_dir.path(), options.clone(), config_file, config.jobs as usize)
                .map_err(input)?,
        ),
        None => Box::new(Local),
    };
    let kept = run_dir.load_results()?;
    // The run directory first: the index and the summary count only what
    // it recorded.
    let mut results = RunDirReporter::new(&run_dir);
    let mut index = IndexReporter::open(&run_dir, &config, &kept);
    let mut terminal = Terminal::new(std::io::stderr(), run_dir.run_id(), run_dir.path());
    let mut summary = SummaryReporter::new(&run_dir, kept);
    let mut reporters: [&mut dyn Reporter; 4] = [&mut results, &mut index, &mut terminal, &mut summary];
    // A resumed run does the trials without a result, numbering attempts
    // on from those its run kept.
    let plan = Plan::resume(&run_input, &run_dir);
    let ran = cleanroom_runner::run_with(&run_input, plan, executor.as_ref(), &mut |event| {
        report_to(&mut reporters, event)
    });
    backend.keep_ready(0)?;
    ran?;
    drop(prepared);
    let interrupted = cancel.is_cancelled();

    let summary = summary.summary();
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

/// What the run's agents are configured with: run.toml's models and
/// external agents, never the files of the day.
pub(crate) fn agent_config(config: &RunConfig) -> Config {
    Config {
        models: config.models.clone(),
        agents: config.external_agents.clone(),
        sources: config.config_sources.clone(),
        ..Config::default()
    }
}

/// The agents' setup: external agents installed (once per machine), the
/// run's budgets.
pub(crate) fn agent_setup(config: &RunConfig, agent_config: Config) -> Result<AgentSetup, CliError> {
    Ok(AgentSetup {
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
    })
}

pub(crate) fn run_input<'a>(
    config: &RunConfig,
    tasks: &'a [Task],
    agents: &'a [AgentEntry],
    agent_setup: &'a AgentSetup,
    backend: &'a dyn cleanroom_env::Backend,
    artifacts: &'a cleanroom_runner::Staged,
    cancel: &CancelToken,
) -> RunInput<'a> {
    RunInput {
        tasks,
        agents,
        trials: config.trials,
        jobs: config.jobs as usize,
        retries: config.retries,
        timeout_multiplier: config.timeout_multiplier,
        allow_unlimited: config.allow_unlimited,
        agent_setup,
        backend,
        artifacts,
        cancel: cancel.clone(),
        progress_every: Some(PROGRESS_EVERY),
        cache: None,
    }
}

/// How often the terminal reports a trial still under way: its phase, how
/// long it has run, and the last line its agent printed.
pub const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

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

/// The configuration of a new run, from the flags (numbers are checked
/// when parsed, in args.rs).
fn fresh(args: &RunArgs, config_file: Option<&Path>) -> Result<RunConfig, CliError> {
    let agent_config = Config::load(config_file)?;
    // Only what the run's agents use goes into run.toml.
    let mut models = BTreeMap::new();
    let mut external_agents = BTreeMap::new();
    for spec in &args.agents {
        let parsed = AgentSpec::parse(spec, &agent_config)?;
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
    let gates = distinct_gates(args)?;
    let config = RunConfig {
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        created: cleanroom_store::rfc3339_utc_now(),
        run_id,
        backend: args.backend.clone().unwrap_or_else(|| cleanroom_env::BACKENDS[0].into()),
        accelerator: None,
        images: BTreeMap::new(),
        tasks,
        task_ids: args.task_ids.clone(),
        agents: StoredAgent::of_run(&args.agents, &gates),
        trials: args.trials.unwrap_or(DEFAULT_TRIALS),
        jobs: args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())) as u32,
        // With several gates each agent names its own; the first stands
        // for the run where one gate is shown.
        gate: gates.first().copied().unwrap_or(GateMode::Off),
        timeout_multiplier: args.timeout_multiplier.unwrap_or(1.0),
        retries: args.retries.unwrap_or(DEFAULT_RETRIES),
        max_steps: args.max_steps,
        max_tokens: args.max_tokens,
        max_cost_usd: args.max_cost,
        config_sources: agent_config.sources.clone(),
        models,
        external_agents,
        allow_unlimited: args.allow_unlimited,
        no_cache: args.no_cache,
        fail_under: args.fail_under,
        artifacts: BTreeMap::new(),
        slurm: slurm_options(args, &agent_config)?,
        task_info: BTreeMap::new(),
    };
    Ok(config)
}

/// The `--gate` modes in the order given, each once.
fn distinct_gates(args: &RunArgs) -> Result<Vec<GateMode>, CliError> {
    let mut gates = Vec::new();
    for gate in args.gates.iter().copied().map(GateMode::from) {
        if gates.contains(&gate) {
            return Err(input(format!("--gate {} is given twice: give each mode once", gate.as_str())));
        }
        gates.push(gate);
    }
    Ok(gates)
}

/// With `--executor slurm`: the configuration's `[slurm]`, the flags over
/// it. Slurm's flags without it are refused, not ignored.
fn slurm_options(args: &RunArgs, agent_config: &Config) -> Result<Option<SlurmOptions>, CliError> {
    if args.executor != Some(ExecutorArg::Slurm) {
        if let Some((flag, _)) = slurm_flags(args).iter().find(|(_, given)| *given) {
            return Err(input(format!("{flag} is an option of --executor slurm")));
        }
        return Ok(None);
    }
    let mut options = agent_config.slurm.clone();
    options.partition = args.partition.clone().or(options.partition);
    options.account = args.account.clone().or(options.account);
    options.time = args.slurm_time.clone().or(options.time);
    options.options.extend(args.sbatch_options.iter().cloned());
    Ok(Some(options))
}

/// Slurm's options, and whether each was given.
fn slurm_flags(args: &RunArgs) -> [(&'static str, bool); 4] {
    [
        ("--partition", args.partition.is_some()),
        ("--account", args.account.is_some()),
        ("--slurm-time", args.slurm_time.is_some()),
        ("--sbatch-option", !args.sbatch_options.is_empty()),
    ]
}

/// A resumed run takes its plan from run.toml: a flag that would change
/// it is refused rather than ignored. `--jobs` (how fast) and
/// `--fail-under` (a judgement of the results) are honoured and recorded.
/// The configuration file a resumed run was made with (the source laid
/// over the built-in defaults, recorded absolute), so that its backend (a
/// host pool, say) and its Slurm elements read the same one; a fresh run
/// reads the one it was given.
fn recorded_config_file(resumed: bool, config: &RunConfig) -> Option<PathBuf> {
    resumed.then(|| config.config_sources.iter().skip(1).last().map(PathBuf::from)).flatten()
}

/// The backend this process runs trials with; for an ordinary user's
/// Slurm run of the sandbox, one that leaves the environments to the
/// nodes, so that this process stays outside the user namespace where
/// Slurm would refuse its commands (slurm/submitter.rs).
fn submitting_backend(config: &RunConfig, config_file: Option<&Path>) -> Result<Box<dyn Backend>, CliError> {
    let rootless_submitter =
        config.slurm.is_some() && config.backend == "sandbox" && privilege::current() == Privilege::User;
    if !rootless_submitter {
        return prepare::backend(&config.backend, config_file);
    }
    Config::load(config_file)?;
    Ok(Box::new(RootlessSubmitter))
}

fn resume(path: &Path, args: &RunArgs, config_file: Option<&Path>) -> Result<(RunDir, RunConfig), CliError> {
    let mut plan_flags = vec![
        ("--tasks", !args.tasks.is_empty()),
        ("--task", !args.task_ids.is_empty()),
        ("--agent", !args.agents.is_empty()),
        ("--trials", args.trials.is_some()),
        ("--retries", args.retries.is_some()),
        ("--backend", args.backend.is_some()),
        ("--out", args.out.is_some()),
        ("--gate", !args.gates.is_empty()),
        ("--max-steps", args.max_steps.is_some()),
        ("--max-tokens", args.max_tokens.is_some()),
        ("--max-cost", args.max_cost.is_some()),
        ("--timeout-multiplier", args.timeout_multiplier.is_some()),
        ("--allow-unlimited", args.allow_unlimited),
        ("--no-cache", args.no_cache),
        ("--config", config_file.is_some()),
        ("--executor", args.executor.is_some()),
    ];
    plan_flags.extend(slurm_flags(args));
    let given: Vec<&str> = plan_flags.iter().filter(|(_, given)| *given).map(|(flag, _)| *flag).collect();
    if !given.is_empty() {
        return Err(input(format!(
            "--resume takes the plan from {}: drop {}",
            path.join("run.toml").display(),
            given.join(", ")
        )));
    }
    let run_dir = RunDir::open(path)?;
    let mut config = run_dir.read_run_config()?;
    if let Some(jobs) = args.jobs {
        config.jobs = jobs as u32;
    }
    if args.fail_under.is_some() {
        config.fail_under = args.fail_under;
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

pub(crate) fn parse_agents(config: &RunConfig, agent_config: &Config) -> Result<Vec<AgentEntry>, CliError> {
    config
        .agents
        .iter()
        .map(|a| {
            Ok(AgentEntry {
                spec: AgentSpec::parse(&a.spec, agent_config)?,
                spec_text: a.spec.clone(),
                id: a.id.clone(),
                gate: config.gate_of(a),
            })
        })
        .collect()
}
