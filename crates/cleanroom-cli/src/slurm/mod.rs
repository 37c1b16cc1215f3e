//! The Slurm executor (`cleanroom run --executor slurm`): each attempt is
//! an element of a job array, run on a node by `cleanroom slurm-trial`
//! (node.rs) with that node's backend, reporting through the run
//! directory, which must be on a file system the nodes share. This
//! process submits the arrays (one per set of task resources: CPUs,
//! memory, GPUs as gres, time), follows each element through what it
//! reports and what squeue says of it, and records each attempt itself:
//! an element that ends without a record (its node died, it was killed)
//! is an infra_error attempt, retried by the runner like any other.
//!
//! Ctrl-C cancels the run's elements. If this process dies instead, the
//! elements go on, and `cleanroom run --resume RUN_DIR` takes up what they
//! reported and waits for those still running (slurm/jobs.jsonl).

mod commands;
pub mod node;
mod submitter;

pub use submitter::RootlessSubmitter;

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use cleanroom_env::SlurmOptions;
use cleanroom_runner::{
    AgentEntry, Attempt, AttemptEnd, AttemptProgress, Executor, Phase, RunInput, Todo, TrialKey,
};
use cleanroom_store::{ExecutorRecord, RemoteAttempt, TrialRecord};
use cleanroom_task::Task;
use serde::{Deserialize, Serialize};

/// How often an element's report is looked at, and how often squeue is
/// asked about it.
const LOOK_EVERY: Duration = Duration::from_millis(500);
const ASK_EVERY: Duration = Duration::from_secs(5);
/// Memory for cleanroom itself on the node, beyond the task's.
const HARNESS_MB: u64 = 1024;
/// Time for the node's preparation and the harness's own work, beyond the
/// task's budgets.
const HARNESS_MINUTES: u64 = 30;

/// One attempt of a job array's list (slurm/lists/*.json), by index.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Listed {
    pub task: String,
    pub agent_id: String,
    pub trial: u32,
    pub attempt: u32,
}

/// A submitted array, as slurm/jobs.jsonl keeps it for a resumed run.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Submitted {
    job: String,
    list: Vec<Listed>,
}

/// Where an attempt runs: element `index` of job `job`.
#[derive(Debug, Clone)]
pub struct Element {
    pub job: String,
    pub index: usize,
}

impl Element {
    /// The record's `executor` for an attempt of this element on `node`.
    pub fn record(&self, node: &str) -> ExecutorRecord {
        ExecutorRecord {
            name: "slurm".into(),
            job_id: format!("{}_{}", self.job, self.index),
            node: node.into(),
        }
    }
}

pub struct SlurmExecutor {
    run: PathBuf,
    options: SlurmOptions,
    /// The command line before `slurm-trial`: this cleanroom, its --config.
    program: Vec<String>,
    /// Elements of an array that run at once.
    at_once: usize,
    elements: Mutex<HashMap<(TrialKey, u32), Result<Element, String>>>,
    /// Lists written by this process, to name the next.
    lists: AtomicUsize,
}

impl SlurmExecutor {
    pub fn new(
        run: &Path,
        options: SlurmOptions,
        config_file: Option<&Path>,
        at_once: usize,
    ) -> Result<SlurmExecutor, String> {
        let run = run.canonicalize().map_err(|e| format!("{}: {e}", run.display()))?;
        let exe = std::env::current_exe().map_err(|e| format!("this cleanroom's path: {e}"))?;
        let mut program = vec![exe.display().to_string()];
        if let Some(file) = config_file {
            let file = file.canonicalize().map_err(|e| format!("{}: {e}", file.display()))?;
            program.extend(["--config".into(), file.display().to_string()]);
        }
        for dir in ["slurm/lists", "slurm/logs"] {
            std::fs::create_dir_all(run.join(dir))
                .map_err(|e| format!("{}: {e}", run.join(dir).display()))?;
        }
        Ok(SlurmExecutor {
            run,
            options,
            program,
            at_once,
            elements: Mutex::default(),
            lists: AtomicUsize::new(0),
        })
    }

    /// The sbatch options of an array of `task`'s attempts.
    fn resources(&self, task: &Task, multiplier: f64) -> Vec<String> {
        let env = &task.spec.environment;
        let mut out = vec![
            format!("--cpus-per-task={}", env.cpus.max(1)),
            format!("--mem={}M", env.memory_mb + HARNESS_MB),
        ];
        if env.gpus > 0 {
            out.push(format!("--gres=gpu:{}", env.gpus));
        }
        let budget =
            (task.spec.agent.timeout_sec as f64 * multiplier) as u64 + task.spec.verify.timeout_sec * 2;
        let minutes = budget.div_ceil(60) + HARNESS_MINUTES;
        out.push(format!("--time={}", self.options.time.clone().unwrap_or_else(|| minutes.to_string())));
        if let Some(p) = &self.options.partition {
            out.push(format!("--partition={p}"));
        }
        if let Some(a) = &self.options.account {
            out.push(format!("--account={a}"));
        }
        out.extend(self.options.options.iter().cloned());
        out
    }

