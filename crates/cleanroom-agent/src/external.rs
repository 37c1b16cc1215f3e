//! External agent CLIs (`command:NAME`). Each is installed once on the host
//! into a prefix that carries its own runtime, shown read-only inside the
//! environment at the same path, and started by absolute path; its model
//! traffic goes through the trial's forwarder, which holds the real key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use cleanroom_env::{CancelToken, Captured, EnvError, Environment, ExecRequest, Files, Globs};
use cleanroom_model::atif;
use cleanroom_model::forwarder::{Fatal, Forwarder, GateAnswer, OnGate, PORT};
use cleanroom_model::{Budget, ChatClient, ExternalAgent, GateMechanism, Gateway, Meter};
use cleanroom_task::Task;

use crate::llm::gate::Gate;
use crate::restart::{self, RestartFiles};
use crate::workspace::{agent_environment, random_hex, WORKSPACE};
use crate::{stop_of, AgentContext, AgentRun, ModelRecord, Stop, AGENT_OUTPUT_LIMIT};

/// Marks a finished installation (a prefix without it is redone).
const DONE_MARKER: &str = ".cleanroom-ready";

/// Most bytes kept of one of the agent's own log files.
const NATIVE_LOG_LIMIT: u64 = 64 << 20;

/// Where an agent's installation goes: one prefix per install script, so
/// a changed script installs afresh and an unchanged one is reused.
pub fn prefix_for(home: &Path, name: &str, agent: &ExternalAgent) -> PathBuf {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    hasher.update(agent.install_script.as_bytes());
    for (rel, text) in &agent.install_files {
        hasher.update(format!("\0{rel}\0{}\0", text.len()).as_bytes());
        hasher.update(text.as_bytes());
    }
    let digest = hasher.finalize();
    let short: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
    home.join("agents").join(format!("{name}-{short}"))
}

/// Installs `agent` under `home` unless it is already there; returns the
/// prefix. Concurrent runs wait for each other (a lock file).
pub fn install(
    home: &Path,
    name: &str,
    agent: &ExternalAgent,
    progress: &mut dyn FnMut(String),
) -> Result<PathBuf, String> {
    let prefix = prefix_for(home, name, agent);
    if prefix.join(DONE_MARKER).exists() {
        return Ok(prefix);
    }
    let parent = prefix.parent().expect("a prefix has a parent");
    std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    // Not `PREFIX.lock`: install scripts may take that one themselves.
    let lock_path = prefix.with_extension("install-lock");
    let lock = std::fs::File::create(&lock_path).map_err(|e| format!("{}: {e}", lock_path.display()))?;
    // SAFETY: flock on a file we hold open; released when it closes.
    if unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) } != 0 {
        return Err(format!("lock {}: {}", lock_path.display(), std::io::Error::last_os_error()));
    }
    if prefix.join(DONE_MARKER).exists() {
        return Ok(prefix);
    }
    if prefix.exists() {
        std::fs::remove_dir_all(&prefix)
            .map_err(|e| format!("remove the partial {}: {e}", prefix.display()))?;
    }
    progress(format!("installing agent {name} ({}) into {}", agent.version, prefix.display()));
    let log_path = prefix.with_extension("install.log");
    let log = std::fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let started = Instant::now();
    let script = write_recipe(&prefix.with_extension("recipe"), agent)?;
    let status = Command::new("bash")
        .arg(&script)
        .arg(&prefix)
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(|e| e.to_string())?)
        .stderr(log)
        .status()
        .map_err(|e| format!("start bash: {e}"))?;
    if !status.success() {
        // A recipe's last line says what it missed (a host requirement, as
        // `die` in agents/_lib/common.sh words it).
        let last = last_line(&log_path).map(|l| format!(": {l}")).unwrap_or_default();
        return Err(format!("installing agent {name} failed ({status}){last}; see {}", log_path.display()));
    }
    std::fs::write(prefix.join(DONE_MARKER), format!("{}\n", agent.version))
        .map_err(|e| format!("{}: {e}", prefix.display()))?;
    progress(format!("installed agent {name} in {:.0} s", started.elapsed().as_secs_f64()));
    Ok(prefix)
}

/// The last non-empty line of the file at `path` (from its last 4 KB).
fn last_line(path: &Path) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(4096))).ok()?;
    let mut tail = Vec::new();
    file.read_to_end(&mut tail).ok()?;
    String::from_utf8_lossy(&tail).lines().map(str::trim).rfind(|l| !l.is_empty()).map(str::to_string)
}

