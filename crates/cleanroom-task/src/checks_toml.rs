//! Reading and validating verify/checks.toml.

use std::collections::HashMap;

use toml_edit::{ImDocument, Item, Value};

use crate::checks::{
    AccessKind, AccessQuery, Check, CheckFile, Comparison, CsvRow, Mutation, Selector, Stage, Step,
    VerifySpec,
};
use crate::rules::relative_path_problem;
use crate::task_toml::{globs, seconds};
use crate::toml_read::{describe, describe_value, item_number, Reader, Tab};

const ROOT_KEYS: &[&str] = &["step", "check", "mutation"];
const STEP_KEYS: &[&str] = &["name", "stage", "run", "timeout_sec", "clean", "mutated"];
const MUTATION_KEYS: &[&str] = &["file", "replace", "with"];
const SELECTORS: &[&str] = &["json", "regex", "csv"];
const COMPARISONS: &[&str] = &["expect", "range", "equals", "exists"];
const CHECK_KEYS: &[&str] = &[
    "name", "file", "json", "regex", "csv", "expect", "abs_tol", "rel_tol", "range", "equals", "exists",
    // Cleanroom additions: access checks.
    "opened", "executed", "step",
];
/// The keys an access check takes.
const ACCESS_KEYS: &[&str] = &["name", "opened", "executed", "step"];
const CSV_KEYS: &[&str] = &["row", "column", "delimiter"];

pub(crate) fn read_checks_toml(r: &mut Reader, doc: &ImDocument<String>) -> Option<VerifySpec> {
    let root = r.root(doc);
    r.unknown_keys(&root, ROOT_KEYS, &|k| match k {
        "verifier" | "tests" => Some(
            "belongs to Harbor's task format, not cleanroom's; checks.toml holds [[step]] and [[check]] tables".to_owned(),
        ),
        _ => None,
    });
    let step_tabs = array_of_tables(r, &root, "step");
    let check_tabs = array_of_tables(r, &root, "check");
    let mutation_tabs = array_of_tables(r, &root, "mutation");
    if step_tabs.is_empty() && check_tabs.is_empty() && r.errors.is_empty() {
        r.err(
            1,
            "check",
            "checks.toml defines no [[step]] and no [[check]]; a task needs at least one check",
        );
        return None;
    }

    let mut ok = true;
    let mut steps = Vec::new();
    let mut step_lines: HashMap<String, usize> = HashMap::new();
    let mut highest: Option<(Stage, usize)> = None;
    for tab in &step_tabs {
        match step(r, tab) {
            Some(s) => {
                if let Some(first) = step_lines.get(&s.name) {
                    let msg = format!(
                        "duplicate step name {:?} (first at line {first}); step names must be unique",
                        s.name
                    );
                    r.key_err(tab, "name", msg);
                    ok = false;
                } else {
                    step_lines.insert(s.name.clone(), tab.line);
                }
                match highest {
                    Some((h, line)) if s.stage < h => {
                        let msg = format!(
                            "stage {:?} comes after a {:?} step (line {line}); stages must not decrease along the steps (setup, build, run)",
                            s.stage.as_str(),
                            h.as_str()
                        );
                        let key_line = r.key_line(tab, "stage");
                        r.err(key_line, "step.stage", msg);
                        ok = false;
                    }
                    _ => highest = Some((s.stage, tab.line)),
                }
                let after_mutated = steps.iter().any(|p: &Step| p.mutated);
                if after_mutated && !s.mutated {
                    r.key_err(
                        tab,
                        "name",
                        "an unmutated step after a `mutated = true` one; mutated steps come last",
                    );
                    ok = false;
                }
                steps.push(s);
            }
            None => ok = false,
        }
    }

    let mut checks = Vec::new();
    let mut check_lines: HashMap<String, usize> = HashMap::new();
    for tab in &check_tabs {
        match check(r, tab, &step_lines) {
            Some(c) => {
                if let Some(first) = check_lines.get(&c.name) {
                    let msg = format!(
                        "duplicate check name {:?} (first at line {first}); check names must be unique",
                        c.name
                    );
                    r.key_err(tab, "name", msg);
                    ok = false;
                } else {
                    check_lines.insert(c.name.clone(), tab.line);
                }
                checks.push(c);
            }
            None => ok = false,
        }
    }
    let mut mutations = Vec::new();
    for tab in &mutation_tabs {
        match mutation(r, tab) {
            Some(m) => mutations.push(m),
            None => ok = false,
        }
    }
    let mutated_steps = steps.iter().any(|s| s.mutated);
    if mutated_steps && mutations.is_empty() {
        r.err(1, "step.mutated", "steps are `mutated = true` but checks.toml defines no [[mutation]]");
        ok = false;
    }
    if let (Some(tab), false) = (mutation_tabs.first(), mutated_steps) {
        r.key_err(
            tab,
            "file",
            "a [[mutation]] without any `mutated = true` step: nothing would run on the mutated source",
        );
        ok = false;
    }
    ok.then_some(VerifySpec { steps, checks, mutations })
}

