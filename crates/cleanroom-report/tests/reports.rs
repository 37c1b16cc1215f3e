//! Every report format on records built in code, with exact values worked
//! out by hand in the comments.
//!
//! The set: agents `a` (an llm agent) and `script-b-sh` on four tasks.
//!
//! | task    | domain     | a                  | script-b-sh                   |
//! |---------|------------|--------------------|-------------------------------|
//! | t-ai-1  | ai         | ✓ ✓                | ✗ self_stop, ✓                |
//! | t-ai-2  | ai         | ✓                  | ✗ budget                      |
//! | t-sys   | systems    | ✗ agent_error      | E (infra error), ✓            |
//! | t-sci   | scientific | S (skipped)        | ✗ tampered                    |
//!
//! a: 3 of 4 judged, 1 skipped; b: 2 of 5 judged, 1 infra error.

mod support {
    pub mod xml;
}

use std::collections::BTreeMap;

use cleanroom_report::{
    render_csv, render_html, render_json, render_junit, render_markdown, summary_table, ClassRow, Report,
    ReportInput, RunInput, SliceBy, TaskInfo,
};
use cleanroom_store::{Evidence, FailureClass, GateMode, Outcome, Summary, Tag, TrialRecord, VerdictStage};
use support::xml::check_xml;

const EVIL: &str = "<script>alert('x')</script>";

fn rec(task: &str, agent: &str, trial: u32, outcome: Outcome, class: Option<FailureClass>) -> TrialRecord {
    let (spec, id) = match agent {
        "a" => ("llm:gpt", "a"),
        _ => ("script:/x/<b>.sh", "script-b-sh"),
    };
    let mut r = TrialRecord::new(task, spec, id, trial, 1);
    r.outcome = outcome;
    r.class = class;
    r.timings.agent = 10.0 * trial as f64;
    r.timings.verify = 1.0;
    if agent == "a" {
        r.model = Some("gpt".into());
        r.tokens.prompt = 1000;
        r.tokens.completion = 200;
        r.cost_usd = 0.25;
    }
    r
}

fn tag(name: &str, text: &str) -> Tag {
    Tag {
        name: name.into(),
        evidence: vec![Evidence { file: "agent.log".into(), line: 120, text: text.into() }],
    }
}

fn records() -> Vec<TrialRecord> {
    use FailureClass::*;
    use Outcome::*;
    let mut v = vec![
        rec("t-ai-1", "a", 1, Passed, None),
        rec("t-ai-1", "a", 2, Passed, None),
        rec("t-ai-1", "b", 1, Failed, Some(SelfStop)),
        rec("t-ai-1", "b", 2, Passed, None),
        rec("t-ai-2", "a", 1, Passed, None),
        rec("t-ai-2", "b", 1, Failed, Some(Budget)),
        rec("t-sys", "a", 1, Failed, Some(AgentError)),
        rec("t-sys", "b", 1, InfraError, None),
        rec("t-sys", "b", 2, Passed, None),
        rec("t-sci", "a", 1, Skipped, None),
        rec("t-sci", "b", 1, Failed, Some(Tampered)),
    ];
    v[2].tags.push(tag("dependency_repair", &format!("pip: error {EVIL} | x\x1b[31m")));
    v[3].tags.push(tag("dependency_repair", "pip install ok after retry"));
    v[6].tags.push(tag("network", "curl: (6) Could not resolve host"));
    v[7].error = Some("overlay mount failed\x1b]0;pwn\x07 & <b>".into());
    v[9].skip_reason = Some("gpus: the sandbox backend has no GPU".into());
    v
}

fn info(
    domain: &str,
    difficulty: &str,
    lang: &str,
    legacy: bool,
    gpu: bool,
    tags: &[&str],
    title: &str,
) -> TaskInfo {
    TaskInfo {
        title: title.into(),
        domain: domain.into(),
        difficulty: difficulty.into(),
        languages: vec![lang.into()],
        legacy,
        gpu,
        qemu: false,
        year: None,
        tags: tags.iter().map(|t| t.to_string()).collect(),
    }
}

fn tasks() -> BTreeMap<String, TaskInfo> {
    BTreeMap::from([
        ("t-ai-1".into(), info("ai", "easy", "python", false, false, &["x"], "first")),
        ("t-ai-2".into(), info("ai", "hard", "python", true, true, &["x", "y"], "second")),
        ("t-sys".into(), info("systems", "medium", "c", false, false, &[], "third")),
        (
            "t-sci".into(),
            info("scientific", "easy", "fortran", true, false, &["y"], &format!("Evil {EVIL} & co")),
        ),
    ])
}