    /// Submits one array of `list`, all of `task`'s resources.
    fn submit(&self, task: &Task, multiplier: f64, list: Vec<Listed>) -> Result<String, String> {
        let n = self.lists.fetch_add(1, Ordering::SeqCst) + 1;
        let path = self.run.join(format!("slurm/lists/{}-{n}.json", std::process::id()));
        let text = serde_json::to_vec_pretty(&list).map_err(|e| e.to_string())?;
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut words = self.program.clone();
        words.extend(["slurm-trial".into(), "--run-dir".into(), self.run.display().to_string()]);
        words.extend(["--list".into(), path.display().to_string()]);
        let script = format!("exec {}", words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" "));
        let mut options = self.resources(task, multiplier);
        let run_id = self.run.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        options.push(format!("--job-name=cleanroom-{run_id}"));
        options.push(format!("--array=0-{}%{}", list.len() - 1, self.at_once.max(1)));
        let job = commands::sbatch(&options, &script, &self.run.join("slurm/logs"))?;
        let line = serde_json::to_string(&Submitted { job: job.clone(), list }).map_err(|e| e.to_string())?;
        let jobs = self.run.join("slurm/jobs.jsonl");
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&jobs)
            .map_err(|e| format!("{}: {e}", jobs.display()))?;
        writeln!(file, "{line}").map_err(|e| format!("{}: {e}", jobs.display()))?;
        Ok(job)
    }

    /// Elements submitted before (by a run this one resumes) that Slurm
    /// still runs or will run.
    fn still_running(&self) -> HashMap<(TrialKey, u32), Element> {
        let text = std::fs::read_to_string(self.run.join("slurm/jobs.jsonl")).unwrap_or_default();
        let mut out = HashMap::new();
        for submitted in text.lines().filter_map(|l| serde_json::from_str::<Submitted>(l).ok()) {
            for (index, listed) in submitted.list.iter().enumerate() {
                let alive =
                    commands::element_state(&submitted.job, index).ok().flatten().is_some_and(|s| !s.ended());
                if alive {
                    out.insert(
                        (key_of(listed), listed.attempt),
                        Element { job: submitted.job.clone(), index },
                    );
                }
            }
        }
        out
    }

    fn report(&self, key: &TrialKey, attempt: u32) -> Result<RemoteAttempt, String> {
        RemoteAttempt::at(&self.run, &key.task, &key.agent_id, key.trial, attempt).map_err(|e| e.to_string())
    }

    /// The record of an attempt whose element ended without one.
    fn lost(
        &self,
        agent: &AgentEntry,
        key: &TrialKey,
        attempt: u32,
        why: String,
        at: Option<(&Element, &str)>,
    ) -> AttemptEnd {
        let mut record = TrialRecord::new(&key.task, &agent.spec_text, &agent.id, key.trial, attempt);
        record.error = Some(why);
        record.executor = at.map(|(element, node)| element.record(node));
        AttemptEnd::Done(Box::new(Attempt { record, files: Vec::new(), repeat: None }))
    }
}

fn key_of(listed: &Listed) -> TrialKey {
    TrialKey { task: listed.task.clone(), agent_id: listed.agent_id.clone(), trial: listed.trial }
}

fn listed(key: &TrialKey, attempt: u32) -> Listed {
    Listed { task: key.task.clone(), agent_id: key.agent_id.clone(), trial: key.trial, attempt }
}

fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

impl Executor for SlurmExecutor {
    /// Every attempt is waited for at once: the arrays' throttle keeps
    /// `--jobs` of each running.
    fn workers(&self, jobs: usize, todo: usize) -> usize {
        todo.max(jobs)
    }

    fn begin(&self, input: &RunInput, todo: &[Todo]) {
        let running = self.still_running();
        let mut groups: BTreeMap<Vec<String>, (usize, Vec<Listed>)> = BTreeMap::new();
        let mut elements = self.elements.lock().unwrap_or_else(|p| p.into_inner());
        for t in todo {
            // Reported while no process was attached: attempt() takes it up.
            if self.report(&t.key, t.first_attempt).is_ok_and(|r| r.is_done()) {
                continue;
            }
            if let Some(element) = running.get(&(t.key.clone(), t.first_attempt)) {
                elements.insert((t.key.clone(), t.first_attempt), Ok(element.clone()));
                continue;
            }
            let Some(at) = input.tasks.iter().position(|task| task.id == t.key.task) else { continue };
            let group = groups
                .entry(self.resources(&input.tasks[at], input.timeout_multiplier))
                .or_insert_with(|| (at, Vec::new()));
            group.1.push(listed(&t.key, t.first_attempt));
        }
        for (_, (at, list)) in groups {
            let submitted = self.submit(&input.tasks[at], input.timeout_multiplier, list.clone());
            for (index, l) in list.iter().enumerate() {
                let element = submitted.clone().map(|job| Element { job, index });
                elements.insert((key_of(l), l.attempt), element);
            }
        }
    }