fn mutation(r: &mut Reader, tab: &Tab<'_>) -> Option<Mutation> {
    r.unknown_keys(tab, MUTATION_KEYS, &|_| None);
    let file = r.required_string(tab, "file", "the artifact file to change, relative to artifact.dest");
    let replace = r.required_string(tab, "replace", "the text of the original to replace (exactly once)");
    let with = r.required_string(tab, "with", "the text that replaces it");
    let file = file.filter(|f| {
        let plain = !f.is_empty()
            && !f.starts_with('/')
            && !f.split('/').any(|c| c.is_empty() || c == "." || c == "..");
        if !plain {
            r.key_err(tab, "file", format!("{f:?} is not a plain relative path inside the artifact"));
        }
        plain
    });
    let replace = replace.filter(|t| {
        if t.is_empty() {
            r.key_err(tab, "replace", "must not be empty");
        }
        !t.is_empty()
    });
    let (file, replace, with) = (file?, replace?, with?);
    if with == replace {
        r.key_err(tab, "with", "equals `replace`: the mutation would change nothing");
        return None;
    }
    Some(Mutation { file, replace, with })
}

/// `[[name]]` tables, or a list of inline tables under `name`.
fn array_of_tables<'a>(r: &mut Reader, root: &Tab<'a>, key: &str) -> Vec<Tab<'a>> {
    let Some(item) = r.get(root, key) else {
        return Vec::new();
    };
    let name = key.to_owned();
    match item {
        Item::ArrayOfTables(arr) => arr
            .iter()
            .map(|t| Tab {
                name: name.clone(),
                line: r.line(t.span()).unwrap_or_else(|| r.key_line(root, key)),
                t,
            })
            .collect(),
        Item::Value(Value::Array(arr)) if arr.iter().all(|v| v.as_inline_table().is_some()) => arr
            .iter()
            .filter_map(|v| {
                let t = v.as_inline_table()?;
                Some(Tab {
                    name: name.clone(),
                    line: r.line(v.span()).unwrap_or_else(|| r.key_line(root, key)),
                    t,
                })
            })
            .collect(),
        other => {
            let msg = format!("expected [[{key}]] tables, found {}", describe(other));
            r.key_err(root, key, msg);
            Vec::new()
        }
    }
}

fn step(r: &mut Reader, tab: &Tab<'_>) -> Option<Step> {
    r.unknown_keys(tab, STEP_KEYS, &|_| None);
    let name = r.required_string(tab, "name", "every step needs a name");
    let stage = match r.get(tab, "stage") {
        // Not required by the format's table; "run" keeps any order valid
        // after the last explicit stage.
        None => Some(Stage::Run),
        Some(_) => r.string(tab, "stage").and_then(|s| {
            let st = Stage::parse(&s);
            if st.is_none() {
                r.key_err(
                    tab,
                    "stage",
                    format!("unknown stage {s:?}; expected \"setup\", \"build\" or \"run\""),
                );
            }
            st
        }),
    };
    let run = r.required_string(tab, "run", "every step needs `run`, the shell command it runs");
    let timeout_sec = match r.get(tab, "timeout_sec") {
        None => Some(None),
        Some(_) => seconds(r, tab, "timeout_sec").map(Some),
    };
    let clean = globs(r, tab, "clean");
    let mutated = match r.get(tab, "mutated") {
        None => Some(false),
        Some(_) => r.boolean(tab, "mutated"),
    };
    Some(Step {
        name: name?,
        stage: stage?,
        run: run?,
        timeout_sec: timeout_sec?,
        clean: clean?,
        mutated: mutated?,
    })
}

