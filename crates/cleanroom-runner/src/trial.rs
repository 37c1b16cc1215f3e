//! One attempt at one trial: a fresh environment, the agent phase and the
//! deployment's login shell in it, every agent process killed, the
//! artifact compared with its original, the hidden pipeline, the
//! environment destroyed, the record built.

use std::time::Instant;

use cleanroom_agent::{
    gate_mechanism, phase_mounts, populate_workspace, recorded_gate, run_agent, AgentRun, Stop,
};
use cleanroom_env::{EnvDiff, EnvError, EnvSpec, Globs, GpuDriver, Needs, Network, PhaseOptions, WalkLimits};
use cleanroom_store::{ChangeCounts, Outcome, TrialRecord, OUTPUTS_DIR};
use cleanroom_task::Task;
use cleanroom_verify::{
    protected_paths, read_login_env, run_pipeline, ChangeKind, Changes, LoginEnv, Outputs, Verdict,
};

use crate::cache_offer;
use crate::classify::classify;
use crate::env_diff;
use crate::event::{Phase, TrialFile, TrialKey};
use crate::progress::AttemptProgress;
use crate::{AgentEntry, RunInput};

/// Process limit of every environment (the task format has no key for it).
pub const PIDS_MAX: u64 = 4096;

/// A finished attempt; `repeat` is a second verification of the same
/// environment, when one was asked for (`tasks check`).
pub struct Attempt {
    pub record: TrialRecord,
    pub files: Vec<TrialFile>,
    pub repeat: Option<Result<Verdict, String>>,
}

pub enum AttemptEnd {
    Done(Box<Attempt>),
    /// Ctrl-C: no record, so a resumed run does the trial again.
    Interrupted,
}

/// Runs one attempt and classifies how it ended.
///
/// The rule: `infra_error` (retried, and left out of the pass rate) is for
/// failures of the harness and its host only: an environment or a phase
/// that cannot be made, a command that cannot be spawned, an artifact that
/// could not be staged, an environment that cannot be removed. Nothing an
/// agent does to its environment may end there, or an agent could hide the
/// trials it fails. So what the harness does with the environment after the
/// agent cannot fail on what it finds: env-diff and the tamper survey are
/// bounded (entries, depth, bytes, time) and record where they stopped,
/// with originals not reached counting as tampered; outputs are read
/// bounded, and an unreadable one fails its check; a verifier that cannot
/// be copied in for lack of disk, or steps that cannot run because the
/// machine is broken, fail the trial with the reason in `error`.
pub(crate) fn attempt(
    input: &RunInput,
    task: &Task,
    agent: &AgentEntry,
    key: &TrialKey,
    attempt: u32,
    verify_twice: bool,
    progress: &AttemptProgress,
) -> AttemptEnd {
    let mut record = TrialRecord::new(&key.task, &agent.spec_text, &agent.id, key.trial, attempt);
    let ctx = input.agent_setup.context(agent, input.timeout_multiplier);
    record.gate = recorded_gate(&agent.spec, &ctx, task);
    record.gate_mechanism = gate_mechanism(&agent.spec, &ctx, task);
    record.model = agent.spec.model().map(str::to_string);
    record.negative_control = task.spec.negative_control.is_some();
    let unmet = input.backend.unmet(&needs(task));
    if !unmet.is_empty() {
        record.outcome = Outcome::Skipped;
        record.skip_reason =
            Some(unmet.iter().map(|u| format!("{}: {}", u.need, u.why)).collect::<Vec<_>>().join("; "));
        record.finished_at = cleanroom_store::rfc3339_utc_now();
        return AttemptEnd::Done(Box::new(Attempt { record, files: Vec::new(), repeat: None }));
    }
    let mut files = Vec::new();
    let mut repeat = verify_twice.then(|| Err("not run".to_string()));
    match run(input, task, agent, &mut record, &mut files, &mut repeat, progress) {
        Ok(true) => {
            record.finished_at = cleanroom_store::rfc3339_utc_now();
            AttemptEnd::Done(Box::new(Attempt { record, files, repeat }))
        }
        Ok(false) => AttemptEnd::Interrupted,
        Err(_) if input.cancel.is_cancelled() => AttemptEnd::Interrupted,
        Err(e) => {
            record.outcome = Outcome::InfraError;
            record.class = None;
            record.error = Some(e.to_string());
            record.finished_at = cleanroom_store::rfc3339_utc_now();
            AttemptEnd::Done(Box::new(Attempt { record, files, repeat: None }))
        }
    }
}

