//! `cleanroom tasks list`: a table for people, DeployBench's papers.csv
//! columns, or JSON.

use std::fmt::Write as _;
use std::str::FromStr;

use serde::Serialize;

use crate::load::Task;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ListFormat {
    #[default]
    Table,
    Csv,
    Json,
}

impl FromStr for ListFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "table" => Ok(ListFormat::Table),
            "csv" => Ok(ListFormat::Csv),
            "json" => Ok(ListFormat::Json),
            _ => Err(format!("unknown list format {s:?}; expected table, csv or json")),
        }
    }
}

/// The listing of `tasks` in `format`, ending with a newline.
pub fn render_list(tasks: &[Task], format: ListFormat) -> String {
    match format {
        ListFormat::Table => render_table(tasks),
        ListFormat::Csv => render_csv(tasks),
        ListFormat::Json => render_json(tasks),
    }
}

/// DeployBench's papers.csv columns.
pub const CSV_COLUMNS: [&str; 9] = [
    "task_name",
    "paper_title",
    "difficulty",
    "agent_time",
    "type",
    "pre2020",
    "gpu",
    "main_language",
    "qemu",
];

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// DeployBench's `pre2020`: the paper came out before 2020. Where the
/// year is not known, the task's `legacy` flag stands in for it.
fn pre2020(t: &Task) -> bool {
    t.spec.paper.year.map_or(t.spec.task.legacy, |year| year < 2020)
}

fn render_csv(tasks: &[Task]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    // Writing to a Vec cannot fail.
    let _ = w.write_record(CSV_COLUMNS);
    for t in tasks {
        let s = &t.spec;
        let agent_time = s.agent.timeout_sec.to_string();
        let record = [
            t.id.as_str(),
            s.paper.title.as_deref().unwrap_or(&s.task.title),
            s.task.difficulty.as_str(),
            agent_time.as_str(),
            s.task.domain.deploybench_type(),
            yes_no(pre2020(t)),
            yes_no(s.task.gpu),
            s.task.languages.first().map_or("", String::as_str),
            yes_no(s.task.qemu),
        ];
        let _ = w.write_record(record);
    }
    let bytes = w.into_inner().unwrap_or_default();
    String::from_utf8(bytes).unwrap_or_default()
}

/// One task in `tasks list --format json`.
#[derive(Debug, Clone, Serialize)]
pub struct ListEntry<'a> {
    pub id: &'a str,
    pub path: String,
    pub title: &'a str,
    pub domain: &'static str,
    pub difficulty: &'static str,
    pub languages: &'a [String],
    pub legacy: bool,
    pub gpu: bool,
    pub qemu: bool,
    pub tags: &'a [String],
    pub source: &'static str,
    pub agent_timeout_sec: u64,
}

impl<'a> ListEntry<'a> {
    pub fn new(t: &'a Task) -> Self {
        let s = &t.spec;
        ListEntry {
            id: &t.id,
            path: t.dir.display().to_string(),
            title: &s.task.title,
            domain: s.task.domain.as_str(),
            difficulty: s.task.difficulty.as_str(),
            languages: &s.task.languages,
            legacy: s.task.legacy,
            gpu: s.task.gpu,
            qemu: s.task.qemu,
            tags: &s.task.tags,
            source: s.artifact.source.kind(),
            agent_timeout_sec: s.agent.timeout_sec,
        }
    }
}

fn render_json(tasks: &[Task]) -> String {
    let entries: Vec<ListEntry<'_>> = tasks.iter().map(ListEntry::new).collect();
    let mut out = serde_json::to_string_pretty(&entries).unwrap_or_else(|_| "[]".to_owned());
    out.push('\n');
    out
}

fn render_table(tasks: &[Task]) -> String {
    let header = ["ID", "DOMAIN", "DIFFICULTY", "AGENT TIME", "SOURCE", "LANGUAGES", "NEEDS", "TITLE"];
    let rows: Vec<[String; 8]> = tasks
        .iter()
        .map(|t| {
            let s = &t.spec;
            let needs: Vec<&str> = [
                ("legacy", s.task.legacy),
                ("gpu", s.task.gpu),
                ("qemu", s.task.qemu),
                ("machine", s.environment.machine),
            ]
            .into_iter()
            .filter_map(|(n, on)| on.then_some(n))
            .collect();
            [
                t.id.clone(),
                s.task.domain.as_str().to_owned(),
                s.task.difficulty.as_str().to_owned(),
                duration(s.agent.timeout_sec),
                s.artifact.source.kind().to_owned(),
                or_dash(s.task.languages.join(",")),
                or_dash(needs.join(",")),
                s.task.title.clone(),
            ]
            .map(|c| printable(&c))
        })
        .collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &[&str]| {
        let mut l = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                l.push_str(c);
            } else {
                let _ = write!(l, "{c:<w$}  ", w = widths[i]);
            }
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(&header);
    for row in &rows {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        line(&cells);
    }
    out
}

fn or_dash(s: String) -> String {
    if s.is_empty() {
        "-".to_owned()
    } else {
        s
    }
}

/// `5400` -> `1h30m`.
fn duration(secs: u64) -> String {
    let (h, m, s) = (secs / 3600, secs % 3600 / 60, secs % 60);
    let mut out = String::new();
    if h > 0 {
        let _ = write!(out, "{h}h");
    }
    if m > 0 {
        let _ = write!(out, "{m}m");
    }
    if s > 0 || out.is_empty() {
        let _ = write!(out, "{s}s");
    }
    out
}

/// Control characters from task files never reach the terminal raw.
fn printable(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { '\u{fffd}' } else { c }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(duration(0), "0s");
        assert_eq!(duration(45), "45s");
        assert_eq!(duration(1800), "30m");
        assert_eq!(duration(5400), "1h30m");
        assert_eq!(duration(3661), "1h1m1s");
    }

    #[test]
    fn formats_parse() {
        assert_eq!("csv".parse::<ListFormat>(), Ok(ListFormat::Csv));
        assert!("xml".parse::<ListFormat>().is_err());
    }
}