/// Writes the install script and its files under `dir`, laid out as the
/// relative paths say (the script sits deep enough for `../` to stay inside),
/// and returns the script's path.
fn write_recipe(dir: &Path, agent: &ExternalAgent) -> Result<PathBuf, String> {
    let depth = agent
        .install_files
        .keys()
        .map(|rel| rel.split('/').filter(|c| *c == "..").count())
        .max()
        .unwrap_or(0);
    let _ = std::fs::remove_dir_all(dir);
    let mut script_dir = dir.to_path_buf();
    for _ in 0..depth {
        script_dir.push("recipe");
    }
    let write = |path: &Path, text: &str| -> Result<(), String> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
    };
    let script = script_dir.join("install.sh");
    write(&script, &agent.install_script)?;
    for (rel, text) in &agent.install_files {
        write(&script_dir.join(rel), text)?;
    }
    Ok(script)
}

enum GateMessage {
    /// The agent's stop hook asks; the answer goes back on the sender.
    Stop(mpsc::Sender<GateAnswer>),
    AgentEnded,
}

/// The gate over one external agent's runs: it asks the gate when the
/// agent stops, keeps the decisions for the trajectory, and notes whether
/// the agent acted since the last one (from the forwarder's exchanges).
struct Holder<'a> {
    gate: Gate,
    env: &'a dyn Environment,
    task: &'a Task,
    gateway: &'a Gateway,
    deadline: Instant,
    cancel: &'a CancelToken,
    /// The trajectory's records of the decisions.
    decisions: Vec<serde_json::Value>,
    /// The exchanges already seen at the last decision.
    seen: usize,
}

impl Holder<'_> {
    /// The gate's decision on a stop in run `run`: the message for the
    /// agent when it may not stop yet. A gate that cannot run lets the
    /// agent stop (and says why).
    fn ask(&mut self, run: u32) -> Option<String> {
        let exchanges = self.gateway.exchanges();
        if restart::acted(exchanges.get(self.seen..).unwrap_or_default()) {
            self.gate.note_action();
        }
        self.seen = exchanges.len();
        let decision = match self.gate.on_finish(self.env, self.task, self.deadline, self.cancel) {
            Ok(decision) => decision,
            Err(e) => self.gate.note_failure(&e.to_string()),
        };
        let mut record = decision.to_json();
        record["run"] = run.into();
        self.decisions.push(record);
        decision.message(self.task, "stop")
    }
}

/// Installs every external agent the run uses.
pub fn install_all(
    home: &Path,
    names: &[String],
    config: &crate::Config,
    progress: &mut dyn FnMut(String),
) -> Result<BTreeMap<String, PathBuf>, String> {
    let mut out = BTreeMap::new();
    for name in names {
        let agent = config.agent(name)?;
        out.insert(name.clone(), install(home, name, agent, progress)?);
    }
    Ok(out)
}