/// Fills `record`; Ok(false) when interrupted. When `repeat` is Some, the
/// environment is verified a second time and the verdict put there.
fn run(
    input: &RunInput,
    task: &Task,
    agent: &AgentEntry,
    record: &mut TrialRecord,
    files: &mut Vec<TrialFile>,
    repeat: &mut Option<Result<Verdict, String>>,
    progress: &AttemptProgress,
) -> Result<bool, EnvError> {
    let staged = match input.artifacts.get(&task.id) {
        Some(Ok(staged)) => staged,
        Some(Err(why)) => return Err(EnvError::Phase(why.clone())),
        None => return Err(EnvError::Phase(format!("artifact of {} was not staged", task.id))),
    };
    let started = Instant::now();
    let needs = needs(task);
    let spec = EnvSpec {
        image: task.spec.environment.image.clone(),
        cpus: task.spec.environment.cpus,
        memory_mb: task.spec.environment.memory_mb,
        disk_mb: task.spec.environment.disk_mb,
        pids_max: PIDS_MAX,
        gpus: needs.gpus,
        gpu_driver: needs.gpu_driver,
        allow_unlimited: input.allow_unlimited,
        build: task.spec.environment.build.as_ref().map(|b| task.dir.join(b)),
    };
    let mut env = input.backend.create(&spec)?;
    record.limits = Some(env.limits());
    record.accelerator = input.backend.accelerator().map(String::from);
    record.machine = env.machine();
    let network = if task.spec.environment.network { Network::Outbound } else { Network::LoopbackOnly };
    let mut ctx = input.agent_setup.context(agent, input.timeout_multiplier);
    ctx.last_line = Some(progress.output.clone());
    env.begin_phase_with(
        network,
        &PhaseOptions { mounts: phase_mounts(&agent.spec, &ctx), agent: true, ..Default::default() },
    )?;
    populate_workspace(env.as_ref(), task, &staged.dir)?;
    // A task without network gets no packages either.
    let cache = match (input.cache, network) {
        (Some(cache), Network::Outbound) => Some(cache_offer::offer(cache, env.as_ref())?),
        _ => None,
    };
    record.timings.environment = started.elapsed().as_secs_f64();

    progress.phase(Phase::Agent);
    let agent_run = run_agent(&agent.spec, task, env.as_ref(), &ctx, &input.cancel);
    // The deployment's login environment, read by its own login shell
    // while this phase lasts: what the shell's profile does happens before
    // the tamper check, and dies with the agent's processes.
    let verify_started = Instant::now();
    let login = match &agent_run {
        Ok(run) if run.stop != Stop::Interrupted => read_login_env(env.as_ref(), &input.cancel),
        _ => LoginEnv::default(),
    };
    // Every process the agent started dies here, on every path.
    let ended = env.end_phase();
    record.cache = cache.map(cache_offer::bytes);
    let agent_run = agent_run?;
    ended?;
    files.push(file("agent.log", agent_run.output.to_bytes()));
    record_model_side(&agent_run, record, files);
    record.timings.agent = agent_run.duration.as_secs_f64();
    if agent_run.stop == Stop::Interrupted {
        return Ok(false);
    }
    record.stop_reason = agent_run.stop.reason();
    record.exit_code = agent_run.exit_code;
    record.gate_decisions = agent_run.gate.clone();

    progress.phase(Phase::Verify);
    let dest = &task.spec.artifact.dest;
    let diff = match env.diff(&input.cancel) {
        // The agent broke the machine: the record says so, the trial goes on
        // to fail.
        Err(EnvError::Broken(why)) => EnvDiff { changes: Vec::new(), incomplete: Some(why) },
        other => other?,
    };
    files.push(file("env-diff.txt", env_diff::render(&diff, dest).into_bytes()));
    let Ok(after) =
        env.files().manifest_against(dest, &staged.manifest, WalkLimits::default(), &input.cancel)
    else {
        return Ok(false);
    };
    let protected = Globs::new(&task.spec.verify.protected).map_err(EnvError::Phase)?;
    let changes = Changes::compare(&staged.manifest, &after, &protected);
    files.push(file("changes.txt", changes.render().into_bytes()));
    if let (Some(why), true) = (&changes.incomplete, changes.is_tampered()) {
        record.error.get_or_insert_with(|| {
            format!(
                "the tamper check of {dest} stopped early ({why}): originals not reached count as changed"
            )
        });
    }
    record.changes = Some(count(&changes));
    record.tampered = changes.tampered.clone();

    let mut verify_log = Vec::new();
    let sealed = protected_paths(dest, &staged.manifest, &protected);
    let mut outputs = Outputs::default();
    let verdict =
        run_pipeline(env.as_mut(), task, &sealed, &login, &input.cancel, &mut verify_log, Some(&mut outputs));
    files.push(file("verify.log", verify_log));
    // What the steps wrote, for the task's author (outputs/ of the trial).
    files.extend(outputs.files.into_iter().map(|o| file(&format!("{OUTPUTS_DIR}/{}", o.path), o.bytes)));
    let verdict = match verdict {
        Ok(verdict) => Some(verdict),
        // The agent filled its disk: the verifier could not even be copied
        // in. That is the agent's doing, not the harness's: a failure.
        Err(e) if is_disk_full(&e) => {
            record.error =
                Some(format!("verification could not start: the environment's disk is full ({e})"));
            None
        }
        Err(EnvError::Broken(why)) => {
            record.error = Some(format!("verification could not run: {why}"));
            None
        }
        Err(e) => return Err(e),
    };
    record.timings.verify = verify_started.elapsed().as_secs_f64();
    if let Some(second) = repeat.as_mut() {
        *second = run_pipeline(env.as_mut(), task, &sealed, &login, &input.cancel, &mut Vec::new(), None)
            .map_err(|e| e.to_string());
    }
    env.destroy()?;

    let passed = verdict.as_ref().is_some_and(|v| v.passed);
    let (outcome, class) = classify(agent_run.stop, passed, changes.is_tampered());
    record.outcome = outcome;
    record.class = class;
    if let Some(verdict) = verdict {
        record.stage = verdict.stage;
        record.verdict = Some(verdict);
    }
    if record.outcome == Outcome::Failed {
        let log = |name: &str| files.iter().find(|f| f.name == name).map_or(&[][..], |f| f.bytes.as_slice());
        record.tags = crate::classify_tags::tags(log("agent.log"), log("verify.log"), record);
        if record.stop_reason == Some(cleanroom_store::StopReason::Finished) {
            let trajectory = agent_run.model.as_ref().and_then(|m| m.trajectory.as_ref());
            let command = task.spec.experiment.as_ref().and_then(|e| e.command.as_deref());
            if let Some(tag) = trajectory.and_then(|t| crate::classify_trajectory::weaker_target(t, command))
            {
                merge_tag(&mut record.tags, tag);
            }
        }
    }
    Ok(true)
}