fn check(r: &mut Reader, tab: &Tab<'_>, steps: &HashMap<String, usize>) -> Option<Check> {
    r.unknown_keys(tab, CHECK_KEYS, &|k| match k {
        "tol" | "tolerance" => Some("unknown key; the tolerances are `abs_tol` and `rel_tol`".to_owned()),
        "min" | "max" => Some("unknown key; a bounded value is `range = [lo, hi]`".to_owned()),
        "pointer" | "json_pointer" => Some("unknown key; a json pointer is `json = \"/a/b\"`".to_owned()),
        _ => None,
    });
    if r.get(tab, "opened").is_some() || r.get(tab, "executed").is_some() {
        return access_check(r, tab, steps);
    }
    if r.get(tab, "step").is_some() {
        r.key_err(tab, "step", "applies only to `opened` and `executed` checks");
    }
    let name = r.required_string(tab, "name", "every check needs a name");
    let file = r
        .required_string(tab, "file", "expected a path relative to $CLEANROOM_OUT or \"stdout:<step name>\"")
        .and_then(|f| check_file(r, tab, &f, steps));

    // Selector: at most one.
    let selectors: Vec<&str> = SELECTORS.iter().copied().filter(|k| r.get(tab, k).is_some()).collect();
    let select = match selectors.as_slice() {
        [] => Some(None),
        [one] => selector(r, tab, one).map(Some),
        [first, second, ..] => {
            r.key_err(
                tab,
                second,
                format!("a check takes at most one selector, found `{first}` and `{second}`"),
            );
            None
        }
    };

    // Comparison: exactly one.
    let comparisons: Vec<&str> = COMPARISONS.iter().copied().filter(|k| r.get(tab, k).is_some()).collect();
    for tol in ["abs_tol", "rel_tol"] {
        if r.get(tab, tol).is_some() && !comparisons.contains(&"expect") {
            r.key_err(tab, tol, "applies only to `expect`; add `expect = <number>` or remove it");
        }
    }
    let compare = match comparisons.as_slice() {
        [] => {
            let line = tab.line;
            r.err(
                line,
                "check",
                "has no comparison; expected exactly one of `expect`, `range`, `equals` or `exists = true`",
            );
            None
        }
        [one] => comparison(r, tab, one),
        [first, second, ..] => {
            r.key_err(
                tab,
                second,
                format!("a check takes exactly one comparison, found `{first}` and `{second}`"),
            );
            None
        }
    };
    if let (Some(Comparison::Exists), Some(Some(_))) = (&compare, &select) {
        r.key_err(
            tab,
            "exists",
            format!("`exists` judges the file itself and takes no selector; remove `{}`", selectors[0]),
        );
        return None;
    }
    Some(Check { name: name?, file: file?, select: select?, compare: compare? })
}

/// `opened = "GLOB"` or `executed = "GLOB"`, with `step`: nothing else.
fn access_check(r: &mut Reader, tab: &Tab<'_>, steps: &HashMap<String, usize>) -> Option<Check> {
    let name = r.required_string(tab, "name", "every check needs a name");
    for key in CHECK_KEYS.iter().filter(|k| !ACCESS_KEYS.contains(k)) {
        if r.get(tab, key).is_some() {
            r.key_err(tab, key, "an `opened` or `executed` check takes only `name` and `step`");
        }
    }
    let (kind, key) = match (r.get(tab, "opened").is_some(), r.get(tab, "executed").is_some()) {
        (true, true) => {
            r.key_err(tab, "executed", "a check takes one of `opened` and `executed`");
            return None;
        }
        (true, false) => (AccessKind::Opened, "opened"),
        _ => (AccessKind::Executed, "executed"),
    };
    // A glob relative to artifact.dest (compile_glob refuses `/` and `..`).
    let glob = r.string(tab, key).and_then(|g| match crate::rules::compile_glob(&g) {
        Ok(_) => Some(g),
        Err(e) => {
            r.key_err(tab, key, format!("{g:?}: {e}"));
            None
        }
    });
    let step = r.required_string(tab, "step", "an access check needs `step`, the step during which it looks");
    let step = step.filter(|s| known_step(r, tab, "step", s, steps));
    Some(Check {
        name: name?,
        file: CheckFile::Access(AccessQuery { kind, glob: glob?, step: step? }),
        select: None,
        compare: Comparison::Exists,
    })
}

