//! Reading a TOML document key by key, with line numbers.
//!
//! The task format's errors name the file, the line and the key, and every
//! problem in a file is reported at once, so the documents are walked by hand
//! over `toml_edit`'s span-keeping parse instead of deserialized with serde
//! (which stops at the first error and loses the lines of unknown keys).

use std::ops::Range;
use std::path::PathBuf;

use toml_edit::{ImDocument, Item, TableLike, Value};

use crate::error::LoadError;

/// A table being read: its dotted name in messages, the line of its header
/// (or of its key), and its contents.
#[derive(Clone)]
pub(crate) struct Tab<'a> {
    pub name: String,
    pub line: usize,
    pub t: &'a dyn TableLike,
}

/// Reads one file and collects its errors.
pub(crate) struct Reader {
    pub file: PathBuf,
    line_starts: Vec<usize>,
    pub errors: Vec<LoadError>,
}

impl Reader {
    /// Parses `text`; a syntax error is recorded and gives no document.
    pub fn parse(file: PathBuf, text: &str) -> (Reader, Option<ImDocument<String>>) {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        let mut r = Reader { file, line_starts, errors: Vec::new() };
        match ImDocument::parse(text.to_owned()) {
            Ok(doc) => (r, Some(doc)),
            Err(e) => {
                let line = r.line(e.span()).unwrap_or(1);
                let msg = format!("invalid toml: {}", e.message());
                r.errors.push(LoadError::new(r.file.clone(), Some(line), None, msg));
                (r, None)
            }
        }
    }

    /// The root table of a parsed document.
    pub fn root<'a>(&self, doc: &'a ImDocument<String>) -> Tab<'a> {
        Tab { name: String::new(), line: 1, t: doc.as_table() }
    }

    /// The 1-based line of a byte offset range.
    pub fn line(&self, span: Option<Range<usize>>) -> Option<usize> {
        let start = span?.start;
        Some(match self.line_starts.binary_search(&start) {
            Ok(i) => i + 1,
            Err(i) => i,
        })
    }

    /// The line of `key` in `tab`, or of the table when the key is absent.
    pub fn key_line(&self, tab: &Tab<'_>, key: &str) -> usize {
        tab.t
            .get_key_value(key)
            .and_then(|(k, item)| self.line(k.span()).or_else(|| self.line(item.span())))
            .unwrap_or(tab.line)
    }

    pub fn full_key(tab: &Tab<'_>, key: &str) -> String {
        if tab.name.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{}", tab.name, key)
        }
    }

    pub fn err(&mut self, line: usize, key: &str, msg: impl Into<String>) {
        self.errors.push(LoadError::new(self.file.clone(), Some(line), Some(key), msg));
    }

    /// An error about `key` of `tab`, at the key's line.
    pub fn key_err(&mut self, tab: &Tab<'_>, key: &str, msg: impl Into<String>) {
        let line = self.key_line(tab, key);
        self.err(line, &Self::full_key(tab, key), msg);
    }

    /// Records every key of `tab` that is not in `allowed`. `hint` may say
    /// where a foreign key comes from; otherwise the message lists the
    /// allowed keys and suggests a close one.
    pub fn unknown_keys(&mut self, tab: &Tab<'_>, allowed: &[&str], hint: &dyn Fn(&str) -> Option<String>) {
        let unknown: Vec<String> =
            tab.t.iter().map(|(k, _)| k.to_owned()).filter(|k| !allowed.contains(&k.as_str())).collect();
        for key in unknown {
            let msg = match hint(&key) {
                Some(h) => h,
                None => {
                    let place = if tab.name.is_empty() {
                        "at the top level".to_owned()
                    } else {
                        format!("in [{}]", tab.name)
                    };
                    let mut m = format!("unknown key {place}; expected one of: {}", allowed.join(", "));
                    if let Some(close) = closest(&key, allowed) {
                        m = format!(
                            "unknown key {place}; did you mean `{close}`? expected one of: {}",
                            allowed.join(", ")
                        );
                    }
                    m
                }
            };
            self.key_err(tab, &key, msg);
        }
    }

    pub fn get<'a>(&self, tab: &Tab<'a>, key: &str) -> Option<&'a Item> {
        tab.t.get(key).filter(|i| !i.is_none())
    }

    pub fn missing(&mut self, tab: &Tab<'_>, key: &str, what: &str) {
        let line = tab.line;
        self.err(line, &Self::full_key(tab, key), format!("missing; {what}"));
    }

    fn type_err(&mut self, tab: &Tab<'_>, key: &str, expected: &str, item: &Item) {
        self.key_err(tab, key, format!("expected {expected}, found {}", describe(item)));
    }

    pub fn string(&mut self, tab: &Tab<'_>, key: &str) -> Option<String> {
        let item = self.get(tab, key)?;
        match item.as_str() {
            Some(s) => Some(s.to_owned()),
            None => {
                self.type_err(tab, key, "a string", item);
                None
            }
        }
    }

    /// A required, non-empty string.
    pub fn required_string(&mut self, tab: &Tab<'_>, key: &str, what: &str) -> Option<String> {
        if self.get(tab, key).is_none() {
            self.missing(tab, key, what);
            return None;
        }
        let s = self.string(tab, key)?;
        if s.trim().is_empty() {
            self.key_err(tab, key, format!("is empty; {what}"));
            return None;
        }
        Some(s)
    }

    /// An integer no smaller than `min`.
    pub fn integer(&mut self, tab: &Tab<'_>, key: &str, min: i64) -> Option<i64> {
        let item = self.get(tab, key)?;
        match item.as_integer() {
            Some(n) if n >= min => Some(n),
            Some(n) => {
                self.key_err(tab, key, format!("must be at least {min}, found {n}"));
                None
            }
            None => {
                self.type_err(tab, key, "an integer", item);
                None
            }
        }
    }

    pub fn boolean(&mut self, tab: &Tab<'_>, key: &str) -> Option<bool> {
        let item = self.get(tab, key)?;
        match item.as_bool() {
            Some(b) => Some(b),
            None => {
                self.type_err(tab, key, "true or false", item);
                None
            }
        }
    }

    /// A finite number, integer or float.
    pub fn number(&mut self, tab: &Tab<'_>, key: &str) -> Option<f64> {
        let item = self.get(tab, key)?;
        match item_number(item) {
            Some(x) if x.is_finite() => Some(x),
            Some(_) => {
                self.key_err(tab, key, "must be a finite number, not nan or inf");
                None
            }
            None => {
                self.type_err(tab, key, "a number", item);
                None
            }
        }
    }

    /// A list of strings, each with its line.
    pub fn string_list(&mut self, tab: &Tab<'_>, key: &str) -> Option<Vec<(String, usize)>> {
        let item = self.get(tab, key)?;
        let Some(arr) = item.as_array() else {
            self.type_err(tab, key, "a list of strings", item);
            return None;
        };
        let key_line = self.key_line(tab, key);
        let mut out = Vec::new();
        let mut ok = true;
        for v in arr.iter() {
            let line = self.line(v.span()).unwrap_or(key_line);
            match v.as_str() {
                Some(s) => out.push((s.to_owned(), line)),
                None => {
                    ok = false;
                    let msg =
                        format!("expected a list of strings, found an element that is {}", describe_value(v));
                    self.err(line, &Self::full_key(tab, key), msg);
                }
            }
        }
        ok.then_some(out)
    }

    /// A sub-table (`[a.b]`, dotted keys or an inline table).
    pub fn table<'a>(&mut self, tab: &Tab<'a>, key: &str) -> Option<Tab<'a>> {
        let item = self.get(tab, key)?;
        match item.as_table_like() {
            Some(t) => Some(Tab {
                name: Self::full_key(tab, key),
                line: self.line(item.span()).unwrap_or_else(|| self.key_line(tab, key)),
                t,
            }),
            None => {
                self.type_err(tab, key, "a table", item);
                None
            }
        }
    }
}

