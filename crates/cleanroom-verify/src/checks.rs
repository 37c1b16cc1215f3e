//! One `[[check]]` judged against the bytes of a file (or of a step's
//! standard output): select a value, then compare it, as verify/checks.toml
//! in TASK_FORMAT.md says.

use serde::{Deserialize, Serialize};

use crate::task::{Check, Comparison, CsvRow, Selector};

/// Most characters of an observed or expected value kept in a result.
pub const SHOWN_CHARS: usize = 256;

/// How one check went. `observed` says what was found, or why nothing was:
/// "missing", "no match: ...", "not a number: ...", "symlink in path", ...
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckResult {
    pub name: String,
    pub passed: bool,
    pub expected: String,
    pub observed: String,
}

/// Judges `check` against what it reads: the file's bytes, or why there are
/// none (the text becomes `observed`, e.g. "missing").
pub fn evaluate(check: &Check, input: Result<&[u8], String>) -> CheckResult {
    let expected = shorten(&check.compare.expected_text());
    let (passed, observed) = judge(check, input);
    CheckResult { name: check.name.clone(), passed, expected, observed: shorten(&observed) }
}

fn judge(check: &Check, input: Result<&[u8], String>) -> (bool, String) {
    let bytes = match input {
        Ok(bytes) => bytes,
        Err(why) => return (false, why),
    };
    if check.compare == Comparison::Exists {
        return (true, format!("a regular file of {} bytes", bytes.len()));
    }
    let value = match select(check.select.as_ref(), bytes) {
        Ok(v) => v,
        Err(why) => return (false, why),
    };
    compare(&check.compare, &value)
}

/// A selected value: text, or a JSON value that is not a string.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Text(String),
    Json(serde_json::Value),
}

impl Value {
    /// The value as `equals` sees it: text verbatim, other JSON compact.
    fn as_text(&self) -> String {
        match self {
            Value::Text(s) => s.clone(),
            Value::Json(v) => v.to_string(),
        }
    }

    fn as_number(&self) -> Result<f64, String> {
        match self {
            Value::Json(serde_json::Value::Number(n)) => {
                n.as_f64().ok_or_else(|| format!("not a number: {n}"))
            }
            Value::Json(v) => Err(format!("not a number: {v}")),
            Value::Text(s) => s.trim().parse::<f64>().map_err(|_| format!("not a number: {:?}", shorten(s))),
        }
    }
}

fn select(selector: Option<&Selector>, bytes: &[u8]) -> Result<Value, String> {
    match selector {
        None => Ok(Value::Text(String::from_utf8_lossy(bytes).into_owned())),
        Some(Selector::Json(pointer)) => select_json(pointer, bytes),
        Some(Selector::Regex(re)) => select_regex(re, bytes),
        Some(Selector::Csv { row, column, delimiter }) => {
            select_csv(row, column, *delimiter, bytes).map(Value::Text)
        }
    }
}

fn select_json(pointer: &str, bytes: &[u8]) -> Result<Value, String> {
    let doc: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| format!("not json: {e}"))?;
    match doc.pointer(pointer) {
        Some(serde_json::Value::String(s)) => Ok(Value::Text(s.clone())),
        Some(v) => Ok(Value::Json(v.clone())),
        None => Err(format!("no match: nothing at {pointer:?}")),
    }
}

/// The first match; its first capture group (the whole match when the
/// pattern has none). The task crate compiles patterns in multi-line mode.
fn select_regex(re: &regex::Regex, bytes: &[u8]) -> Result<Value, String> {
    let text = String::from_utf8_lossy(bytes);
    let caps = re.captures(&text).ok_or_else(|| "no match".to_string())?;
    let m = if caps.len() > 1 { caps.get(1) } else { caps.get(0) };
    match m {
        Some(m) => Ok(Value::Text(m.as_str().to_string())),
        None => Err("no match: the first match did not set group 1".to_string()),
    }
}