fn input(tasks: Option<BTreeMap<String, TaskInfo>>) -> ReportInput {
    ReportInput {
        runs: vec![RunInput {
            run_id: "run-1".into(),
            agents: vec!["a".into(), "script-b-sh".into()],
            records: records(),
            ..Default::default()
        }],
        tasks,
        notes: vec![],
    }
}

fn report(by: SliceBy) -> Report {
    Report::build(input(Some(tasks())), by)
}

/// From `heading` to the next heading of its level or above.
fn section<'a>(doc: &'a str, heading: &str) -> &'a str {
    let start = doc.find(heading).unwrap_or_else(|| panic!("no {heading:?} in\n{doc}"));
    let level = heading.chars().take_while(|&c| c == '#').count();
    let rest = &doc[start + heading.len()..];
    let end = (1..=level)
        .filter_map(|k| rest.find(&format!("\n{} ", "#".repeat(k))))
        .min()
        .map_or(rest.len(), |i| i + 1);
    &rest[..end]
}

fn table_lines(section: &str) -> Vec<&str> {
    section.lines().filter(|l| l.starts_with('|')).collect()
}

#[test]
fn markdown_has_deploybench_table() {
    let md = render_markdown(&report(SliceBy::Domain));
    // Wilson by hand (z = 1.96): 3/4 -> centre (.75 + .48015)/1.96037 =
    // .62750, half 1.95996/1.96037 * sqrt(.046875 + .060024) = .32686 ->
    // [30.1, 95.4]; 2/5 -> [11.8, 76.9]; 3/3 -> [43.9, 100]; 1/3 -> [6.1,
    // 79.2]; 0/1 -> [0, 79.3]; 1/1 -> [20.7, 100].
    let expected = [
        "| by domain | a | script-b-sh |",
        "|---|---:|---:|",
        "| **Overall** | 3/4 (75.0%) [30.1–95.4] | 2/5 (40.0%) [11.8–76.9] |",
        "| ai (2 tasks) | 3/3 (100.0%) [43.9–100.0] | 1/3 (33.3%) [6.1–79.2] |",
        "| systems (1 task) | 0/1 (0.0%) [0.0–79.3] | 1/1 (100.0%) [20.7–100.0] |",
        "| scientific (1 task) | - | 0/1 (0.0%) [0.0–79.3] |",
        "| infra_error (outside n) | 0 | 1 |",
        "| skipped (outside n) | 1 | 0 |",
    ];
    assert_eq!(table_lines(section(&md, "## Pass rate")), expected, "\n{md}");
    assert!(md.contains("Left out of every rate: 1 infra error and 1 skipped trial."), "{md}");
    // The SPEC `script:/x/<b>.sh` is Markdown-escaped.
    assert!(md.contains("script-b-sh = script:/x/&lt;b&gt;.sh"), "{md}");
}

#[test]
fn markdown_statistics_sections() {
    let md = render_markdown(&report(SliceBy::Domain));
    // pass@1 of a: tasks (2/2, 1/1, 0/1) -> (1 + 1 + 0)/3; of b: (1/2,
    // 0/1, 1/1, 0/1; the infra error is not a trial) -> (.5+0+1+0)/4.
    // pass@2 and pass^2 only on t-ai-1: a 2/2 -> 1 and 1; b 1/2 -> 1 - C(1,2)/C(2,2) = 1, C(1,2)/C(2,2) = 0.
    let expected = [
        "| statistic | a | script-b-sh |",
        "|---|---:|---:|",
        "| pass@1 | 66.7% | 37.5% |",
        "| pass@2 | 100.0% (1 of 3 tasks) | 100.0% (1 of 4 tasks) |",
        "| pass^2 | 100.0% (1 of 3 tasks) | 0.0% (1 of 4 tasks) |",
        "| tasks always / sometimes / never passed | 2 / 0 / 1 | 1 / 1 / 2 |",
        "| per-task rate: mean ± sd | 66.7% ± 57.7 | 37.5% ± 47.9 |",
    ];
    assert_eq!(table_lines(section(&md, "## Repeated trials")), expected, "\n{md}");

    // First judged trials: t-ai-1 a ✓ b ✗, t-ai-2 a ✓ b ✗, t-sys a ✗ b ✓
    // (its trial 2: trial 1 was an infra error); t-sci has no judged
    // trial of a: left out. Table (both, only a, only b, neither) =
    // (0, 2, 1, 0): 2/3 against 1/3, +33.3 points. McNemar: m = 3,
    // 2 * P(X <= 1) = 2 * 4/8 = 1. Newcombe: ad - bc = -2, margins
    // 2*1*1*2 = 4, phi = -1; Wilson 2/3 = [.2077, .9385], 1/3 = [.0615,
    // .7923]; lower = .3333 - sqrt(.4590² + 2*.4590² + .4590²) = -.5847,
    // upper = .3333 + sqrt(4 * .2718²) = .8770.
    let pairs = table_lines(section(&md, "## Paired comparisons"));
    assert_eq!(
        pairs[2],
        "| a | script-b-sh | 3 (1 left out) | 2/3 (66.7%) | 1/3 (33.3%) | +33.3 [-58.5, +87.7] | 2 / 1 | 1.000 |"
    );
    assert!(md.contains("first judged trial"), "the pairing rule is stated");
}