pub(crate) fn item_number(item: &Item) -> Option<f64> {
    match item.as_value()? {
        Value::Integer(i) => Some(*i.value() as f64),
        Value::Float(f) => Some(*f.value()),
        _ => None,
    }
}

pub(crate) fn describe(item: &Item) -> String {
    match item {
        Item::None => "nothing".to_owned(),
        Item::Value(v) => describe_value(v),
        Item::Table(_) => "a table".to_owned(),
        Item::ArrayOfTables(_) => "an array of tables".to_owned(),
    }
}

pub(crate) fn describe_value(v: &Value) -> String {
    match v {
        Value::String(s) => format!("the string {:?}", clip(s.value())),
        Value::Integer(i) => format!("the integer {}", i.value()),
        Value::Float(f) => format!("the float {:?}", f.value()),
        Value::Boolean(b) => format!("the boolean {}", b.value()),
        Value::Datetime(d) => format!("the datetime {}", d.value()),
        Value::Array(_) => "a list".to_owned(),
        Value::InlineTable(_) => "a table".to_owned(),
    }
}

fn clip(s: &str) -> String {
    if s.chars().count() > 40 {
        let head: String = s.chars().take(40).collect();
        format!("{head}...")
    } else {
        s.to_owned()
    }
}

/// The allowed key closest to `key` by edit distance, if close enough to be
/// a likely typo.
fn closest<'a>(key: &str, allowed: &[&'a str]) -> Option<&'a str> {
    allowed
        .iter()
        .map(|a| (edit_distance(key, a), *a))
        .filter(|(d, a)| *d <= 2 && *d < a.len())
        .min_by_key(|(d, _)| *d)
        .map(|(_, a)| a)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_and_closest() {
        assert_eq!(edit_distance("titel", "title"), 2);
        assert_eq!(closest("titel", &["title", "domain"]), Some("title"));
        assert_eq!(closest("zzzzzz", &["title", "domain"]), None);
    }

    #[test]
    fn lines_from_offsets() {
        let (r, doc) = Reader::parse("x.toml".into(), "a = 1\n\n[t]\nb = 2\n");
        let doc = doc.unwrap();
        let root = r.root(&doc);
        assert_eq!(r.key_line(&root, "a"), 1);
        let t = doc.as_table().get("t").unwrap().as_table().unwrap();
        assert_eq!(r.line(t.span()), Some(3));
        assert_eq!(r.line(t.key("b").unwrap().span()), Some(4));
    }

    #[test]
    fn syntax_error_has_a_line() {
        let (r, doc) = Reader::parse("x.toml".into(), "a = 1\nb = = 2\n");
        assert!(doc.is_none());
        assert_eq!(r.errors.len(), 1);
        assert_eq!(r.errors[0].line, Some(2));
        assert!(!r.errors[0].message.contains('\n'));
    }
}
