mod common;

use cleanroom_task::{load_tasks, render_list, ListFormat, CSV_COLUMNS};
use common::fixtures;

#[test]
fn csv_has_deploybench_columns() {
    let tasks = load_tasks(&[fixtures()]).unwrap();
    let out = render_list(&tasks, ListFormat::Csv);
    let mut rd = csv::Reader::from_reader(out.as_bytes());
    let header: Vec<String> = rd.headers().unwrap().iter().map(str::to_owned).collect();
    assert_eq!(
        header,
        [
            "task_name",
            "paper_title",
            "difficulty",
            "agent_time",
            "type",
            "pre2020",
            "gpu",
            "main_language",
            "qemu"
        ]
    );
    assert_eq!(header, CSV_COLUMNS);
    let rows: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 2);
    let heat: Vec<&str> = rows[0].iter().collect();
    assert_eq!(
        heat,
        [
            "heat-2d",
            "A Fast Solver for the Heat Equation",
            "hard",
            "1800",
            "scientific",
            "yes",
            "no",
            "fortran",
            "no"
        ]
    );
    // No [paper] title: the task's title; no languages: empty.
    let minimal: Vec<&str> = rows[1].iter().collect();
    assert_eq!(minimal, ["minimal", "A minimal task", "medium", "600", "ai", "no", "no", "", "no"]);
}

#[test]
fn csv_quotes_what_needs_quoting_and_maps_systems_to_sys() {
    let tmp = tempfile::tempdir().unwrap();
    let toml = "schema_version = 1\n[task]\ntitle = \"Fast, \\\"exact\\\" sorting\"\ndomain = \"systems\"\ngpu = true\nqemu = true\nlanguages = [\"c\", \"python\"]\n[agent]\ntimeout_sec = 7200\n";
    common::write_task(tmp.path(), "sorter", toml, common::CHECK);
    let tasks = load_tasks(&[tmp.path().to_path_buf()]).unwrap();
    let out = render_list(&tasks, ListFormat::Csv);
    assert!(out.contains("\"Fast, \"\"exact\"\" sorting\""), "{out}");
    let mut rd = csv::Reader::from_reader(out.as_bytes());
    let row = rd.records().next().unwrap().unwrap();
    let row: Vec<&str> = row.iter().collect();
    assert_eq!(row, ["sorter", "Fast, \"exact\" sorting", "medium", "7200", "sys", "no", "yes", "c", "yes"]);
}

#[test]
fn json_lists_every_field() {
    let tasks = load_tasks(&[fixtures()]).unwrap();
    let out = render_list(&tasks, ListFormat::Json);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let list = v.as_array().unwrap();
    assert_eq!(list.len(), 2);
    let heat = &list[0];
    let keys: Vec<&str> = heat.as_object().unwrap().keys().map(String::as_str).collect();
    let mut expected = vec![
        "id",
        "path",
        "title",
        "domain",
        "difficulty",
        "languages",
        "legacy",
        "gpu",
        "qemu",
        "tags",
        "source",
        "agent_timeout_sec",
    ];
    let mut keys_sorted = keys.clone();
    keys_sorted.sort();
    expected.sort();
    assert_eq!(keys_sorted, expected);
    assert_eq!(heat["id"], "heat-2d");
    assert!(heat["path"].as_str().unwrap().ends_with("fixtures/tasks/heat-2d"));
    assert_eq!(heat["title"], "2-D heat equation solver, Table 2");
    assert_eq!(heat["domain"], "scientific");
    assert_eq!(heat["difficulty"], "hard");
    assert_eq!(heat["languages"], serde_json::json!(["fortran", "python"]));
    assert_eq!(heat["legacy"], true);
    assert_eq!(heat["gpu"], false);
    assert_eq!(heat["qemu"], false);
    assert_eq!(heat["tags"], serde_json::json!(["lapack", "pde"]));
    assert_eq!(heat["source"], "dir");
    assert_eq!(heat["agent_timeout_sec"], 1800);
    assert_eq!(list[1]["id"], "minimal");
    assert_eq!(list[1]["languages"], serde_json::json!([]));
}

#[test]
fn table_is_aligned_and_empty_lists_work() {
    let tasks = load_tasks(&[fixtures()]).unwrap();
    let out = render_list(&tasks, ListFormat::Table);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3);
    assert!(lines[0].starts_with("ID "));
    let title_col = lines[0].find("TITLE").unwrap();
    assert_eq!(&lines[1][title_col..], "2-D heat equation solver, Table 2");
    assert_eq!(&lines[2][title_col..], "A minimal task");
    assert!(lines[1].contains("30m") && lines[1].contains("legacy"));

    assert_eq!(render_list(&[], ListFormat::Json).trim(), "[]");
    assert_eq!(render_list(&[], ListFormat::Csv).lines().count(), 1);
    assert_eq!(render_list(&[], ListFormat::Table).lines().count(), 1);
}

#[test]
fn task_serializes_to_json() {
    let tasks = load_tasks(&[fixtures().join("heat-2d")]).unwrap();
    let v = serde_json::to_value(&tasks[0]).unwrap();
    assert_eq!(v["spec"]["artifact"]["source"]["source"], "dir");
    assert_eq!(v["verify"]["checks"][1]["select"]["regex"], "checksum: ([0-9a-f]{16})");
    assert_eq!(v["verify"]["steps"][0]["stage"], "setup");
}

/// `pre2020` is the paper's year where it is known, whatever `legacy` says
/// (legacy code can come with a recent paper, and the other way round).
#[test]
fn pre2020_comes_from_the_papers_year() {
    let tmp = tempfile::tempdir().unwrap();
    for (id, legacy, year) in
        [("old-paper", false, "2016"), ("new-paper", true, "2022"), ("no-year", true, "")]
    {
        let paper = if year.is_empty() { String::new() } else { format!("[paper]\nyear = {year}\n") };
        let toml =
            format!("schema_version = 1\n[task]\ntitle = \"t\"\ndomain = \"ai\"\nlegacy = {legacy}\n[agent]\ntimeout_sec = 600\n{paper}");
        common::write_task(tmp.path(), id, &toml, common::CHECK);
    }
    let tasks = load_tasks(&[tmp.path().to_path_buf()]).unwrap();
    let out = render_list(&tasks, ListFormat::Csv);
    let mut rd = csv::Reader::from_reader(out.as_bytes());
    let pre2020: Vec<(String, String)> =
        rd.records().map(Result::unwrap).map(|r| (r[0].to_string(), r[5].to_string())).collect();
    let want = [("new-paper", "no"), ("no-year", "yes"), ("old-paper", "yes")];
    assert_eq!(pre2020, want.map(|(a, b)| (a.to_string(), b.to_string())));
}