#[test]
fn markdown_failure_analysis_and_matrix() {
    let md = render_markdown(&report(SliceBy::Domain));
    let classes = table_lines(section(&md, "### Classes"));
    assert_eq!(
        classes,
        [
            "| class | a | script-b-sh | all |",
            "|---|---:|---:|---:|",
            "| self_stop | 0 | 1 (33%) | 1 (25%) |",
            "| budget | 0 | 1 (33%) | 1 (25%) |",
            "| agent_error | 1 (100%) | 0 | 1 (25%) |",
            "| tampered | 0 | 1 (33%) | 1 (25%) |",
        ]
    );
    let tags = section(&md, "### Tags");
    let lines = table_lines(tags);
    assert_eq!(lines[2], "| dependency_repair | 0 | 1 (33%) | 1 (25%) | 1 |", "{tags}");
    assert_eq!(lines[3], "| network | 1 (100%) | 0 | 1 (25%) | 0 |", "{tags}");
    // Each tag lists its trials and their evidence, escaped.
    assert!(tags.contains("- t-ai-1 · script-b-sh #1 (failed, self_stop)"), "{tags}");
    assert!(
        tags.contains(
            "  - agent.log:120: pip: error &lt;script&gt;alert('x')&lt;/script&gt; \\| x\\\\x1b\\[31m"
        ),
        "{tags}"
    );
    assert!(!md.contains("<script"), "{md}");

    let matrix = table_lines(section(&md, "## Task × agent"));
    assert_eq!(
        matrix,
        [
            "| task | domain | a | script-b-sh |",
            "|---|---|---:|---:|",
            "| t-ai-1 | ai | ✓✓ 2/2 | ✗✓ 1/2 |",
            "| t-ai-2 | ai | ✓ | ✗ |",
            "| t-sci | scientific | S | ✗ |",
            "| t-sys | systems | ✗ | E✓ 1/1 |",
        ]
    );
    let costs = table_lines(section(&md, "## Cost, tokens and time"));
    // a: 5 trials ran (skipped one did not) at $0.25 and 1000 + 200
    // tokens each; times 10/20/10/10 s agent + 1 s verify -> 11, 21, 11, 11.
    assert!(costs.contains(&"| trials run (not skipped) | 4 | 6 |"), "{costs:?}");
    assert!(costs.contains(&"| cost | $1.00 | $0.00 |"), "{costs:?}");
    assert!(costs.contains(&"| prompt tokens | 4,000 | 0 |"), "{costs:?}");
    assert!(costs.contains(&"| time per trial: median | 11.0s | 11.0s |"), "{costs:?}");
    assert!(!md.chars().any(|c| c.is_control() && c != '\n'), "no control characters reach a terminal");
}

