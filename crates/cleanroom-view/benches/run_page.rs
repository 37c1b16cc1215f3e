//! The viewer's run page over a run of 10,000 trials in the index (500
//! tasks × 4 agents × 5 trials): the time to read the run and render its
//! page, as a request does. The target (DESIGN.md) is under 300 ms.
//!
//! `cargo bench -p cleanroom-view --bench run_page`

use std::collections::BTreeMap;
use std::time::Instant;

use cleanroom_store::{
    AgentEntry, FailureClass, GateMode, Index, Outcome, RunConfig, RunDir, Summary, TaskInfo, TrialRecord,
};
use cleanroom_view::{render_run, Filter, Library};

const TASKS: usize = 500;
const AGENTS: [&str; 4] = ["oracle", "nop", "llm-local", "command-codex"];
const TRIALS: u32 = 5;
const ROUNDS: usize = 15;

fn main() {
    let out = tempfile::tempdir().expect("temp dir");
    let run_id = "2026-01-01T00-00-00Z-bench";
    let run = RunDir::create(out.path(), run_id).expect("run dir");
    let domains = ["ai", "systems", "scientific"];
    let task_info: BTreeMap<String, TaskInfo> = (0..TASKS)
        .map(|t| {
            let info = TaskInfo {
                title: format!("paper {t}"),
                domain: domains[t % 3].into(),
                difficulty: "medium".into(),
                languages: vec!["python".into()],
                ..Default::default()
            };
            (format!("task-{t:04}"), info)
        })
        .collect();
    let config = RunConfig {
        tool_version: "bench".into(),
        created: "2026-01-01T00:00:00Z".into(),
        run_id: run_id.into(),
        backend: "sandbox".into(),
        accelerator: None,
        images: BTreeMap::new(),
        tasks: vec![],
        task_ids: vec![],
        agents: AGENTS
            .iter()
            .map(|a| AgentEntry { spec: a.to_string(), id: a.to_string(), gate: None })
            .collect(),
        trials: TRIALS,
        jobs: 1,
        gate: GateMode::Off,
        timeout_multiplier: 1.0,
        retries: 0,
        max_steps: None,
        max_tokens: None,
        max_cost_usd: None,
        config_sources: vec![],
        models: BTreeMap::new(),
        external_agents: BTreeMap::new(),
        allow_unlimited: false,
        no_cache: false,
        fail_under: None,
        artifacts: BTreeMap::new(),
        slurm: None,
        task_info,
    };
    run.write_run_config(&config).expect("run.toml");
    let mut records = Vec::new();
    for t in 0..TASKS {
        for (a, &agent) in AGENTS.iter().enumerate() {
            for n in 1..=TRIALS {
                let mut r = TrialRecord::new(format!("task-{t:04}"), agent, agent, n, 1);
                let passed = (t + a + n as usize).is_multiple_of(3);
                r.outcome = if passed { Outcome::Passed } else { Outcome::Failed };
                r.class = (!passed).then_some(FailureClass::SelfStop);
                r.timings.agent = 30.0 + n as f64;
                records.push(r);
            }
        }
    }
    let index = Index::open(out.path()).expect("index");
    index.record_results(&config, run.path(), &records).expect("index rows");
    run.write_summary(&Summary::from_records(&records, records.len())).expect("summary");
    drop(run);

    let library = Library::new(out.path());
    let filter = Filter::default();
    let mut times = Vec::new();
    let mut bytes = 0;
    for _ in 0..ROUNDS {
        let start = Instant::now();
        let loaded = library.run(run_id).expect("run loads");
        let page = render_run(&loaded, &filter);
        times.push(start.elapsed().as_secs_f64() * 1000.0);
        bytes = page.len();
        assert_eq!(loaded.records.len(), records.len());
    }
    times.sort_by(f64::total_cmp);
    println!(
        "run page, {} trials ({TASKS} tasks × {} agents × {TRIALS}): median {:.1} ms, min {:.1} ms, max {:.1} ms over {ROUNDS} renders; page {} KiB",
        records.len(),
        AGENTS.len(),
        times[ROUNDS / 2],
        times[0],
        times[ROUNDS - 1],
        bytes / 1024
    );
}