/// Whether `step` names a step; if not, an error at `key` listing them.
fn known_step(r: &mut Reader, tab: &Tab<'_>, key: &str, step: &str, steps: &HashMap<String, usize>) -> bool {
    if steps.contains_key(step) {
        return true;
    }
    let mut names: Vec<&String> = steps.keys().collect();
    names.sort();
    let known = if names.is_empty() {
        "there are no steps".to_owned()
    } else {
        format!("the steps are {}", names.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", "))
    };
    r.key_err(tab, key, format!("no step is named {step:?}; {known}"));
    false
}

fn check_file(r: &mut Reader, tab: &Tab<'_>, f: &str, steps: &HashMap<String, usize>) -> Option<CheckFile> {
    if let Some(step) = f.strip_prefix("stdout:") {
        return known_step(r, tab, "file", step, steps).then(|| CheckFile::StepStdout(step.to_owned()));
    }
    if let Some(problem) = relative_path_problem(f) {
        r.key_err(
            tab,
            "file",
            format!("{f:?} {problem}; expected a path relative to $CLEANROOM_OUT or \"stdout:<step name>\""),
        );
        return None;
    }
    Some(CheckFile::Path(f.to_owned()))
}

fn selector(r: &mut Reader, tab: &Tab<'_>, kind: &str) -> Option<Selector> {
    match kind {
        "json" => {
            let p = r.string(tab, "json")?;
            if let Some(problem) = json_pointer_problem(&p) {
                r.key_err(tab, "json", format!("{p:?} is not a json pointer (rfc 6901): {problem}"));
                return None;
            }
            Some(Selector::Json(p))
        }
        "regex" => {
            let p = r.string(tab, "regex")?;
            match regex::RegexBuilder::new(&p).multi_line(true).build() {
                Ok(re) if re.captures_len() > 1 => Some(Selector::Regex(re)),
                Ok(_) => {
                    r.key_err(
                        tab,
                        "regex",
                        format!("{p:?} has no capture group; the value is the first group, as in 'checksum: ([0-9a-f]+)'"),
                    );
                    None
                }
                Err(e) => {
                    r.key_err(tab, "regex", format!("invalid regex: {e}"));
                    None
                }
            }
        }
        _ => csv_selector(r, tab),
    }
}

fn csv_selector(r: &mut Reader, tab: &Tab<'_>) -> Option<Selector> {
    let csv = r.table(tab, "csv")?;
    r.unknown_keys(&csv, CSV_KEYS, &|_| None);
    let column = r.required_string(&csv, "column", "expected the header name of the column to read");
    let delimiter = match r.get(&csv, "delimiter") {
        None => Some(b','),
        Some(_) => r.string(&csv, "delimiter").and_then(|d| match d.as_bytes() {
            [b] if b.is_ascii() && *b != b'"' && *b != b'\n' && *b != b'\r' => Some(*b),
            _ => {
                r.key_err(
                    &csv,
                    "delimiter",
                    format!("{d:?} is not one ascii character such as \",\", \";\" or \"\\t\""),
                );
                None
            }
        }),
    };
    let row = match r.get(&csv, "row") {
        None => {
            r.missing(&csv, "row", "expected `row = N` (0-based) or `row = { COLUMN = \"text\" }`");
            None
        }
        Some(item) => csv_row(r, &csv, item),
    };
    Some(Selector::Csv { row: row?, column: column?, delimiter: delimiter? })
}