#[test]
fn slices_by_other_fields() {
    let rows = |by| {
        let md = render_markdown(&report(by));
        table_lines(section(&md, "## Pass rate"))
            .iter()
            .map(|l| l.split(" |").next().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(rows(SliceBy::Difficulty)[3..6], ["| easy (2 tasks)", "| medium (1 task)", "| hard (1 task)"]);
    assert_eq!(rows(SliceBy::Gpu)[3..5], ["| GPU (1 task)", "| no GPU (3 tasks)"]);
    assert_eq!(rows(SliceBy::Legacy)[3..5], ["| legacy (2 tasks)", "| not legacy (2 tasks)"]);
    assert_eq!(rows(SliceBy::Language)[3..6], ["| c (1 task)", "| fortran (1 task)", "| python (2 tasks)"]);
    // A task is in every slice of its tags.
    assert_eq!(rows(SliceBy::Tag)[3..6], ["| (no tag) (1 task)", "| x (2 tasks)", "| y (2 tasks)"]);
}

#[test]
fn without_metadata_there_are_no_slices_and_the_report_says_so() {
    let mut i = input(None);
    i.notes.push("task metadata could not be loaded: /gone".into());
    let md = render_markdown(&Report::build(i, SliceBy::Domain));
    let rows = table_lines(section(&md, "## Pass rate"));
    assert_eq!(rows.len(), 5, "{md}");
    assert!(md.contains("No rows per slice"), "{md}");
    assert!(md.contains("> Note: task metadata could not be loaded: /gone"), "{md}");
    // Tasks missing from the metadata fall into their own slice.
    let mut partial = tasks();
    partial.remove("t-sys");
    let md = render_markdown(&Report::build(input(Some(partial)), SliceBy::Domain));
    assert!(
        md.contains("| (unknown task) (1 task) | 0/1 (0.0%) [0.0–79.3] | 1/1 (100.0%) [20.7–100.0] |"),
        "{md}"
    );
}

#[test]
fn the_same_agent_in_two_runs_makes_two_columns() {
    let mut second = records();
    for r in &mut second {
        r.outcome = Outcome::Failed;
        r.class = Some(FailureClass::SelfStop);
    }
    let i = ReportInput {
        runs: vec![
            RunInput {
                run_id: "run-1".into(),
                agents: vec!["a".into(), "script-b-sh".into()],
                records: records(),
                ..Default::default()
            },
            RunInput {
                run_id: "run-2".into(),
                agents: vec!["a".into()],
                records: second,
                ..Default::default()
            },
        ],
        tasks: Some(tasks()),
        notes: vec![],
    };
    let r = Report::build(i, SliceBy::Domain);
    let labels: Vec<&str> = r.arms.iter().map(|a| a.label.as_str()).collect();
    assert_eq!(labels, ["a@run-1", "script-b-sh@run-1", "a@run-2", "script-b-sh@run-2"]);
    let md = render_markdown(&r);
    assert!(
        md.contains("| **Overall** | 3/4 (75.0%) [30.1–95.4] | 2/5 (40.0%) [11.8–76.9] | 0/5 (0.0%)"),
        "{md}"
    );
    // a@run-1 against a@run-2 on the same tasks: 2 passed only in run 1
    // of 3 (t-sys failed in both).
    assert!(md.contains("| a@run-1 | a@run-2 | 3 (1 left out) | 2/3 (66.7%) | 0/3 (0.0%) |"), "{md}");
}

#[test]
fn json_has_a_row_per_trial_and_the_summary() {
    let text = render_json(&report(SliceBy::Domain));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["format"], "cleanroom-report");
    assert_eq!(v["by"], "domain");
    let trials = v["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 11);
    let sci = trials.iter().find(|t| t["task"] == "t-sci" && t["agent"] == "script-b-sh").unwrap();
    assert_eq!(sci["domain"], "scientific");
    assert_eq!(sci["legacy"], true);
    assert_eq!(sci["title"], format!("Evil {EVIL} & co"), "JSON keeps strings; serde escapes them");
    assert_eq!(sci["class"], "tampered");
    let s = &v["summary"];
    assert_eq!(s["left_out"], serde_json::json!({"infra_error": 1, "skipped": 1, "negative_control": 0}));
    assert_eq!(s["agents"][0]["overall"]["passed"], 3);
    assert_eq!(s["agents"][0]["overall"]["n"], 4);
    assert_eq!(s["agents"][1]["counts"]["failed_by_class"]["self_stop"], 1);
    assert_eq!(s["slices"][0]["label"], "ai", "the task format's name, as each trial's domain");
    assert_eq!(s["comparisons"]["pairs"][0]["comparison"]["table"]["only_a"], 2);
    assert!(
        (s["comparisons"]["pairs"][0]["comparison"]["interval"]["lo"].as_f64().unwrap() + 0.58468).abs()
            < 1e-4
    );
    assert_eq!(s["repeats"]["rows"][1]["k"], 2);
    assert_eq!(s["tags"][0]["name"], "dependency_repair");
    assert!(!text.contains('\x1b'), "serde_json escapes control characters");
}

#[test]
fn csv_has_the_same_columns_and_no_control_characters() {
    let text = render_csv(&report(SliceBy::Domain));
    let mut rdr = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = rdr.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(&header[..4], ["run_id", "task", "agent", "agent_spec"]);
    for col in [
        "outcome",
        "class",
        "domain",
        "difficulty",
        "main_language",
        "legacy",
        "gpu",
        "task_tags",
        "cost_usd",
    ] {
        assert!(header.contains(&col.to_string()), "{col}");
    }
    let rows: Vec<csv::StringRecord> = rdr.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 11);
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let infra = rows.iter().find(|r| &r[col("outcome")] == "infra_error").unwrap();
    assert_eq!(&infra[col("error")], "overlay mount failed\\x1b]0;pwn\\x07 & <b>");
    let ai2 = rows.iter().find(|r| &r[col("task")] == "t-ai-2").unwrap();
    assert_eq!(&ai2[col("task_tags")], "x;y");
    assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "{text}");
    // No records: the header alone.
    let empty = Report::build(ReportInput::default(), SliceBy::Domain);
    assert_eq!(render_csv(&empty).lines().count(), 1);
}