/// RFC 4180 with a header record. Header names and the text of a row match
/// are compared with surrounding spaces trimmed ("N, error" is common).
fn select_csv(row: &CsvRow, column: &str, delimiter: u8, bytes: &[u8]) -> Result<String, String> {
    let mut reader =
        csv::ReaderBuilder::new().delimiter(delimiter).has_headers(true).flexible(true).from_reader(bytes);
    let headers = reader.headers().map_err(|e| format!("bad csv: {e}"))?.clone();
    let find = |name: &str| headers.iter().position(|h| h.trim() == name.trim());
    let col = find(column).ok_or_else(|| format!("no match: no column {column:?} in the header"))?;
    let (index, record) = match row {
        CsvRow::Index(n) => {
            let mut seen = 0usize;
            let mut found = None;
            for record in reader.records() {
                let record = record.map_err(|e| format!("bad csv: {e}"))?;
                if seen == *n {
                    found = Some(record);
                    break;
                }
                seen += 1;
            }
            let record =
                found.ok_or_else(|| format!("no match: no data row {n} (the file has {seen} data rows)"))?;
            (*n, record)
        }
        CsvRow::Match { column: key, text } => {
            let key_col = find(key).ok_or_else(|| format!("no match: no column {key:?} in the header"))?;
            let mut found = None;
            for (i, record) in reader.records().enumerate() {
                let record = record.map_err(|e| format!("bad csv: {e}"))?;
                if record.get(key_col).map(str::trim) == Some(text.trim()) {
                    found = Some((i, record));
                    break;
                }
            }
            found.ok_or_else(|| format!("no match: no row where {key} = {text:?}"))?
        }
    };
    record
        .get(col)
        .map(str::to_string)
        .ok_or_else(|| format!("no match: data row {index} has no column {column:?}"))
}

fn compare(compare: &Comparison, value: &Value) -> (bool, String) {
    match compare {
        Comparison::Number { expect, abs_tol, rel_tol } => match value.as_number() {
            Ok(obs) => (within(obs, *expect, *abs_tol, *rel_tol), shown_number(value)),
            Err(why) => (false, why),
        },
        Comparison::Range { lo, hi } => match value.as_number() {
            Ok(obs) => (!obs.is_nan() && *lo <= obs && obs <= *hi, shown_number(value)),
            Err(why) => (false, why),
        },
        Comparison::Equals(text) => {
            let obs = value.as_text();
            (obs == *text, obs)
        }
        Comparison::Exists => (true, "present".to_string()),
    }
}

/// |obs - expect| <= max(abs_tol, rel_tol * |expect|); no tolerance means
/// exact equality; NaN never passes.
///
/// With a tolerance, the bound gets a slack of a few units in the last place
/// of the operands, so that decimal edges hold as written: 0.4 is within 0.1
/// of 0.3 although 0.4 - 0.3 is 0.10000000000000003 in binary. Infinities
/// pass only by equality.
pub fn within(obs: f64, expect: f64, abs_tol: Option<f64>, rel_tol: Option<f64>) -> bool {
    if obs.is_nan() || expect.is_nan() {
        return false;
    }
    if obs == expect {
        return true;
    }
    if (abs_tol.is_none() && rel_tol.is_none()) || !obs.is_finite() || !expect.is_finite() {
        return false;
    }
    let tol = abs_tol.unwrap_or(0.0).max(rel_tol.unwrap_or(0.0) * expect.abs());
    let slack = 4.0 * f64::EPSILON * obs.abs().max(expect.abs());
    (obs - expect).abs() <= tol + slack
}

/// The observed number as it was written (trimmed), so that people see the
/// file's own text.
fn shown_number(value: &Value) -> String {
    match value {
        Value::Text(s) => s.trim().to_string(),
        Value::Json(_) => value.as_text(),
    }
}

