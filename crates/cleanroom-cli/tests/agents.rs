//! Agents that use a model, against a scripted OpenAI-compatible server (a
//! real HTTP server in this process; its answers are fixed, so every step
//! of the loop can be asserted): the built-in agent's tools and session,
//! budgets, the completion gate, model failures, and the forwarder that
//! external agents reach from inside their environment. Needs root.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use common::scripted_model::{self, calls, make, say, tool_call, Reply};
use common::*;
use serde_json::{json, Value};

const KEY: &str = "sk-test-4f1d2a9c0b7e3e55";
const TARGET: &str = "tests/fixtures/tasks-adversarial/target";
const CONFIGURE: &str =
    "cd /workspace/artifact && sed 's|^DATA_DIR=.*|DATA_DIR=/workspace/artifact/data|' config.sh.example > config.sh";

/// A configuration naming one scripted model per behaviour.
fn config(dir: &Path, base_url: &str, models: &[&str], extra: &str) -> PathBuf {
    let mut text = String::new();
    for m in models {
        text.push_str(&format!(
            "[models.{m}]\nbase_url = \"{base_url}\"\nmodel = \"{m}\"\napi_key_env = \"CLEANROOM_TEST_KEY\"\n\
             request_timeout_sec = 3\nmax_retries = 2\nretry_backoff_ms = 10\n\
             prices = {{ input_per_mtok = 1.0, output_per_mtok = 2.0 }}\n\n"
        ));
    }
    text.push_str(extra);
    let path = dir.join("cleanroom.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn run(config: &Path, out: &Path, args: &[&str]) -> (Output, PathBuf) {
    let output = cleanroom()
        .arg("--config")
        .arg(config)
        .arg("run")
        .args(["--tasks", &fixtures(TARGET), "--jobs", "2"])
        .args(args)
        .arg("--out")
        .arg(out)
        .env("CLEANROOM_TEST_KEY", KEY)
        .output()
        .unwrap();
    let run_dir = std::fs::read_dir(out).unwrap().flatten().map(|e| e.path()).find(|p| p.is_dir()).unwrap();
    (output, run_dir)
}

fn trial_dir(run_dir: &Path, agent_id: &str) -> PathBuf {
    run_dir.join("trials/target").join(agent_id).join("1")
}

fn json_file(path: PathBuf) -> Value {
    serde_json::from_slice(&std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .unwrap()
}

fn read(path: PathBuf) -> String {
    String::from_utf8_lossy(&std::fs::read(&path).unwrap_or_default()).into_owned()
}

/// No file under `dir` holds the API key.
fn assert_no_key(dir: &Path) {
    for entry in files_under(dir) {
        let bytes = std::fs::read(&entry).unwrap_or_default();
        assert!(!String::from_utf8_lossy(&bytes).contains(KEY), "the API key is in {}", entry.display());
    }
}

/// result.json's gate decisions, by name.
fn gate_decisions(result: &Value) -> Vec<&str> {
    result["gate_decisions"].as_array().unwrap().iter().map(|d| d["decision"].as_str().unwrap()).collect()
}

fn observations(trajectory: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for step in trajectory["steps"].as_array().unwrap() {
        for r in step["observation"]["results"].as_array().into_iter().flatten() {
            out.push(r["content"].as_str().unwrap_or_default().to_string());
        }
    }
    out
}

#[test]
fn the_built_in_agent_deploys_with_a_session_that_remembers() {
    let out = temp_out("llm-deploy");
    let script = vec![
        calls(
            vec![tool_call(
                "a",
                "bash",
                json!({"command": format!("{CONFIGURE} && export MARK=kept && cd lib")}),
            )],
            100,
            20,
        ),
        calls(
            vec![
                tool_call("b", "bash", json!({"command": "pwd; echo \"mark=$MARK\""})),
                tool_call(
                    "c",
                    "write_file",
                    json!({"path": "/workspace/notes/n.txt", "content": "hello world\n"}),
                ),
                tool_call(
                    "d",
                    "edit_file",
                    json!({"path": "/workspace/notes/n.txt", "old_text": "world", "new_text": "there"}),
                ),
                tool_call("e", "read_file", json!({"path": "/workspace/notes/n.txt"})),
                tool_call("f", "bash", json!({"command": "(sleep 300 &) ; echo started"})),
            ],
            300,
            40,
        ),
        calls(vec![tool_call("g", "finish", json!({"summary": "configured DATA_DIR"}))], 500, 10),
    ];
    let model = scripted_model::start(KEY, HashMap::from([("deploy".to_string(), script)]));
    let cfg = config(&out, &model.base_url, &["deploy"], "");
    let (output, run_dir) = run(&cfg, &out, &["--agent", "llm:deploy"]);
    assert!(output.status.success(), "{}", text(&output));

    let dir = trial_dir(&run_dir, "llm-deploy");
    let result = json_file(dir.join("result.json"));
    assert_eq!(result["outcome"], "passed", "{result}");
    assert_eq!(result["stop_reason"], "finished");
    assert_eq!(result["model"], "deploy");
    assert_eq!(result["gate"], "off");
    assert_eq!(result["steps"], 3);
    // The usage the server reported, summed.
    assert_eq!(result["tokens"]["prompt"], 900);
    assert_eq!(result["tokens"]["completion"], 70);
    let cost = result["cost_usd"].as_f64().unwrap();
    assert!((cost - (900.0 * 1.0 + 70.0 * 2.0) / 1e6).abs() < 1e-12, "{cost}");

    let trajectory = json_file(dir.join("trajectory.json"));
    assert!(trajectory["schema_version"].as_str().unwrap().starts_with("ATIF-"));
    assert_valid_trajectories(&run_dir);
    assert_eq!(trajectory["final_metrics"]["total_prompt_tokens"], 900);
    let seen = observations(&trajectory);
    assert!(seen.iter().any(|o| o.contains("/workspace/artifact/lib\nmark=kept")), "{seen:?}");
    assert!(seen.iter().any(|o| o.contains("hello there")), "{seen:?}");
    assert!(
        seen.iter().any(|o| o.starts_with("started")),
        "a background process does not hold the call: {seen:?}"
    );
    let exchanges = read(dir.join("model-exchanges.jsonl"));
    assert_eq!(exchanges.lines().count(), 3);
    // The model saw the task and the tools, and got each observation back.
    let requests = model.seen.lock().unwrap()["deploy"].clone();
    assert!(requests[0]["messages"][1]["content"].as_str().unwrap().contains("Designated experiment"));
    assert_eq!(requests[0]["tools"].as_array().unwrap().len(), 5);
    assert_eq!(requests[2]["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "tool").count(), 6);
    assert_no_key(&out);
}

/// A model that wipes /tmp, the session's state with it: the session
/// makes its state again, and the trial ends on its merits, never as an
/// infrastructure error. What the session's shell writes is the harness's
/// and stays out of env-diff.txt.
#[test]
fn the_built_in_agent_survives_a_wiped_tmp() {
    let out = temp_out("llm-wipe");
    let script = vec![
        calls(vec![tool_call("a", "bash", json!({"command": "rm -rf /tmp/.cleanroom-* /tmp/*"}))], 10, 5),
        calls(
            vec![tool_call("b", "bash", json!({"command": format!("{CONFIGURE} && echo still-here")}))],
            10,
            5,
        ),
        calls(vec![tool_call("c", "finish", json!({"summary": "configured"}))], 10, 5),
    ];
    let model = scripted_model::start(KEY, HashMap::from([("wipe".to_string(), script)]));
    let cfg = config(&out, &model.base_url, &["wipe"], "");
    let (output, run_dir) = run(&cfg, &out, &["--agent", "llm:wipe"]);
    assert!(output.status.success(), "{}", text(&output));
    let dir = trial_dir(&run_dir, "llm-wipe");
    let result = json_file(dir.join("result.json"));
    assert_eq!(result["outcome"], "passed", "{result}");
    let seen = observations(&json_file(dir.join("trajectory.json")));
    assert!(seen.iter().any(|o| o.contains("still-here")), "{seen:?}");
    let diff = read(dir.join("env-diff.txt"));
    assert!(!diff.contains(".cleanroom-shell"), "{diff}");
}

#[test]
fn the_enforced_gate_refuses_until_the_experiment_succeeds() {
    let out = temp_out("llm-gate");
    let finish = |id: &str| calls(vec![tool_call(id, "finish", json!({"summary": "done"}))], 10, 1);
    let script = vec![
        finish("a"),
        calls(vec![tool_call("b", "bash", json!({"command": CONFIGURE}))], 10, 1),
        finish("c"),
    ];
    // Gave up: always finishes without doing anything.
    let quitter = vec![finish("q")];
    // Ends with a reply without a tool call, which is a stop all the same.
    let bash = tool_call("t", "bash", json!({"command": CONFIGURE}));
    let talker = vec![Reply::GateAware { call: bash, done: say("Done.") }];
    let model = scripted_model::start(
        KEY,
        HashMap::from([
            ("gated".to_string(), script),
            ("quitter".to_string(), quitter),
            ("talker".to_string(), talker),
        ]),
    );
    let cfg = config(&out, &model.base_url, &["gated", "quitter", "talker"], "");
    let agents = ["--agent", "llm:gated", "--agent", "llm:quitter", "--agent", "llm:talker"];
    let (output, run_dir) = run(&cfg, &out, &[&agents[..], &["--gate", "enforced"]].concat());
    assert!(output.status.success(), "{}", text(&output));
    let talked = json_file(trial_dir(&run_dir, "llm-talker").join("result.json"));
    let decisions = gate_decisions(&talked);
    assert_eq!(
        (talked["outcome"].as_str(), &decisions[..]),
        (Some("passed"), &["refused", "accepted"][..]),
        "{talked}"
    );

    let result = json_file(trial_dir(&run_dir, "llm-gated").join("result.json"));
    assert_eq!(
        (result["outcome"].as_str(), result["gate"].as_str(), result["gate_mechanism"].as_str()),
        (Some("passed"), Some("enforced"), Some("built_in")),
        "{result}"
    );
    let decisions = gate_decisions(&result);
    assert_eq!(decisions, ["refused", "accepted"], "{result}");
    let trajectory = json_file(trial_dir(&run_dir, "llm-gated").join("trajectory.json"));
    let decisions: Vec<&str> = trajectory["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["extra"]["gate"]["decision"].as_str())
        .collect();
    assert_eq!(decisions, ["refused", "accepted"]);
    let seen = observations(&trajectory);
    assert!(
        seen[0].contains("exit status") && seen[0].contains("MISSING") && seen[0].contains("refused"),
        "{seen:?}"
    );

    // Refused three times, then let go; the verifier has the last word.
    let quit = json_file(trial_dir(&run_dir, "llm-quitter").join("result.json"));
    assert_eq!(
        (quit["outcome"].as_str(), quit["class"].as_str()),
        (Some("failed"), Some("self_stop")),
        "{quit}"
    );
    assert_eq!(quit["steps"], 4);
    // It claimed "done" without ever running the experiment itself.
    let tag = quit["tags"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "weaker_target")
        .expect("weaker_target");
    let from_trajectory = tag["evidence"].as_array().unwrap().iter().find(|e| e["file"] == "trajectory.json");
    assert!(
        from_trajectory.unwrap()["text"].as_str().unwrap().contains("never ran the designated experiment"),
        "{tag}"
    );
}

#[test]
fn budgets_and_model_failures_end_the_trial_and_the_run_goes_on() {
    let out = temp_out("llm-failures");
    let busy = vec![calls(vec![tool_call("x", "bash", json!({"command": "true"}))], 10, 1)];
    let bad_args = vec![
        Reply::Message {
            message: json!({"role": "assistant", "content": "trying",
                "tool_calls": [{"id": "m", "type": "function", "function": {"name": "bash", "arguments": "{not json"}}]}),
            prompt: 5,
            completion: 1,
        },
        calls(vec![tool_call("n", "finish", json!({"summary": "gave up"}))], 5, 1),
    ];
    let model = scripted_model::start(
        KEY,
        HashMap::from([
            ("busy".to_string(), busy),
            ("broken".to_string(), vec![Reply::Status(500, "{\"error\":\"down\"}".into())]),
            ("garbage".to_string(), vec![Reply::Garbage]),
            ("stalled".to_string(), vec![Reply::Stall]),
            ("badargs".to_string(), bad_args),
            (
                "limited".to_string(),
                vec![
                    Reply::Status(429, "{\"error\":\"slow down\"}".into()),
                    calls(vec![tool_call("z", "finish", json!({"summary": "done"}))], 7, 1),
                ],
            ),
        ]),
    );
    let cfg =
        config(&out, &model.base_url, &["busy", "broken", "garbage", "stalled", "badargs", "limited"], "");
    let agents =
        ["llm:busy", "llm:broken", "llm:garbage", "llm:stalled", "llm:badargs", "llm:limited", "nop"];
    let mut args = vec!["--max-steps", "2"];
    for a in &agents {
        args.extend(["--agent", a]);
    }
    let (output, run_dir) = run(&cfg, &out, &args);
    assert!(output.status.success(), "{}", text(&output));
    let result = |id: &str| json_file(trial_dir(&run_dir, id).join("result.json"));

    let busy = result("llm-busy");
    assert_eq!(
        (busy["stop_reason"].as_str(), busy["class"].as_str()),
        (Some("budget"), Some("budget")),
        "{busy}"
    );
    assert_eq!(busy["steps"], 2);
    for (id, says) in
        [("llm-broken", "500"), ("llm-garbage", "not a chat completion"), ("llm-stalled", "stalled")]
    {
        let r = result(id);
        assert_eq!(
            (r["outcome"].as_str(), r["class"].as_str()),
            (Some("failed"), Some("agent_error")),
            "{r}"
        );
        assert!(r["error"].as_str().unwrap_or_default().contains(says), "{id}: {r}");
    }
    // 500s are retried (max_retries = 2), then the trial ends.
    assert_eq!(model.seen.lock().unwrap()["broken"].len(), 3);
    assert!(result("llm-broken")["error"].as_str().unwrap().contains("after 2 retries"));
    assert_eq!(result("llm-broken")["model_retries"], 2);
    let bad = result("llm-badargs");
    assert_eq!(bad["stop_reason"], "finished", "{bad}");
    let trajectory = json_file(trial_dir(&run_dir, "llm-badargs").join("trajectory.json"));
    let seen = observations(&trajectory);
    assert!(seen[0].contains("not valid JSON"), "{seen:?}");
    let sent = &trajectory["steps"].as_array().unwrap().iter().find(|s| s["tool_calls"].is_array()).unwrap()
        ["tool_calls"][0]["arguments"];
    assert!(sent["unparsed_arguments"].is_string(), "what the model sent is kept in an object: {sent}");
    assert_valid_trajectories(&run_dir);
    assert_eq!(result("nop")["class"], "self_stop");
    // A 429 is waited out and retried: one step, one retry counted.
    let limited = result("llm-limited");
    assert_eq!(
        (limited["stop_reason"].as_str(), limited["steps"].as_u64()),
        (Some("finished"), Some(1)),
        "{limited}"
    );
    assert_eq!(limited["model_retries"], 1, "{limited}");
    assert_eq!(limited["tokens"]["prompt"], 7);
}

#[test]
fn external_agents_reach_the_model_only_through_the_forwarder() {
    external_agents_reach_the_model_only_through_the_forwarder_on("sandbox");
}

/// The same agent in a machine: its installation on a read-only disk, the
/// forwarder relayed to the machine's loopback.
#[test]
fn external_agents_reach_the_model_only_through_the_forwarder_on_a_machine() {
    external_agents_reach_the_model_only_through_the_forwarder_on("vm");
}

/// And on a host of the ssh backend: its installation copied there for
/// the phase and bound read-only, the forwarder relayed to the host's
/// loopback.
#[test]
fn external_agents_reach_the_model_only_through_the_forwarder_on_a_host() {
    external_agents_reach_the_model_only_through_the_forwarder_on("ssh");
}

/// The backend's own configuration: the test hosts' for ssh.
fn backend_config(backend: &str) -> String {
    if backend != "ssh" {
        return String::new();
    }
    std::fs::read_to_string(TEST_HOSTS)
        .unwrap_or_else(|e| panic!("{TEST_HOSTS}: {e}: start the test hosts (scripts/test-hosts.sh up 2)"))
}

fn external_agents_reach_the_model_only_through_the_forwarder_on(backend: &str) {
    let out = temp_out(&format!("forwarder-{backend}"));
    let hello = Reply::Message {
        message: json!({"role": "assistant", "content": "hello from the model"}),
        prompt: 11,
        completion: 4,
    };
    let model = scripted_model::start(KEY, HashMap::from([("fwd".to_string(), vec![hello])]));
    // And, on the sandbox, one that never calls the model: its trajectory
    // has no step of its own.
    let silent = out.join("silent.sh");
    std::fs::write(&silent, "exit 0\n").unwrap();
    let agent = format!(
        "[agents.bash-http]\nversion = \"1\"\ndialect = \"openai-chat\"\nmodel = \"fwd\"\ninstall = \"{}\"\nrun = \"{}\"\nlogs = [\"own.log\"]\n\n\
         [agents.silent]\nversion = \"1\"\ndialect = \"openai-chat\"\nmodel = \"fwd\"\ninstall = \"{}\"\nrun = \"{}\"\n",
        fixtures("tests/fixtures/agents/bash-http/install.sh"),
        fixtures("tests/fixtures/agents/bash-http/run.sh"),
        fixtures("tests/fixtures/agents/bash-http/install.sh"),
        silent.display(),
    );
    let cfg = config(&out, &model.base_url, &["fwd"], &(agent + &backend_config(backend)));
    let mut args = vec!["--agent", "command:bash-http", "--backend", backend];
    if backend == "sandbox" {
        args.extend(["--agent", "command:silent"]);
    }
    let (output, run_dir) = run(&cfg, &out, &args);
    assert!(output.status.success(), "{}", text(&output));
    let dir = trial_dir(&run_dir, "command-bash-http");
    let result = json_file(dir.join("result.json"));
    assert_eq!(
        (result["stop_reason"].as_str(), result["model"].as_str()),
        (Some("finished"), Some("fwd")),
        "{result}"
    );
    // Three answered requests; the one with a wrong token never reached the model.
    assert_eq!(result["steps"], 3);
    assert_eq!(result["tokens"]["prompt"], 33);
    assert_eq!(model.seen.lock().unwrap()["fwd"].len(), 3);

    let log = read(dir.join("agent-own-own.log"));
    let section = |name: &str| {
        log.split(&format!("== {name}\n"))
            .nth(1)
            .unwrap_or("")
            .split("\n== ")
            .next()
            .unwrap_or("")
            .to_string()
    };
    assert!(section("wrong token").starts_with("HTTP/1.1 401"), "{log}");
    assert!(section("chat").contains("hello from the model"), "{log}");
    let anthropic = section("anthropic");
    assert!(anthropic.contains("text/event-stream") && anthropic.contains("event: message_start"), "{log}");
    assert!(
        anthropic.contains("hello from the model") && anthropic.contains("\"model\":\"claude-x\""),
        "{log}"
    );
    let responses = section("responses");
    assert!(
        responses.contains("\"object\":\"response\"") && responses.contains("hello from the model"),
        "{log}"
    );
    assert!(section("prefix").contains("Read-only file system"), "{log}");
    let env = section("env");
    assert!(env.contains("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"), "{env}");
    for leak in ["PYTHONPATH", "PYTHONHOME", "NODE_PATH", "LD_LIBRARY_PATH", "CLEANROOM_TEST_KEY"] {
        assert!(!env.contains(leak), "{leak} reached the agent: {env}");
    }

    let trajectory = json_file(dir.join("trajectory.json"));
    assert_eq!(trajectory["agent"]["name"], "bash-http");
    assert_eq!(trajectory["final_metrics"]["total_prompt_tokens"], 33);
    if backend == "sandbox" {
        let silent = json_file(trial_dir(&run_dir, "command-silent").join("trajectory.json"));
        let steps = silent["steps"].as_array().unwrap();
        assert_eq!((steps.len(), steps[0]["source"].as_str()), (1, Some("system")), "{silent}");
    }
    assert_valid_trajectories(&run_dir);
    let exchanges = read(dir.join("model-exchanges.jsonl"));
    let dialects: Vec<String> = exchanges
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["dialect"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(dialects, ["openai-chat", "anthropic-messages", "openai-responses"]);
    // The agent's installation left nothing in the environment's system.
    let diff = read(dir.join("env-diff.txt"));
    for place in ["/usr", "/etc", "/var", "/opt"] {
        assert!(!diff.lines().any(|l| l.contains(&format!(" {place}/"))), "{place} changed: {diff}");
    }
    assert_no_key(&out);

    if backend != "sandbox" {
        return;
    }
    // A step budget stops an external agent too (the harness's doing, the
    // same on every backend).
    let out2 = temp_out("forwarder-budget");
    let (output, run_dir) = run(&cfg, &out2, &["--agent", "command:bash-http", "--max-steps", "1"]);
    assert!(output.status.success(), "{}", text(&output));
    let result = json_file(trial_dir(&run_dir, "command-bash-http").join("result.json"));
    assert_eq!(
        (result["stop_reason"].as_str(), result["class"].as_str()),
        (Some("budget"), Some("budget")),
        "{result}"
    );
}

/// The shipped agent CLIs, installed for real (once per machine, cached),
/// each deploying the target through the forwarder in its own dialect: the
/// scripted model makes one tool call of the agent's own tool set, then
/// says it is done. Every agent's tool call must run in the environment.
#[test]
fn the_shipped_agent_clis_deploy_through_the_forwarder() {
    the_shipped_agent_clis_deploy_through_the_forwarder_on(
        "sandbox",
        &["mini-swe-agent", "claude-code", "codex", "openhands"],
    );
}

/// CLIs of both runtimes they ship with (Python, Node), each in a machine
/// of its own, run from their installation's read-only disk. (All four
/// pass there too; two keep the suite's time.)
#[test]
fn the_shipped_agent_clis_deploy_through_the_forwarder_on_a_machine() {
    the_shipped_agent_clis_deploy_through_the_forwarder_on("vm", &["mini-swe-agent", "claude-code"]);
}

/// A CLI on a host of the ssh backend, from the copy of its installation
/// made there for the phase. (All four pass there too; one keeps the
/// suite's time.)
#[test]
fn the_shipped_agent_clis_deploy_through_the_forwarder_on_a_host() {
    the_shipped_agent_clis_deploy_through_the_forwarder_on("ssh", &["claude-code"]);
}

fn the_shipped_agent_clis_deploy_through_the_forwarder_on(backend: &str, names: &[&str]) {
    let out = temp_out(&format!("clis-{backend}"));
    let call = |name: &str, args: Value| tool_call("call_1", name, args);
    let mini_command = format!("{CONFIGURE} && echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT");
    let agents: Vec<(&str, Value)> = [
        ("mini-swe-agent", call("bash", json!({"command": mini_command}))),
        ("claude-code", call("Bash", json!({"command": CONFIGURE, "description": "configure"}))),
        ("codex", call("exec_command", json!({"cmd": CONFIGURE}))),
        ("openhands", call("execute_bash", json!({"command": CONFIGURE}))),
    ]
    .into_iter()
    .filter(|(name, _)| names.contains(name))
    .collect();
    let scripts: HashMap<String, Vec<Reply>> = agents
        .iter()
        .map(|(name, c)| (name.to_string(), vec![Reply::Agentic { call: c.clone(), done: "Done.".into() }]))
        .collect();
    let model = scripted_model::start(KEY, scripts);
    let cfg = config(&out, &model.base_url, names, &backend_config(backend));
    let specs: Vec<String> = names.iter().map(|n| format!("command:{n}@{n}")).collect();
    let mut args = vec!["--timeout-multiplier", "2", "--backend", backend];
    for s in &specs {
        args.extend(["--agent", s]);
    }
    let (output, run_dir) = run(&cfg, &out, &args);
    assert!(output.status.success(), "{}", text(&output));
    for name in names {
        let dir = trial_dir(&run_dir, &format!("command-{name}-{name}"));
        let result = json_file(dir.join("result.json"));
        let log = read(dir.join("agent.log"));
        assert_eq!(result["outcome"], "passed", "{name}: {result}\n{log}");
        assert!(result["steps"].as_u64().unwrap() >= 1, "{name}: {result}");
        let trajectory = json_file(dir.join("trajectory.json"));
        let called = trajectory["steps"].as_array().unwrap().iter().any(|s| s["tool_calls"].is_array());
        assert!(called, "{name}: no tool call in the trajectory");
        let diff = read(dir.join("env-diff.txt"));
        for place in ["/usr", "/etc", "/var", "/opt"] {
            assert!(
                !diff.lines().any(|l| l.starts_with(&format!("A {place}/"))),
                "{name} changed {place}: {diff}"
            );
        }
    }
    assert_no_key(&out);
}

/// Claude Code's Stop hook asks the completion gate: stopping before the
/// experiment works is refused with the report, which reaches the model;
/// once it has configured the artifact, the gate's run succeeds and it
/// may stop.
#[test]
fn the_gate_holds_claude_code_through_its_stop_hook() {
    let out = temp_out("claude-gate");
    let call = tool_call("call_1", "Bash", json!({"command": CONFIGURE, "description": "configure"}));
    let gate_aware = Reply::GateAware { call, done: say("Done.") };
    let model = scripted_model::start(KEY, HashMap::from([("claude".to_string(), vec![gate_aware])]));
    let cfg = config(&out, &model.base_url, &["claude"], "");
    let (output, run_dir) = run(&cfg, &out, &["--agent", "command:claude-code@claude", "--gate", "enforced"]);
    assert!(output.status.success(), "{}", text(&output));
    let dir = trial_dir(&run_dir, "command-claude-code-claude");
    let result = json_file(dir.join("result.json"));
    let log = read(dir.join("agent.log"));
    assert_eq!(
        (result["outcome"].as_str(), result["gate"].as_str(), result["gate_mechanism"].as_str()),
        (Some("passed"), Some("enforced"), Some("hook")),
        "{result}\n{log}"
    );
    assert_eq!(result["gate_decisions"].as_array().map(Vec::len), Some(2), "{result}");
    let trajectory = json_file(dir.join("trajectory.json"));
    let decisions: Vec<&str> = trajectory["extra"]["gate"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["decision"].as_str().unwrap())
        .collect();
    assert_eq!(decisions, ["refused", "accepted"], "{trajectory}");
    // The report reached the model as the hook's feedback.
    let requests = model.seen.lock().unwrap()["claude"].clone();
    assert!(
        requests.iter().any(|r| r.to_string().contains("Stopping is refused")),
        "the model never saw the report"
    );
}

/// The CLIs without a stop hook are held by a restart: each scripted model
/// first says it is done without doing anything; the gate runs the
/// experiment, refuses, and starts the CLI again, which resumes its own
/// session with the report as the next message, whereupon the model
/// configures the artifact and the trial passes. With the gate off, in
/// the same run, the same scripts stop early and fail as self_stop, and
/// the report's gate effect counts each self-stop turned into a pass.
#[test]
fn the_gate_holds_every_cli_by_restarting_it() {
    let out = temp_out("restart-gate");
    // (CLI, scripted model). OpenHands twice: stopping through its finish
    // tool, and stuck saying "Done." until it ends in an error of its own.
    let agents = [
        ("mini-swe-agent", "mini-swe-agent"),
        ("codex", "codex"),
        ("openhands", "openhands"),
        ("openhands", "openhands-stuck"),
    ];
    const SUBMIT: &str = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT";
    let call = |name: &str, args: Value| tool_call("call_1", name, args);
    let replies = |model: &str| match model {
        // mini-swe-agent ends when a command prints its submit marker.
        "mini-swe-agent" => Reply::GateAware {
            call: call("bash", json!({"command": format!("{CONFIGURE} && {SUBMIT}")})),
            done: make(call("bash", json!({"command": SUBMIT}))),
        },
        "codex" => {
            Reply::GateAware { call: call("exec_command", json!({"cmd": CONFIGURE})), done: say("Done.") }
        }
        "openhands" => Reply::GateAware {
            call: call("execute_bash", json!({"command": CONFIGURE})),
            done: make(call("finish", json!({"message": "Done."}))),
        },
        _ => {
            Reply::GateAware { call: call("execute_bash", json!({"command": CONFIGURE})), done: say("Done.") }
        }
    };
    let models: Vec<&str> = agents.iter().map(|(_, m)| *m).collect();
    let scripts: HashMap<String, Vec<Reply>> =
        models.iter().map(|m| (m.to_string(), vec![replies(m)])).collect();
    let model = scripted_model::start(KEY, scripts);
    let cfg = config(&out, &model.base_url, &models, "");
    let mut args = vec!["--timeout-multiplier", "2"];
    let specs: Vec<String> = agents.iter().map(|(cli, m)| format!("command:{cli}@{m}")).collect();
    for s in &specs {
        args.extend(["--agent", s]);
    }
    // Both ways in one run: each agent under the gate and without it.
    args.extend(["--gate", "off", "--gate", "enforced"]);
    let trial = |run_dir: &Path, (cli, m): (&str, &str), gate: &str| {
        trial_dir(run_dir, &format!("command-{cli}-{m}-gate-{gate}"))
    };
    let stuck = |(_, m): (&str, &str)| m == "openhands-stuck";

    let instruction = std::fs::read_to_string(fixtures(&format!("{TARGET}/instruction.md"))).unwrap();
    let instruction_start = instruction.lines().find(|l| !l.trim().is_empty()).unwrap().to_string();
    let (output, run_dir) = run(&cfg, &out, &args);
    assert!(output.status.success(), "{}", text(&output));
    for agent in agents {
        let dir = trial(&run_dir, agent, "enforced");
        let result = json_file(dir.join("result.json"));
        let log = read(dir.join("agent.log"));
        assert_eq!(
            (result["outcome"].as_str(), result["gate"].as_str(), result["gate_mechanism"].as_str()),
            (Some("passed"), Some("enforced"), Some("restart")),
            "{agent:?}: {result}\n{log}"
        );
        let decisions = gate_decisions(&result);
        assert_eq!(decisions, ["refused", "accepted"], "{agent:?}: {result}");
        assert_eq!(
            result["gate_decisions"][0]["missing_outputs"],
            json!(["results/summary.txt", "results/stations.csv"]),
            "{result}"
        );
        assert_eq!(result["gate_decisions"][1]["succeeded"], true, "{result}");
        let trajectory = json_file(dir.join("trajectory.json"));
        assert_eq!(trajectory["extra"]["runs"], 2, "{agent:?}");
        let runs: Vec<u64> = trajectory["extra"]["gate"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["run"].as_u64().unwrap())
            .collect();
        assert_eq!(runs, [1, 2], "{agent:?}");
        assert!(log.contains("starting the agent again (run 2)"), "{agent:?}: {log}");
        // Each resumed its own session: the request with the report holds
        // the first instruction and what came after it, and no retelling;
        // except OpenHands after its error, which starts a new session told
        // what happened before.
        let seen = model.seen.lock().unwrap()[agent.1].clone();
        let resumed = seen.iter().find(|r| r.to_string().contains("Stopping is refused"));
        let resumed = resumed.unwrap_or_else(|| panic!("{agent:?}: the model never saw the report"));
        let users = resumed["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "user").count();
        let said = resumed.to_string();
        let retold = said.contains("You worked on this task before");
        assert_eq!(retold, stuck(agent), "{agent:?}: {said}");
        assert!(retold || users >= 2, "{agent:?}: {said}");
        assert!(said.contains(&instruction_start), "{agent:?}: {said}");
    }

    for agent in agents {
        let result = json_file(trial(&run_dir, agent, "off").join("result.json"));
        assert_eq!(
            (result["outcome"].as_str(), result["class"].as_str(), result["gate"].as_str()),
            (Some("failed"), Some("self_stop"), Some("off")),
            "{agent:?}: {result}"
        );
        assert!(result.get("gate_decisions").is_none() && result.get("gate_mechanism").is_none(), "{result}");
    }
    // The report pairs each agent off and on: its self-stop became a pass.
    let report = cleanroom().arg("report").arg(&run_dir).output().unwrap();
    assert!(report.status.success(), "{}", text(&report));
    let md = String::from_utf8_lossy(&report.stdout);
    let gate = &md[md.find("## Gate effect").unwrap_or_else(|| panic!("{md}"))..];
    for (cli, m) in agents {
        let id = format!("command-{cli}-{m}");
        let start = format!("| {id}-gate-off → {id}-gate-enforced | enforced | 1 (few) |");
        let row = gate.lines().find(|l| l.starts_with(&start)).unwrap_or_else(|| panic!("{start} in {gate}"));
        assert!(row.ends_with("| 1 | 1 | 0 | 0 | 0 |"), "{row}");
    }
    assert_no_key(&out);
}

/// The restart gate's rules, with an agent of the user's own (no way to
/// resume: each restart is a new session told what happened) that asks
/// the model once per run and stops. One budget covers every run: with
/// three steps it is refused twice, started with the steps left each time,
/// and its third run ends the budget. Advisory reports once, and a stop
/// with nothing done since is accepted.
#[test]
fn restarts_share_one_budget_and_advice_is_given_once() {
    let out = temp_out("restart-budget");
    let quitter = Reply::Message { message: say("Done."), prompt: 5, completion: 1 };
    let model = scripted_model::start(KEY, HashMap::from([("quit".to_string(), vec![quitter])]));
    let run_sh = out.join("ask-once.sh");
    std::fs::write(
        &run_sh,
        r#"log=$CLEANROOM_LOG_DIR/own.log
echo "run $CLEANROOM_RUN steps ${CLEANROOM_MAX_STEPS:-none} resume ${CLEANROOM_RESUME_FILE:-none}" >>"$log"
grep -c "You worked on this task before" "$CLEANROOM_INSTRUCTION_FILE" >>"$log"
body='{"model":"quit","messages":[{"role":"user","content":"hi"}]}'
exec 3<>"/dev/tcp/127.0.0.1/${CLEANROOM_MODEL_BASE_URL##*:}"
printf 'POST /v1/chat/completions HTTP/1.1\r\nHost: f\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' \
    "$CLEANROOM_MODEL_TOKEN" "${#body}" "$body" >&3
cat <&3 >/dev/null
"#,
    )
    .unwrap();
    let agent = format!(
        "[agents.ask-once]\nversion = \"1\"\ndialect = \"openai-chat\"\nmodel = \"quit\"\ninstall = \"{}\"\nrun = \"{}\"\nlogs = [\"own.log\"]\n",
        fixtures("tests/fixtures/agents/bash-http/install.sh"),
        run_sh.display(),
    );
    let cfg = config(&out, &model.base_url, &["quit"], &agent);

    let (output, run_dir) = run(
        &cfg,
        &out.join("enforced"),
        &["--agent", "command:ask-once", "--gate", "enforced", "--max-steps", "3"],
    );
    assert!(output.status.success(), "{}", text(&output));
    let dir = trial_dir(&run_dir, "command-ask-once");
    let result = json_file(dir.join("result.json"));
    assert_eq!(
        (result["stop_reason"].as_str(), result["class"].as_str(), result["steps"].as_u64()),
        (Some("budget"), Some("budget"), Some(3)),
        "{result}"
    );
    let decisions = gate_decisions(&result);
    assert_eq!(decisions, ["refused", "refused"], "{result}");
    // Each run's own log is kept; the file grew, run by run.
    let log = read(dir.join("agent-own-own.log"));
    assert_eq!(
        log.lines().collect::<Vec<_>>(),
        [
            "run 1 steps 3 resume none",
            "0",
            "run 2 steps 2 resume none",
            "1",
            "run 3 steps 1 resume none",
            "1"
        ],
        "{log}"
    );
    assert!(dir.join("agent-own-run1-own.log").is_file() && dir.join("agent-own-run2-own.log").is_file());

    let (output, run_dir) =
        run(&cfg, &out.join("advisory"), &["--agent", "command:ask-once", "--gate", "advisory"]);
    assert!(output.status.success(), "{}", text(&output));
    let result = json_file(trial_dir(&run_dir, "command-ask-once").join("result.json"));
    assert_eq!(
        (result["outcome"].as_str(), result["class"].as_str(), result["gate_mechanism"].as_str()),
        (Some("failed"), Some("self_stop"), Some("restart")),
        "{result}"
    );
    let decisions: Vec<(&str, &str)> = result["gate_decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["decision"].as_str().unwrap(), d["note"].as_str().unwrap_or_default()))
        .collect();
    assert_eq!(decisions, [("advised", ""), ("accepted", "stopped again after the report")], "{result}");
}