#[test]
fn junit_is_valid_xml_with_a_suite_per_agent() {
    let xml = render_junit(&report(SliceBy::Domain));
    let names = check_xml(&xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
    assert_eq!(names.iter().filter(|n| *n == "testsuite").count(), 2);
    assert_eq!(names.iter().filter(|n| *n == "testcase").count(), 11);
    // What Jenkins xunit's junit-10.xsd allows: <testsuites> has no
    // `skipped`; each suite says when and where it ran.
    assert!(
        xml.contains(
            "<testsuites name=\"cleanroom\" tests=\"11\" failures=\"3\" errors=\"2\" time=\"151.000\">"
        ),
        "{xml}"
    );
    assert!(
        xml.contains("<testsuite name=\"script-b-sh\" tests=\"6\" failures=\"3\" errors=\"1\" time=\"86.000\" skipped=\"0\" timestamp=\"20"),
        "{xml}"
    );
    let suites: Vec<&str> = xml.split("<testsuite ").skip(1).collect();
    assert!(suites.iter().all(|s| s.contains(" hostname=\"")), "{xml}");
    assert!(xml.contains("<property name=\"script-b-sh.agent\" value=\"script:/x/&lt;b&gt;.sh\"/>"), "{xml}");
    let mut properties: Vec<&str> =
        xml.split("<property name=\"").skip(1).map(|p| p.split('"').next().unwrap()).collect();
    let all = properties.len();
    properties.sort_unstable();
    properties.dedup();
    assert_eq!(properties.len(), all, "property names repeat across suites: {xml}");
    // An agent error is an <error> with the error's text, counted as one.
    assert!(xml.contains("<error type=\"agent_error\" message=\""), "{xml}");
    assert!(xml.contains("<failure type=\"self_stop\" message=\"self_stop (stage none)\">"), "{xml}");
    assert!(
        xml.contains(
            "<error type=\"infra_error\" message=\"overlay mount failed\\x1b]0;pwn\\x07 &amp; &lt;b&gt;\">"
        ),
        "{xml}"
    );
    assert!(xml.contains("<skipped message=\"gpus: the sandbox backend has no GPU\"/>"), "{xml}");
    assert!(xml.contains("pip: error &lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; | x\\x1b[31m"), "{xml}");
    // An empty report is still one valid document.
    check_xml(&render_junit(&Report::build(ReportInput::default(), SliceBy::Domain))).unwrap();
}

#[test]
fn html_is_self_contained_escaped_and_well_formed() {
    let html = render_html(&report(SliceBy::Domain));
    let names = check_xml(&html).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(names.iter().filter(|n| *n == "svg").count(), 3, "rate, outcome and time charts");
    assert!(!html.contains("<script"), "no script element");
    assert!(
        html.contains("Evil &lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; co"),
        "the title, escaped"
    );
    assert!(html.contains("Content-Security-Policy\" content=\"default-src 'none'"));
    // Nothing is fetched: the only URL is the SVG namespace, which
    // browsers never load.
    let urls: Vec<&str> =
        html.match_indices("://").map(|(i, _)| &html[i.saturating_sub(4)..i + 25]).collect();
    assert!(urls.iter().all(|u| u.starts_with("http://www.w3.org/2000/svg\"")), "{urls:?}");
    for forbidden in ["<link", "<img", "<iframe", "@import", "url(", "src="] {
        assert!(!html.contains(forbidden), "{forbidden}");
    }
    assert!(html.contains("pass rate per group with 95% intervals"));
    assert!(!html.chars().any(|c| c.is_control() && c != '\n'));
}

/// One failed trial per class row and per stage, one trial per outcome:
/// every variant of each enum, so that a new one shows up here unasked.
fn every_variant() -> Report {
    let mut records = Vec::new();
    let mut task = 0;
    let mut add = |outcome, class, stage| {
        task += 1;
        let mut r = rec(&format!("t-{task}"), "a", 1, outcome, class);
        r.stage = stage;
        records.push(r);
    };
    for class in FailureClass::ALL.map(Some).into_iter().chain([None]) {
        add(Outcome::Failed, class, VerdictStage::None);
    }
    for stage in VerdictStage::ALL {
        add(Outcome::Failed, Some(FailureClass::SelfStop), stage);
    }
    for outcome in Outcome::ALL {
        add(outcome, None, VerdictStage::None);
    }
    Report::build(
        ReportInput {
            runs: vec![RunInput {
                run_id: "run-1".into(),
                agents: vec!["a".into()],
                records,
                ..Default::default()
            }],
            tasks: None,
            notes: vec![],
        },
        SliceBy::Domain,
    )
}

#[test]
fn every_outcome_class_and_stage_has_its_row_in_every_report() {
    let report = every_variant();
    let md = render_markdown(&report);
    let first_cells = |heading| -> Vec<String> {
        table_lines(section(&md, heading))
            .iter()
            .skip(2)
            .map(|l| l.split(" |").next().unwrap()[2..].to_string())
            .collect()
    };
    let class_names: Vec<&str> = ClassRow::all().map(ClassRow::as_str).collect();
    assert_eq!(first_cells("### Classes"), class_names);
    let stage_names: Vec<&str> = VerdictStage::ALL.map(VerdictStage::as_str).to_vec();
    assert_eq!(first_cells("### Stage reached by failed trials"), stage_names);

    // The outcome chart's legend: passed, the class rows, the outcomes
    // outside the rate.
    let html = render_html(&report);
    let chart = &html[html.find("Outcomes and failure classes").unwrap()..];
    let chart = &chart[..chart.find("</svg>").unwrap()];
    let outside_classes = Outcome::ALL.into_iter().filter(|&o| o != Outcome::Failed).map(Outcome::as_str);
    for name in outside_classes.chain(class_names.iter().copied()) {
        assert!(chart.contains(&format!("<title>{name}</title>")), "{name} in\n{chart}");
    }

    let json: serde_json::Value = serde_json::from_str(&render_json(&report)).unwrap();
    let counts = &json["summary"]["agents"][0]["counts"];
    for name in &class_names {
        assert!(counts["failed_by_class"][name].is_u64(), "{name} in {counts}");
    }
    for name in &stage_names {
        assert!(counts["failed_by_stage"][name].is_u64(), "{name} in {counts}");
    }

    // The terminal's table: passed, every class, the outcomes outside the rate.
    let records: Vec<TrialRecord> = report.trials.iter().map(|t| t.record.clone()).collect();
    let table = summary_table(&Summary::from_records(&records, records.len()));
    let head: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    let mut expected = vec!["agent", Outcome::Passed.as_str()];
    expected.extend(FailureClass::ALL.map(FailureClass::as_str));
    expected.extend([Outcome::InfraError.as_str(), Outcome::Skipped.as_str()]);
    assert_eq!(head, expected);
}

/// The set plus a negative-control task `t-control`: `a` passed it (a
/// forgery or a broken verifier), `script-b-sh` failed it as it should.
/// Neither trial moves a rate, and every format names the pass.
#[test]
fn a_pass_on_a_negative_control_is_flagged_everywhere_and_counted_nowhere() {
    let mut with_controls = input(Some(tasks()));
    let control = |agent: &str, outcome| {
        let mut r = rec("t-control", agent, 1, outcome, None);
        r.negative_control = true;
        r
    };
    with_controls.runs[0].records.push(control("a", Outcome::Passed));
    let mut failed = control("b", Outcome::Failed);
    failed.class = Some(FailureClass::SelfStop);
    with_controls.runs[0].records.push(failed);
    let plain = report(SliceBy::Domain);
    let report = Report::build(with_controls, SliceBy::Domain);
    for arm in 0..2 {
        assert_eq!(report.overall(arm), plain.overall(arm), "arm {arm}: the rate is unchanged");
    }
    assert_eq!(report.comparisons()[0].comparison, plain.comparisons()[0].comparison);
    assert_eq!(report.counts(0).negative_control, 1);
    assert_eq!(report.counts(0).passed, plain.counts(0).passed);

    let suspected = "t-control a #1";
    let markdown = render_markdown(&report);
    assert!(markdown.contains("and 2 trials of negative controls."), "{markdown}");
    assert!(markdown.contains("**Suspected:** t-control a \\#1 passed a negative control"), "{markdown}");
    let html = render_html(&report);
    check_xml(&html).unwrap();
    assert!(html.contains(&format!("<p class=\"suspected\">{suspected}: passed a negative control")));
    let json: serde_json::Value = serde_json::from_str(&render_json(&report)).unwrap();
    assert_eq!(json["summary"]["left_out"]["negative_control"], 2);
    assert_eq!(json["summary"]["suspected"], serde_json::json!([suspected]));
    let xml = render_junit(&report);
    check_xml(&xml).unwrap();
    assert!(xml.contains("<failure type=\"negative_control_passed\""), "{xml}");
    assert!(xml.contains("<testsuites name=\"cleanroom\" tests=\"13\" failures=\"4\" errors=\"2\""), "{xml}");
    let csv = render_csv(&report);
    assert!(csv.lines().next().unwrap().contains(",negative_control,"), "{csv}");

    let summary =
        Summary::from_records(&report.trials.iter().map(|t| t.record.clone()).collect::<Vec<_>>(), 13);
    let table = summary_table(&summary);
    assert!(table.contains("negative controls, outside every rate: 2 trials, 1 passed"), "{table}");
    assert!(table.contains(&format!("SUSPECT {suspected}: passed a negative control")), "{table}");
    let line = cleanroom_report::trial_line(&report.trials.iter().find(|t| t.suspected()).unwrap().record);
    assert!(line.starts_with("SUSPECT t-control  a #1  passed a negative control"), "{line}");
}

#[test]
fn each_failed_trial_names_its_first_failure_and_where_its_log_is() {
    use cleanroom_verify::{CheckResult, StepResult, Verdict};
    let mut records = records();
    let step = |name: &str, status: &str, exit_code: Option<i32>| -> StepResult {
        serde_json::from_value(serde_json::json!(
            {"name": name, "stage": "build", "exit_code": exit_code, "seconds": 1.0, "status": status}
        ))
        .unwrap()
    };
    // t-ai-1 b #1: the build failed with exit 2; t-ai-2 b: a check failed.
    records[2].verdict =
        Some(Verdict::new(vec![step("make <all>", "failed", Some(2)), step("run", "not_run", None)], vec![]));
    records[5].verdict = Some(Verdict::new(
        vec![step("make", "passed", Some(0))],
        vec![CheckResult {
            name: "loss".into(),
            passed: false,
            expected: "0.5 ± 1e-3".into(),
            observed: "0.7".into(),
        }],
    ));
    records[6].error = Some("model API answered 429 three times\nmore".into());
    records[10].tampered = vec!["verify.sh".into()];
    let mut i = input(Some(tasks()));
    i.runs[0].records = records;
    let md = render_markdown(&Report::build(i.clone(), SliceBy::Domain));
    let failed = table_lines(section(&md, "### Failed trials"));
    assert_eq!(
        failed[2..],
        [
            "| t-ai-1 · script-b-sh \\#1 | failed, self_stop (stage none): build step make &lt;all&gt; exited 2 | run-1/trials/t-ai-1/script-b-sh/1/verify.log |",
            "| t-ai-2 · script-b-sh \\#1 | failed, budget (stage none): check loss: expected 0.5 ± 1e-3, observed 0.7 | run-1/trials/t-ai-2/script-b-sh/1/verify.log |",
            "| t-sci · script-b-sh \\#1 | failed, tampered (stage none): protected files changed: verify.sh | run-1/trials/t-sci/script-b-sh/1/changes.txt |",
            "| t-sys · a \\#1 | failed, agent_error (stage none): model API answered 429 three times | run-1/trials/t-sys/a/1/agent.log |",
            "| t-sys · script-b-sh \\#1 | infra_error: overlay mount failed\\\\x1b\\]0;pwn\\\\x07 &amp; &lt;b&gt; | run-1/trials/t-sys/script-b-sh/1/result.json |",
        ],
        "\n{md}"
    );
    let html = render_html(&Report::build(i, SliceBy::Domain));
    assert!(html.contains("<h3>Failed trials</h3>"));
    assert!(html.contains("build step make &lt;all&gt; exited 2"), "escaped in HTML too");
    assert!(html.contains("<td class=\"path\">run-1/trials/t-ai-1/script-b-sh/1/verify.log</td>"), "{html}");
}

#[test]
fn pairs_with_too_few_tasks_in_common_are_folded_into_a_count() {
    // Agent c ran only t-ai-1 and t-ai-2: two tasks in common with each of
    // a and script-b-sh, fewer than a comparison needs.
    let mut i = input(Some(tasks()));
    for task in ["t-ai-1", "t-ai-2"] {
        let mut r = TrialRecord::new(task, "script:/c.sh", "c", 1, 1);
        r.outcome = Outcome::Passed;
        i.runs[0].records.push(r);
    }
    let md = render_markdown(&Report::build(i, SliceBy::Domain));
    let pairs = section(&md, "## Paired comparisons");
    let rows = table_lines(pairs);
    assert_eq!(rows.len(), 3, "only a against script-b-sh: {pairs}");
    assert!(rows[2].starts_with("| a | script-b-sh | 3 (1 left out) |"), "{pairs}");
    assert!(pairs.contains("2 pairs of agents with fewer than 3 tasks in common left out."), "{pairs}");
}

/// llm:gpt with the gate off and enforced in one run (`--gate off --gate
/// enforced`), on the four tasks:
///
/// | task   | a-gate-off | a-gate-enforced |
/// |--------|------------|-----------------|
/// | t-ai-1 | self_stop  | ✓               |
/// | t-ai-2 | self_stop  | budget          |
/// | t-sys  | self_stop  | self_stop       |
/// | t-sci  | ✓          | ✓               |
fn gated(only: &[&str]) -> Report {
    use FailureClass::*;
    let mut records = Vec::new();
    for (task, off, on) in [
        ("t-ai-1", Some(SelfStop), None),
        ("t-ai-2", Some(SelfStop), Some(Budget)),
        ("t-sys", Some(SelfStop), Some(SelfStop)),
        ("t-sci", None, None),
    ] {
        if !only.contains(&task) {
            continue;
        }
        for (id, class) in [("a-gate-off", off), ("a-gate-enforced", on)] {
            let outcome = if class.is_some() { Outcome::Failed } else { Outcome::Passed };
            let mut r = rec(task, "a", 1, outcome, class);
            r.agent_id = id.into();
            records.push(r);
        }
    }
    let agents = [("a-gate-off", GateMode::Off), ("a-gate-enforced", GateMode::Enforced)];
    let run = RunInput {
        run_id: "run-1".into(),
        agents: agents.iter().map(|(id, _)| id.to_string()).collect(),
        records,
        gates: agents.iter().map(|&(id, gate)| (id.to_string(), gate)).collect(),
    };
    Report::build(ReportInput { runs: vec![run], tasks: Some(tasks()), notes: vec![] }, SliceBy::Domain)
}

#[test]
fn the_gate_effect_pairs_an_agent_off_and_on_in_markdown_html_and_json() {
    let report = gated(&["t-ai-1", "t-ai-2", "t-sys", "t-sci"]);
    // Off passed 1/4 (Wilson [4.6, 69.9]), on 2/4 ([15.0, 85.0]); the
    // table (both, only on, only off, neither) = (1, 1, 0, 2): +25 points.
    // Newcombe: ad - bc = 2, not above n/2, so phi = 0; lower = .25 -
    // sqrt(.34996² + .44936²) = -.31956, upper = .25 + sqrt(.34996² +
    // .20441²) = .65529. McNemar: one discordant task, p = 1. Three
    // self-stops off: one passed, one ran out of budget, one stopped again.
    let md = render_markdown(&report);
    let gate = section(&md, "## Gate effect");
    assert_eq!(
        table_lines(gate)[2..],
        ["| a-gate-off → a-gate-enforced | enforced | 4 | 1/4 (25.0%) [4.6–69.9] | 2/4 (50.0%) [15.0–85.0] \
          | +25.0 [-32.0, +65.5] | 1 / 0 | 1.000 | 3 | 1 | 1 | 1 | 0 |"],
        "\n{gate}"
    );
    assert!(
        gate.contains("first judged trial") && gate.contains("McNemar"),
        "the rule and the test are said"
    );
    assert!(!gate.contains("(few)"), "{gate}");

    let html = render_html(&report);
    check_xml(&html).unwrap_or_else(|e| panic!("{e}"));
    let from = html.find("<h2>Gate effect</h2>").unwrap_or_else(|| panic!("{html}"));
    let to = from + html[from..].find("</table>").unwrap();
    let in_html = &html[from..to];
    assert!(
        in_html.contains("<td>a-gate-off → a-gate-enforced</td><td class=\"text\">enforced</td>"),
        "{in_html}"
    );
    assert!(in_html.contains("+25.0 [-32.0, +65.5]"), "{in_html}");

    let json: serde_json::Value = serde_json::from_str(&render_json(&report)).unwrap();
    let row = &json["summary"]["gate_effect"]["rows"][0];
    assert_eq!(row["mode"], "enforced");
    assert_eq!(
        row["self_stops"],
        serde_json::json!({"off": 3, "passed": 1, "budget": 1, "self_stop": 1, "other": 0})
    );
    assert_eq!((row["off_rate"]["passed"].as_u64(), row["on_rate"]["passed"].as_u64()), (Some(1), Some(2)));
    assert_eq!(row["comparison"]["table"]["only_a"], 1, "A is the gate on");
    assert_eq!(json["summary"]["agents"][1]["gate"], "enforced");

    // Without gates known, no section; with fewer than three tasks in
    // common the row stays, marked.
    assert!(!render_markdown(&self::report(SliceBy::Domain)).contains("Gate effect"));
    let few = render_markdown(&gated(&["t-ai-1", "t-sci"]));
    let gate = section(&few, "## Gate effect");
    assert!(
        table_lines(gate)[2].starts_with("| a-gate-off → a-gate-enforced | enforced | 2 (few) |"),
        "{gate}"
    );
    assert!(gate.contains("fewer than 3 tasks in common"), "{gate}");
}