    fn attempt(
        &self,
        input: &RunInput,
        task: &Task,
        agent: &AgentEntry,
        key: &TrialKey,
        attempt: u32,
        _verify_twice: bool,
        progress: &AttemptProgress,
    ) -> AttemptEnd {
        let report = match self.report(key, attempt) {
            Ok(r) => r,
            Err(why) => return self.lost(agent, key, attempt, why, None),
        };
        let known = self.elements.lock().unwrap_or_else(|p| p.into_inner()).remove(&(key.clone(), attempt));
        // None: reported already, while no process was attached.
        let element = match known {
            Some(element) => element.map(Some),
            None if report.is_done() => Ok(None),
            // A retry: an array of its own.
            None => self
                .submit(task, input.timeout_multiplier, vec![listed(key, attempt)])
                .map(|job| Some(Element { job, index: 0 })),
        };
        let element = match element {
            Ok(e) => e,
            Err(why) => return self.lost(agent, key, attempt, format!("submitting to Slurm: {why}"), None),
        };
        let mut seen_phase = None;
        let mut asked = Instant::now();
        loop {
            match report.outcome() {
                Ok(Some((record, files))) => {
                    report.remove();
                    return AttemptEnd::Done(Box::new(Attempt { record, files, repeat: None }));
                }
                Ok(None) => {}
                Err(e) => {
                    return self.lost(agent, key, attempt, format!("reading the node's report: {e}"), None)
                }
            }
            if input.cancel.is_cancelled() {
                if let Some(element) = &element {
                    commands::scancel(&element.job, element.index);
                }
                return AttemptEnd::Interrupted;
            }
            let now = report.phase();
            if now != seen_phase {
                match now.as_deref() {
                    Some("agent") => progress.phase(Phase::Agent),
                    Some("verify") => progress.phase(Phase::Verify),
                    _ => {}
                }
                seen_phase = now;
            }
            if let Some(element) = element.as_ref().filter(|_| asked.elapsed() >= ASK_EVERY) {
                asked = Instant::now();
                let state = commands::element_state(&element.job, element.index);
                let ended = match &state {
                    Ok(Some(s)) => s.ended().then(|| (s.state.clone(), s.node.clone())),
                    Ok(None) => Some(("gone".to_string(), String::new())),
                    Err(_) => None,
                };
                // Its report may have come just before it ended.
                if let (Some((state, node)), false) = (ended, report.is_done()) {
                    let log = self.run.join(format!("slurm/logs/{}_{}.out", element.job, element.index));
                    let why = format!(
                        "the Slurm job {}_{} ended ({state}){} without a result; its log: {}",
                        element.job,
                        element.index,
                        if node.is_empty() { String::new() } else { format!(" on {node}") },
                        log.display()
                    );
                    return self.lost(agent, key, attempt, why, Some((element, &node)));
                }
            }
            std::thread::sleep(LOOK_EVERY);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tasks_resources_and_the_runs_options_become_its_jobs_options() {
        let run = std::env::temp_dir().join(format!("cleanroom-slurm-resources-{}", std::process::id()));
        std::fs::create_dir_all(&run).unwrap();
        let options = SlurmOptions {
            partition: Some("gpu".into()),
            account: Some("lab".into()),
            time: None,
            options: vec!["--qos=low".into()],
        };
        let executor = SlurmExecutor::new(&run, options, None, 2).unwrap();
        let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tasks/fd-anharmonic");
        let mut task = cleanroom_task::load_task(&examples).unwrap();
        task.spec.environment.cpus = 4;
        task.spec.environment.memory_mb = 8192;
        task.spec.environment.gpus = 2;
        task.spec.agent.timeout_sec = 3600;
        task.spec.verify.timeout_sec = 900;
        // 2 x 3600 s for the agent, the verifier's budget twice, 30 min
        // for the harness: 180 minutes.
        let expected = [
            "--cpus-per-task=4",
            "--mem=9216M",
            "--gres=gpu:2",
            "--time=180",
            "--partition=gpu",
            "--account=lab",
            "--qos=low",
        ];
        assert_eq!(executor.resources(&task, 2.0), expected);
        let fixed = SlurmExecutor::new(
            &run,
            SlurmOptions { time: Some("1:00:00".into()), ..Default::default() },
            None,
            2,
        )
        .unwrap();
        assert!(fixed.resources(&task, 2.0).contains(&"--time=1:00:00".to_string()));
        std::fs::remove_dir_all(&run).unwrap();
    }
}