/// What `task` needs of a backend's machines.
pub(crate) fn needs(task: &Task) -> Needs {
    let needs_gpu = task.spec.task.gpu || task.spec.environment.gpus > 0;
    let gpus = if needs_gpu { task.spec.environment.gpus.max(1) } else { 0 };
    let gpu_driver = match task.spec.environment.gpu_driver {
        cleanroom_task::GpuDriver::Host => GpuDriver::Host,
        cleanroom_task::GpuDriver::Agent => GpuDriver::Agent,
    };
    Needs::new(gpus, task.spec.task.qemu, task.spec.environment.network)
        .with_gpu_driver(gpu_driver)
        .with_machine(task.spec.environment.machine)
        .with_build(task.spec.environment.build.is_some())
}

/// Adds `tag`, or its evidence to the tag of that name already there.
fn merge_tag(tags: &mut Vec<cleanroom_store::Tag>, tag: cleanroom_store::Tag) {
    match tags.iter_mut().find(|t| t.name == tag.name) {
        Some(existing) => existing.evidence.extend(tag.evidence),
        None => tags.push(tag),
    }
}

fn file(name: &str, bytes: Vec<u8>) -> TrialFile {
    TrialFile { name: name.to_string(), bytes }
}

/// Tokens, cost and the model's error into the record; the trajectory, the
/// exchanges and the agent's own logs into the trial's files.
fn record_model_side(run: &AgentRun, record: &mut TrialRecord, files: &mut Vec<TrialFile>) {
    let Some(m) = &run.model else { return };
    record.tokens.prompt = m.usage.prompt;
    record.tokens.completion = m.usage.completion;
    record.tokens.cached = m.usage.cached;
    record.cost_usd = m.cost_usd;
    record.steps = Some(m.requests);
    record.model_retries = Some(m.retries);
    if let Some(why) = &m.error {
        record.error = Some(why.clone());
    }
    if let Some(t) = &m.trajectory {
        files.push(file("trajectory.json", serde_json::to_vec_pretty(t).unwrap_or_default()));
    }
    files.push(file("model-exchanges.jsonl", m.exchanges.clone()));
    for (name, bytes) in &m.native_logs {
        // A name of the agent's choosing never becomes a path or result.json.
        let base = name
            .rsplit('/')
            .next()
            .unwrap_or("log")
            .replace(|c: char| !c.is_ascii_alphanumeric() && c != '.' && c != '-' && c != '_', "_");
        files.push(file(&format!("agent-own-{base}"), bytes.clone()));
    }
}

fn is_disk_full(e: &EnvError) -> bool {
    use std::io::ErrorKind;
    matches!(e, EnvError::Io { source, .. }
        if matches!(source.kind(), ErrorKind::StorageFull | ErrorKind::QuotaExceeded))
}

fn count(changes: &Changes) -> ChangeCounts {
    let mut counts = ChangeCounts::default();
    for c in &changes.changes {
        match c.kind {
            ChangeKind::Added => counts.added += 1,
            ChangeKind::Removed => counts.removed += 1,
            ChangeKind::Modified | ChangeKind::TypeChanged => counts.modified += 1,
        }
    }
    counts
}