/// At most [`SHOWN_CHARS`] characters, with a marker when cut.
pub fn shorten(s: &str) -> String {
    match s.char_indices().nth(SHOWN_CHARS) {
        None => s.to_string(),
        Some((i, _)) => format!("{}... ({} bytes in all)", &s[..i], s.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::CheckFile;

    fn check(select: Option<Selector>, compare: Comparison) -> Check {
        Check { name: "c".into(), file: CheckFile::Path("out.txt".into()), select, compare }
    }

    fn num(expect: f64, abs_tol: Option<f64>, rel_tol: Option<f64>) -> Comparison {
        Comparison::Number { expect, abs_tol, rel_tol }
    }

    fn run(select: Option<Selector>, compare: Comparison, input: &str) -> CheckResult {
        evaluate(&check(select, compare), Ok(input.as_bytes()))
    }

    fn json(p: &str) -> Option<Selector> {
        Some(Selector::Json(p.into()))
    }

    fn re(p: &str) -> Option<Selector> {
        Some(Selector::Regex(regex::RegexBuilder::new(p).multi_line(true).build().unwrap()))
    }

    fn csv_sel(row: CsvRow, column: &str) -> Option<Selector> {
        Some(Selector::Csv { row, column: column.into(), delimiter: b',' })
    }

    #[test]
    fn exact_number_without_tolerance() {
        assert!(run(None, num(1.5, None, None), "1.5\n").passed);
        assert!(run(None, num(1.5, None, None), "  1.50 ").passed);
        let r = run(None, num(1.5, None, None), "1.5000001");
        assert!(!r.passed);
        assert_eq!(r.observed, "1.5000001");
        assert_eq!(r.expected, "1.5 (exact)");
    }

    #[test]
    fn absolute_tolerance_edges() {
        let c = num(1.0, Some(0.5), None);
        assert!(run(None, c.clone(), "1.5").passed);
        assert!(run(None, c.clone(), "0.5").passed);
        assert!(!run(None, c.clone(), "1.5000001").passed);
        assert!(!run(None, c.clone(), "0.4999999").passed);
        // Decimal edges hold as written.
        assert!(run(None, num(0.3, Some(0.1), None), "0.4").passed);
        assert!(run(None, num(0.3, Some(0.1), None), "0.2").passed);
        assert!(!run(None, num(0.3, Some(0.1), None), "0.4000001").passed);
        assert_eq!(run(None, c, "1").expected, "1 (abs_tol 0.5)");
    }

    #[test]
    fn relative_tolerance_edges() {
        let c = num(100.0, None, Some(0.05));
        assert!(run(None, c.clone(), "105").passed);
        assert!(run(None, c.clone(), "95").passed);
        assert!(!run(None, c.clone(), "105.0001").passed);
        // Relative to |expect|, also for negative expectations.
        assert!(run(None, num(-100.0, None, Some(0.05)), "-95").passed);
        assert!(!run(None, num(-100.0, None, Some(0.05)), "-94.9").passed);
        assert!(run(None, num(1.23e-4, None, Some(0.05)), "1.29e-4").passed);
        assert!(!run(None, num(1.23e-4, None, Some(0.05)), "1.30e-4").passed);
        assert_eq!(run(None, num(1.23e-4, None, Some(0.05)), "0").expected, "1.23e-4 (rel_tol 0.05)");
    }

    #[test]
    fn the_larger_tolerance_wins() {
        // max(abs 0.5, rel 0.01 * 10 = 0.1) = 0.5
        assert!(run(None, num(10.0, Some(0.5), Some(0.01)), "10.5").passed);
        // max(abs 0.01, rel 0.1 * 10 = 1) = 1
        assert!(run(None, num(10.0, Some(0.01), Some(0.1)), "11").passed);
        assert!(!run(None, num(10.0, Some(0.01), Some(0.1)), "11.01").passed);
        assert_eq!(
            run(None, num(10.0, Some(0.01), Some(0.1)), "11").expected,
            "10 (abs_tol 0.01, rel_tol 0.1)"
        );
    }

    #[test]
    fn nan_never_passes() {
        for text in ["NaN", "nan", "-nan"] {
            assert!(!run(None, num(1.0, Some(f64::INFINITY), None), text).passed, "{text}");
            assert!(!run(None, Comparison::Range { lo: f64::NEG_INFINITY, hi: f64::INFINITY }, text).passed);
        }
        assert!(!run(None, num(f64::NAN, None, None), "NaN").passed);
    }

    #[test]
    fn infinities_pass_only_by_equality() {
        assert!(run(None, num(f64::INFINITY, None, None), "inf").passed);
        assert!(run(None, num(f64::INFINITY, None, None), "Infinity").passed);
        assert!(!run(None, num(f64::INFINITY, None, Some(0.5)), "1e308").passed);
        assert!(!run(None, num(1.0, None, Some(0.5)), "inf").passed);
        assert!(!run(None, num(1.0, Some(f64::MAX), None), "-inf").passed);
        assert!(run(None, Comparison::Range { lo: 0.0, hi: f64::INFINITY }, "inf").passed);
    }

    #[test]
    fn not_a_number() {
        let r = run(None, num(1.0, None, None), "one");
        assert!(!r.passed);
        assert_eq!(r.observed, "not a number: \"one\"");
        let r = run(json("/a"), num(1.0, None, None), r#"{"a": [1]}"#);
        assert_eq!(r.observed, "not a number: [1]");
        assert!(!run(None, num(0.0, Some(1.0), None), "").passed);
        assert!(!run(None, num(0.0, Some(1.0), None), "1,5").passed);
    }

    #[test]
    fn range_is_inclusive() {
        let c = Comparison::Range { lo: 0.0, hi: 0.01 };
        assert!(run(None, c.clone(), "0").passed);
        assert!(run(None, c.clone(), "0.01").passed);
        assert!(run(None, c.clone(), "0.005").passed);
        assert!(!run(None, c.clone(), "0.0100001").passed);
        assert!(!run(None, c.clone(), "-0.0000001").passed);
        assert_eq!(run(None, c, "0").expected, "in [0, 0.01]");
    }

    #[test]
    fn json_pointer_selects() {
        let doc = r#"{"n64": {"max_error": 1.25e-4, "label": "ok", "count": "12"}, "list": [3, 4],
                      "flag": true, "nothing": null, "obj": {"b": 1, "a": [1, 2]}}"#;
        assert!(run(json("/n64/max_error"), num(1.23e-4, None, Some(0.05)), doc).passed);
        assert!(run(json("/list/1"), num(4.0, None, None), doc).passed);
        // A string is parsed as a number.
        assert!(run(json("/n64/count"), num(12.0, None, None), doc).passed);
        let r = run(json("/n64/missing"), num(1.0, None, None), doc);
        assert!(!r.passed);
        assert_eq!(r.observed, "no match: nothing at \"/n64/missing\"");
        let r = run(json("/a"), num(1.0, None, None), "{not json");
        assert!(r.observed.starts_with("not json: "), "{}", r.observed);
    }

    #[test]
    fn equals_compares_non_string_json_as_compact_text() {
        let doc =
            r#"{"label": "ok", "flag": true, "nothing": null, "n": 1.50, "obj": {"b": 1, "a": [1, 2]}}"#;
        assert!(run(json("/label"), Comparison::Equals("ok".into()), doc).passed);
        assert!(!run(json("/label"), Comparison::Equals("\"ok\"".into()), doc).passed);
        assert!(run(json("/flag"), Comparison::Equals("true".into()), doc).passed);
        assert!(run(json("/nothing"), Comparison::Equals("null".into()), doc).passed);
        assert!(run(json("/n"), Comparison::Equals("1.5".into()), doc).passed);
        let r = run(json("/obj"), Comparison::Equals(r#"{"a":[1,2],"b":1}"#.into()), doc);
        assert!(r.passed, "{}", r.observed);
    }

    #[test]
    fn equals_is_verbatim() {
        assert!(run(None, Comparison::Equals("abc\n".into()), "abc\n").passed);
        let r = run(None, Comparison::Equals("abc".into()), "abc\n");
        assert!(!r.passed);
        assert_eq!(r.observed, "abc\n");
        assert!(!run(re("v: (.*)"), Comparison::Equals("x".into()), "v: x ").passed);
    }

    #[test]
    fn regex_takes_the_first_capture_of_the_first_match() {
        let out = "step 1\nchecksum: 0252ff0a0004de61\nchecksum: ffffffffffffffff\n";
        let r = run(re("^checksum: ([0-9a-f]{16})$"), Comparison::Equals("0252ff0a0004de61".into()), out);
        assert!(r.passed, "{}", r.observed);
        assert!(run(re("err=([0-9.e-]+)"), num(0.5, Some(0.01), None), "x err=0.501 y").passed);
        let r = run(re("^missing: (.*)$"), num(1.0, None, None), out);
        assert!(!r.passed);
        assert_eq!(r.observed, "no match");
        let r = run(re("^(x)?step"), num(1.0, None, None), out);
        assert!(r.observed.starts_with("no match"), "{}", r.observed);
        // Without a group, the whole match.
        assert!(run(re("[0-9]+"), num(1.0, None, None), out).passed);
    }

    const TABLE: &str = "N,error,time\n16,0.5,1\n64, 0.0012 ,2\n\"1,024\",\"0.0001\",3\n";

    #[test]
    fn csv_by_row_index_and_header_name() {
        assert!(run(csv_sel(CsvRow::Index(0), "error"), num(0.5, None, None), TABLE).passed);
        assert!(run(csv_sel(CsvRow::Index(1), "error"), num(0.0012, None, None), TABLE).passed);
        assert!(run(csv_sel(CsvRow::Index(2), "N"), Comparison::Equals("1,024".into()), TABLE).passed);
        let r = run(csv_sel(CsvRow::Index(3), "error"), num(0.5, None, None), TABLE);
        assert!(!r.passed);
        assert_eq!(r.observed, "no match: no data row 3 (the file has 3 data rows)");
    }

    #[test]
    fn csv_by_row_match() {
        let row = |n: &str| CsvRow::Match { column: "N".into(), text: n.into() };
        assert!(run(csv_sel(row("64"), "error"), Comparison::Range { lo: 0.0, hi: 0.01 }, TABLE).passed);
        assert!(run(csv_sel(row("1,024"), "time"), num(3.0, None, None), TABLE).passed);
        let r = run(csv_sel(row("128"), "error"), num(0.5, None, None), TABLE);
        assert_eq!(r.observed, "no match: no row where N = \"128\"");
        let bad_key = CsvRow::Match { column: "M".into(), text: "64".into() };
        let r = run(csv_sel(bad_key, "error"), num(0.5, None, None), TABLE);
        assert_eq!(r.observed, "no match: no column \"M\" in the header");
    }

    #[test]
    fn csv_missing_column_and_short_rows() {
        let r = run(csv_sel(CsvRow::Index(0), "speed"), num(0.5, None, None), TABLE);
        assert!(!r.passed);
        assert_eq!(r.observed, "no match: no column \"speed\" in the header");
        let r = run(csv_sel(CsvRow::Index(0), "time"), num(0.5, None, None), "N,error,time\n16,0.5\n");
        assert_eq!(r.observed, "no match: data row 0 has no column \"time\"");
    }

    #[test]
    fn csv_delimiter_and_header_spaces() {
        let sel = Some(Selector::Csv { row: CsvRow::Index(0), column: "error".into(), delimiter: b';' });
        assert!(run(sel, num(0.25, None, None), "N; error\n16;0.25\n").passed);
    }

    #[test]
    fn exists_and_missing_inputs() {
        let c = check(None, Comparison::Exists);
        let r = evaluate(&c, Ok(b"PNG"));
        assert!(r.passed);
        assert_eq!(r.expected, "a regular file");
        assert_eq!(r.observed, "a regular file of 3 bytes");
        let r = evaluate(&c, Err("missing".into()));
        assert!(!r.passed);
        assert_eq!(r.observed, "missing");
        let r = evaluate(&check(json("/a"), num(1.0, None, None)), Err("symlink in path".into()));
        assert!(!r.passed);
        assert_eq!(r.observed, "symlink in path");
    }

    #[test]
    fn long_values_are_shortened() {
        let long = "x".repeat(10_000);
        let r = run(None, Comparison::Equals("y".into()), &long);
        assert!(!r.passed);
        assert!(r.observed.len() < 400);
        assert!(r.observed.ends_with("(10000 bytes in all)"));
    }
}