pub(crate) fn run(
    name: &str,
    model_name: &str,
    task: &Task,
    env: &dyn Environment,
    ctx: &AgentContext,
    timeout: Duration,
    cancel: &CancelToken,
) -> Result<AgentRun, EnvError> {
    let started = Instant::now();
    let spec = crate::AgentSpec::Command { name: name.into(), model: model_name.into() };
    let recorded_gate = crate::recorded_gate(&spec, ctx, task);
    let held_by = crate::gate_mechanism(&spec, ctx, task);
    let agent = ctx.config.agent(name).map_err(EnvError::Phase)?;
    let model = ctx.config.model(model_name).map_err(EnvError::Phase)?;
    let prefix =
        ctx.installed.get(name).ok_or_else(|| EnvError::Phase(format!("agent {name} was not installed")))?;
    let deadline = started + timeout;
    // One budget for all the agent's runs: a restart gets what is left.
    let budget = Budget {
        max_steps: ctx.max_steps,
        max_tokens: ctx.max_tokens,
        max_cost_usd: ctx.max_cost_usd,
        deadline: Some(deadline),
    };
    let client = match ChatClient::new(model) {
        Ok(c) => c,
        Err(e) => return Ok(crate::llm::model_failure(started, model_name, e.to_string())),
    };
    let gateway = Arc::new(Gateway::new(client, Meter::new(budget)));
    let agent_cancel = cancel.child().map_err(|e| EnvError::io("cancel token", e))?;
    let fatal: Arc<Mutex<Option<Fatal>>> = Arc::new(Mutex::new(None));
    let on_fatal = {
        let (fatal, agent_cancel) = (fatal.clone(), agent_cancel.clone());
        Arc::new(move |why: Fatal| {
            fatal.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(why);
            agent_cancel.cancel();
        })
    };
    let token = format!("cleanroom-{}", random_hex());
    let listener = env.listen_loopback(PORT)?;
    // The stop hook's questions come here, to be answered on this thread
    // (which has the environment) while the agent runs on another.
    let hooked = held_by == Some(GateMechanism::Hook);
    let (to_gate, gate_requests) = mpsc::channel::<GateMessage>();
    let on_gate: Option<OnGate> = hooked.then(|| {
        let to_gate = Mutex::new(to_gate.clone());
        Arc::new(move || {
            let (reply, answer) = mpsc::channel();
            let sent = to_gate.lock().unwrap_or_else(|p| p.into_inner()).send(GateMessage::Stop(reply));
            let allow = GateAnswer { allow_stop: true, message: String::new() };
            if sent.is_err() {
                return allow;
            }
            answer.recv().unwrap_or(allow)
        }) as OnGate
    });
    let forwarder =
        Forwarder::start(listener, gateway.clone(), token.clone(), model_name.to_string(), on_fatal, on_gate)
            .map_err(|e| EnvError::io("start the model forwarder", e))?;

    let private = format!("/tmp/.cleanroom-agent-{}", random_hex());
    let log_dir = format!("{private}/log");
    let root = env.files();
    root.create_dir_all(&log_dir, 0o755).map_err(|e| EnvError::io(log_dir.clone(), e))?;
    let script = format!("{private}/run.sh");
    root.write_file(&script, agent.run_script.as_bytes(), 0o700)
        .map_err(|e| EnvError::io(script.clone(), e))?;
    let mut vars = agent_environment();
    vars.extend(
        [
            ("CLEANROOM_AGENT_PREFIX", prefix.to_string_lossy().into_owned()),
            ("CLEANROOM_MODEL_BASE_URL", format!("http://127.0.0.1:{PORT}")),
            ("CLEANROOM_MODEL_TOKEN", token),
            ("CLEANROOM_MODEL", model_name.to_string()),
            ("CLEANROOM_WORKDIR", WORKSPACE.to_string()),
            ("CLEANROOM_LOG_DIR", log_dir.clone()),
        ]
        .map(|(k, v)| (k.to_string(), v)),
    );
    if hooked {
        vars.push(("CLEANROOM_GATE".into(), recorded_gate.as_str().into()));
    }
    let steps_used_up = || ctx.max_steps.is_some_and(|max| gateway.totals().requests >= max);
    let mut holder = Holder {
        gate: Gate::new(ctx.gate),
        env,
        task,
        gateway: &gateway,
        deadline,
        cancel: &agent_cancel,
        decisions: Vec::new(),
        seen: 0,
    };
    let mut output = Captured::new(AGENT_OUTPUT_LIMIT);
    let mut native_logs = Vec::new();
    let mut run = 1;
    let mut runs = || -> Result<cleanroom_env::ExecOutcome, EnvError> {
        let mut restart: Option<RestartFiles> = None;
        loop {
            let mut req = ExecRequest {
                argv: vec!["/bin/bash".into(), script.clone()],
                cwd: WORKSPACE.into(),
                env: vars.clone(),
                timeout: Some(deadline.saturating_duration_since(Instant::now())),
                grace: Duration::from_secs(10),
                output_limit: AGENT_OUTPUT_LIMIT,
                last_line: ctx.last_line.clone(),
            };
            let instruction = restart
                .as_ref()
                .map_or_else(|| format!("{WORKSPACE}/INSTRUCTION.md"), |r| r.instruction.clone());
            let steps_left =
                ctx.max_steps.map(|max| max.saturating_sub(gateway.totals().requests).to_string());
            req.env.extend(
                [
                    ("CLEANROOM_INSTRUCTION_FILE", instruction),
                    ("CLEANROOM_MAX_STEPS", steps_left.unwrap_or_default()),
                    ("CLEANROOM_RUN", run.to_string()),
                ]
                .map(|(k, v)| (k.to_string(), v)),
            );
            if let Some(resume) = restart.as_ref().and_then(|r| r.resume.clone()) {
                req.env.push(("CLEANROOM_RESUME_FILE".into(), resume));
            }
            let out = std::thread::scope(|scope| {
                let running = scope.spawn(|| {
                    let out = env.exec(&req, &agent_cancel);
                    let _ = to_gate.send(GateMessage::AgentEnded);
                    out
                });
                while let Ok(GateMessage::Stop(reply)) = gate_requests.recv() {
                    let answer = match holder.ask(run) {
                        Some(message) => GateAnswer { allow_stop: false, message },
                        None => GateAnswer { allow_stop: true, message: String::new() },
                    };
                    let _ = reply.send(answer);
                }
                running.join().unwrap_or_else(|_| Err(EnvError::Phase("the agent's thread panicked".into())))
            })?;
            output.push(&out.combined.to_bytes());
            native_logs.push(read_native_logs(root, &log_dir, &agent.logs));
            // Started again only when the CLI ended on its own, with budget
            // left, and the gate will not let it stop.
            let ended_on_its_own = matches!(out.status, cleanroom_env::ExitStatus::Exited(_))
                && fatal.lock().unwrap_or_else(|p| p.into_inner()).is_none()
                && !cancel.is_cancelled()
                && !steps_used_up();
            if held_by != Some(GateMechanism::Restart) || !ended_on_its_own {
                return Ok(out);
            }
            let Some(report) = holder.ask(run) else { return Ok(out) };
            if Instant::now() >= deadline {
                return Ok(out);
            }
            run += 1;
            let instruction = task.agent_instruction();
            let exchanges = gateway.exchanges();
            restart = Some(restart::write_files(
                root,
                &private,
                run,
                agent.resume,
                &instruction,
                &report,
                &exchanges,
            )?);
            let note =
                format!("\n[cleanroom] the gate refused the stop; starting the agent again (run {run})\n");
            output.push(note.as_bytes());
        }
    };
    let out = runs();
    forwarder.stop();
    let out = out?;
    let (mut stop, exit_code) = stop_of(&out.status);
    let fatal = fatal.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let mut error = None;
    if !cancel.is_cancelled() {
        match fatal {
            Some(Fatal::Budget) => {
                stop = match gateway.meter().exhausted() {
                    Some(cleanroom_model::Exhausted::Time) => Stop::Timeout,
                    why => {
                        error = why.map(|w| w.describe().to_string());
                        Stop::Budget
                    }
                }
            }
            Some(Fatal::ModelFailed(why)) => {
                stop = Stop::Crash;
                error = Some(why);
            }
            // The agent's own step limit is set from --max-steps: ending
            // there is the budget running out, whoever noticed first.
            None if stop == Stop::Finished && steps_used_up() => {
                stop = Stop::Budget;
                error = Some("step budget (--max-steps) used up (the agent's own limit)".into());
            }
            None => {}
        }
    }
    // The agent's scaffolding goes; what the agent itself did stays.
    if let Some(dir) = private.strip_prefix("/tmp/") {
        if let Ok(globs) = Globs::new(&[dir.to_string()]) {
            let _ = root.remove_matching("/tmp", &globs, cancel);
        }
    }
    let totals = gateway.totals();
    let mut trajectory = atif::from_exchanges(&gateway.exchanges(), name, &agent.version, model_name);
    trajectory.extra.insert("stop".into(), crate::trajectory_stop(stop, error.as_deref()));
    trajectory.extra.insert("runs".into(), run.into());
    if !holder.decisions.is_empty() {
        trajectory.extra.insert("gate".into(), serde_json::Value::Array(holder.decisions.clone()));
    }
    Ok(AgentRun {
        stop,
        exit_code,
        duration: started.elapsed(),
        output,
        gate: holder.gate.decisions().to_vec(),
        model: Some(ModelRecord {
            model: model_name.to_string(),
            usage: totals.usage,
            cost_usd: totals.cost_usd,
            requests: totals.requests,
            retries: totals.retries,
            trajectory: Some(trajectory.to_json()),
            exchanges: gateway.exchanges_jsonl(),
            native_logs: name_by_run(native_logs),
            error,
        }),
    })
}

/// The agent's own log files as one run left them.
fn read_native_logs(root: &dyn Files, log_dir: &str, names: &[String]) -> Vec<(String, Vec<u8>)> {
    names
        .iter()
        .filter_map(|file| {
            root.read_regular(&format!("{log_dir}/{file}"), NATIVE_LOG_LIMIT)
                .ok()
                .map(|bytes| (file.clone(), bytes))
        })
        .collect()
}

/// Each run's logs, the last run's under their own names and earlier ones'
/// as `run<k>-<name>` (a restart may rewrite a file).
fn name_by_run(runs: Vec<Vec<(String, Vec<u8>)>>) -> Vec<(String, Vec<u8>)> {
    let last = runs.len();
    runs.into_iter()
        .enumerate()
        .flat_map(|(i, logs)| {
            logs.into_iter().map(move |(name, bytes)| {
                if i + 1 == last {
                    (name, bytes)
                } else {
                    (format!("run{}-{name}", i + 1), bytes)
                }
            })
        })
        .collect()
}