fn csv_row(r: &mut Reader, csv: &Tab<'_>, item: &Item) -> Option<CsvRow> {
    if item.as_integer().is_some() {
        let n = r.integer(csv, "row", 0)?;
        return usize::try_from(n).ok().map(CsvRow::Index);
    }
    let Some(t) = item.as_table_like() else {
        r.key_err(
            csv,
            "row",
            format!("expected a record number or `{{ COLUMN = \"text\" }}`, found {}", describe(item)),
        );
        return None;
    };
    let entries: Vec<(&str, &Item)> = t.iter().collect();
    match entries.as_slice() {
        [(column, value)] => match value.as_str() {
            Some(text) => Some(CsvRow::Match { column: (*column).to_owned(), text: text.to_owned() }),
            None => {
                let found = value.as_value().map_or_else(|| describe(value), describe_value);
                r.key_err(
                    csv,
                    "row",
                    format!("the text to match in column {column:?} must be a string (write it in quotes), found {found}"),
                );
                None
            }
        },
        _ => {
            r.key_err(
                csv,
                "row",
                format!("expected exactly one `COLUMN = \"text\"` pair, found {}", entries.len()),
            );
            None
        }
    }
}

fn comparison(r: &mut Reader, tab: &Tab<'_>, kind: &str) -> Option<Comparison> {
    match kind {
        "expect" => {
            let expect = r.number(tab, "expect");
            let mut tol = |key: &str| -> Option<Option<f64>> {
                if r.get(tab, key).is_none() {
                    return Some(None);
                }
                match r.number(tab, key) {
                    Some(x) if x >= 0.0 => Some(Some(x)),
                    Some(x) => {
                        r.key_err(tab, key, format!("must not be negative, found {x}"));
                        None
                    }
                    None => None,
                }
            };
            let abs_tol = tol("abs_tol");
            let rel_tol = tol("rel_tol");
            Some(Comparison::Number { expect: expect?, abs_tol: abs_tol?, rel_tol: rel_tol? })
        }
        "range" => {
            let item = r.get(tab, "range")?;
            let bounds: Option<Vec<f64>> = item
                .as_array()
                .map(|a| a.iter().filter_map(|v| item_number(&Item::Value(v.clone()))).collect());
            let len = item.as_array().map(|a| a.len());
            match (bounds.as_deref(), len) {
                (Some([lo, hi]), Some(2)) if lo.is_finite() && hi.is_finite() && lo <= hi => {
                    Some(Comparison::Range { lo: *lo, hi: *hi })
                }
                (Some([lo, hi]), Some(2)) if lo.is_finite() && hi.is_finite() => {
                    r.key_err(
                        tab,
                        "range",
                        format!("lower bound {lo} is above upper bound {hi}; expected [lo, hi]"),
                    );
                    None
                }
                _ => {
                    r.key_err(
                        tab,
                        "range",
                        format!("expected two finite numbers [lo, hi], found {}", describe(item)),
                    );
                    None
                }
            }
        }
        "equals" => {
            let item = r.get(tab, "equals")?;
            match item.as_str() {
                Some(s) => Some(Comparison::Equals(s.to_owned())),
                None => {
                    r.key_err(
                        tab,
                        "equals",
                        format!("expected a string (write the text in quotes; numbers are compared with `expect`), found {}", describe(item)),
                    );
                    None
                }
            }
        }
        _ => match r.boolean(tab, "exists")? {
            true => Some(Comparison::Exists),
            false => {
                r.key_err(
                    tab,
                    "exists",
                    "only `exists = true` is supported; to check that a file is absent, use a step",
                );
                None
            }
        },
    }
}

fn json_pointer_problem(p: &str) -> Option<&'static str> {
    if !p.is_empty() && !p.starts_with('/') {
        return Some("it must be empty or start with '/'");
    }
    let mut chars = p.chars();
    while let Some(c) = chars.next() {
        if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
            return Some("'~' must be followed by 0 or 1");
        }
    }
    None
}
