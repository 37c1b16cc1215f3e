//! What `tasks calibrate` changes in one check of verify/checks.toml, as
//! the text it writes: each number in the author's notation
//! (cleanroom_runner::calibrate_notation). The same edits are shown and
//! written, by toml_edit, so comments and layout stay, and a key whose
//! value does not change is not touched.

use cleanroom_runner::calibrate::Proposal;
use cleanroom_runner::calibrate_notation::Notation;
use toml_edit::{DocumentMut, Item, TableLike, Value};

/// One change to a check's table.
#[derive(Debug, Clone, PartialEq)]
pub enum Edit {
    /// `key = text`, in place of its value or as a new key.
    Set {
        key: &'static str,
        text: String,
    },
    /// One bound of `range`: 0 the lower, 1 the upper.
    Bound {
        index: usize,
        text: String,
    },
    Remove(&'static str),
}

/// The tables of checks.toml's checks (`[[check]]` or `check = [{...}]`).
pub fn check_tables(doc: &mut DocumentMut) -> Vec<&mut dyn TableLike> {
    match doc.get_mut("check") {
        Some(Item::ArrayOfTables(checks)) => checks.iter_mut().map(|t| t as &mut dyn TableLike).collect(),
        Some(Item::Value(Value::Array(checks))) => checks
            .iter_mut()
            .filter_map(|v| v.as_inline_table_mut())
            .map(|t| t as &mut dyn TableLike)
            .collect(),
        _ => Vec::new(),
    }
}

/// The edits that make `table` say what `proposal` does.
pub fn edits(table: &dyn TableLike, proposal: &Proposal) -> Vec<Edit> {
    match proposal {
        Proposal::Keep => Vec::new(),
        Proposal::Tolerance { abs_tol, rel_tol } => {
            let expect = table.get("expect").and_then(raw).map(|r| Notation::of(&r));
            [("abs_tol", abs_tol), ("rel_tol", rel_tol)]
                .into_iter()
                .filter_map(|(key, new)| {
                    let now = table.get(key);
                    match (now.and_then(number), new) {
                        (Some(now), Some(new)) if now == *new => None,
                        (_, Some(new)) => {
                            let notation = match now.and_then(raw) {
                                Some(raw) => Notation::of(&raw),
                                None => Notation::for_new(*new, expect),
                            };
                            Some(Edit::Set { key, text: notation.write(*new) })
                        }
                        (_, None) => now.is_some().then_some(Edit::Remove(key)),
                    }
                })
                .collect()
        }
        Proposal::Range(lo, hi) => {
            let bounds = table.get("range").and_then(|r| r.as_array());
            [lo, hi]
                .into_iter()
                .enumerate()
                .filter_map(|(index, new)| {
                    let now = bounds.and_then(|b| b.get(index));
                    if now.and_then(value_number) == Some(*new) {
                        return None;
                    }
                    let notation = now.and_then(value_raw).map_or(Notation::Decimal, |r| Notation::of(&r));
                    Some(Edit::Bound { index, text: notation.write(*new) })
                })
                .collect()
        }
    }
}

/// Applies `edits` to `table`; the replaced values keep their comments.
pub fn apply(table: &mut dyn TableLike, edits: &[Edit]) -> Result<(), String> {
    for edit in edits {
        match edit {
            Edit::Set { key, text } => {
                let new = parsed(text)?;
                match table.get_mut(key).and_then(|i| i.as_value_mut()) {
                    Some(old) => replace(old, new),
                    None => {
                        table.insert(key, Item::Value(new));
                    }
                }
            }
            Edit::Bound { index, text } => {
                let new = parsed(text)?;
                let bound = table
                    .get_mut("range")
                    .and_then(|r| r.as_array_mut())
                    .and_then(|b| b.get_mut(*index))
                    .ok_or_else(|| format!("range has no bound {index}"))?;
                replace(bound, new);
            }
            Edit::Remove(key) => {
                table.remove(key);
            }
        }
    }
    Ok(())
}

/// The edits as the PROPOSED column shows them.
pub fn show(edits: &[Edit]) -> String {
    if edits.is_empty() {
        return "keep".into();
    }
    let shown: Vec<String> = edits
        .iter()
        .map(|e| match e {
            Edit::Set { key, text } => format!("{key} = {text}"),
            Edit::Bound { index: 0, text } => format!("range lo = {text}"),
            Edit::Bound { text, .. } => format!("range hi = {text}"),
            Edit::Remove(key) => format!("no {key}"),
        })
        .collect();
    shown.join(", ")
}

/// The check's comparison as written, for the NOW column.
pub fn now(table: &dyn TableLike) -> String {
    let mut shown = Vec::new();
    for key in ["expect", "abs_tol", "rel_tol"] {
        if let Some(raw) = table.get(key).and_then(raw) {
            shown.push(format!("{key} {raw}"));
        }
    }
    if let Some(range) = table.get("range").and_then(|r| r.as_array()) {
        let bounds: Vec<String> = range.iter().filter_map(value_raw).collect();
        shown.push(format!("range [{}]", bounds.join(", ")));
    }
    shown.join(" ")
}

fn parsed(text: &str) -> Result<Value, String> {
    text.parse::<Value>().map_err(|e| format!("{text}: {e}"))
}

/// `new` in place of `old`, with the spaces and comments around `old`.
fn replace(old: &mut Value, mut new: Value) {
    *new.decor_mut() = old.decor().clone();
    *old = new;
}

fn raw(item: &Item) -> Option<String> {
    item.as_value().and_then(value_raw)
}

fn value_raw(value: &Value) -> Option<String> {
    match value {
        Value::Float(f) => Some(f.display_repr().into_owned()),
        Value::Integer(i) => Some(i.display_repr().into_owned()),
        _ => None,
    }
}

fn number(item: &Item) -> Option<f64> {
    item.as_value().and_then(value_number)
}

fn value_number(value: &Value) -> Option<f64> {
    value.as_float().or_else(|| value.as_integer().map(|i| i as f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(doc: &mut DocumentMut) -> &mut dyn TableLike {
        check_tables(doc).into_iter().next().unwrap()
    }

    #[test]
    fn only_what_changes_is_written_in_the_authors_notation() {
        let text = "[[check]]\nname = \"x\"\nexpect = 2.5\nabs_tol = 0.01 # from the paper\nrel_tol = 1e-9\n";
        let mut doc: DocumentMut = text.parse().unwrap();
        let proposal = Proposal::Tolerance { abs_tol: Some(0.01), rel_tol: Some(1.53e-4) };
        let edits = edits(check(&mut doc), &proposal);
        assert_eq!(edits, [Edit::Set { key: "rel_tol", text: "1.53e-4".into() }]);
        assert_eq!(show(&edits), "rel_tol = 1.53e-4");
        apply(check(&mut doc), &edits).unwrap();
        assert_eq!(doc.to_string(), text.replace("1e-9", "1.53e-4"));
    }

    #[test]
    fn a_new_key_is_added_and_a_dropped_one_removed() {
        let text = "check = [{ name = \"x\", expect = 2.5, abs_tol = 0.5 }]\n";
        let mut doc: DocumentMut = text.parse().unwrap();
        let proposal = Proposal::Tolerance { abs_tol: None, rel_tol: Some(1e-6) };
        let edits = edits(check(&mut doc), &proposal);
        assert_eq!(show(&edits), "no abs_tol, rel_tol = 1e-6");
        apply(check(&mut doc), &edits).unwrap();
        let back: DocumentMut = doc.to_string().parse().unwrap();
        assert_eq!(back["check"][0]["rel_tol"].as_float(), Some(1e-6), "{doc}");
        assert!(back["check"][0].get("abs_tol").is_none(), "{doc}");
        assert_eq!(doc.to_string(), "check = [{ name = \"x\", expect = 2.5, rel_tol = 1e-6 }]\n");
    }

    #[test]
    fn a_range_changes_only_the_bound_that_moves() {
        let text = "[[check]]\nname = \"pi\"\nrange = [3, 3.3]\n";
        let mut doc: DocumentMut = text.parse().unwrap();
        let edits = edits(check(&mut doc), &Proposal::Range(3.0, 3.334));
        assert_eq!(edits, [Edit::Bound { index: 1, text: "3.334".into() }]);
        assert_eq!(now(check(&mut doc)), "range [3, 3.3]");
        apply(check(&mut doc), &edits).unwrap();
        assert_eq!(doc.to_string(), "[[check]]\nname = \"pi\"\nrange = [3, 3.334]\n");
        assert!(super::edits(check(&mut doc), &Proposal::Keep).is_empty());
    }
}
