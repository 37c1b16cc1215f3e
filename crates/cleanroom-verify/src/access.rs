//! Access checks (`opened` / `executed`): evidence, seen by the harness
//! from outside the environment, that a step used the artifact's own files.
//! The backend's watch records files by identity while the step runs; when
//! it ends, the artifact's files that match a check's glob are looked up by
//! identity in that record (a path read back from inside could lie; an
//! identity cannot).

use std::collections::HashMap;

use crate::task::{AccessKind, AccessQuery, Check, CheckFile, VerifySpec};
use cleanroom_env::{Accessed, CancelToken, EntryKind, Files, Globs, Manifest, WalkLimits};

use crate::checks::{shorten, CheckResult};

/// What one access check found when its step ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Evidence {
    /// The backend cannot watch file access.
    Unobservable,
    Seen {
        /// Matching files of the artifact that were used as asked, sorted.
        used: Vec<String>,
        /// Matching files of the artifact when the step ended.
        candidates: usize,
        /// Why the record may miss some accesses.
        incomplete: Option<String>,
    },
}

/// The access queries of `spec`'s checks about `step`.
pub(crate) fn queries_of<'a>(spec: &'a VerifySpec, step: &str) -> Vec<&'a AccessQuery> {
    spec.checks
        .iter()
        .filter_map(|c: &Check| match &c.file {
            CheckFile::Access(q) if q.step == step => Some(q),
            _ => None,
        })
        .collect()
}

/// Each query's evidence from what a watch saw (`None`: no watch).
pub(crate) fn evidence(
    files: &dyn Files,
    dest: &str,
    seen: Option<&Accessed>,
    queries: &[&AccessQuery],
    cancel: &CancelToken,
) -> Vec<(AccessQuery, Evidence)> {
    let Some(seen) = seen else {
        return queries.iter().map(|q| ((*q).clone(), Evidence::Unobservable)).collect();
    };
    // One listing of the artifact serves every query of the step.
    let listing = files.manifest_against(dest, &Manifest::default(), WalkLimits::default(), cancel);
    let (entries, listing_incomplete) = match &listing {
        Ok(m) => (Some(&m.entries), m.incomplete.clone()),
        Err(_) => (None, Some("cancelled".to_string())),
    };
    queries
        .iter()
        .map(|q| {
            let globs = Globs::new(std::slice::from_ref(&q.glob)).expect("validated when the task loaded");
            let mut used = Vec::new();
            let mut candidates = 0;
            for (rel, entry) in entries.into_iter().flatten() {
                if entry.kind != EntryKind::File || !globs.is_match(rel) {
                    continue;
                }
                candidates += 1;
                let path = format!("{}/{rel}", dest.trim_end_matches('/'));
                let Ok(id) = files.file_id(&path) else { continue };
                let how = seen.files.get(&id).copied().unwrap_or_default();
                if match q.kind {
                    AccessKind::Opened => how.opened || how.executed,
                    AccessKind::Executed => how.executed,
                } {
                    used.push(rel.clone());
                }
            }
            let incomplete = seen.incomplete.clone().or_else(|| listing_incomplete.clone());
            ((*q).clone(), Evidence::Seen { used, candidates, incomplete })
        })
        .collect()
}

/// The result of an access check: passed when a matching file was used.
pub(crate) fn evaluate(check: &Check, query: &AccessQuery, evidence: Option<&Evidence>) -> CheckResult {
    let (passed, observed) = judge(query, evidence);
    CheckResult {
        name: check.name.clone(),
        passed,
        expected: shorten(&format!(
            "a file matching {} {} during step {}",
            query.glob,
            query.kind.as_str(),
            query.step
        )),
        observed: shorten(&observed),
    }
}

fn judge(query: &AccessQuery, evidence: Option<&Evidence>) -> (bool, String) {
    let verb = query.kind.as_str();
    match evidence {
        None => (false, format!("step `{}` did not run", query.step)),
        Some(Evidence::Unobservable) => {
            (false, "not observable: this backend cannot watch file access".into())
        }
        Some(Evidence::Seen { used, candidates, incomplete }) => {
            let note =
                incomplete.as_ref().map(|why| format!(" (record incomplete: {why})")).unwrap_or_default();
            match used.as_slice() {
                [] => (
                    false,
                    format!("none of the {candidates} matching files of the artifact was {verb}{note}"),
                ),
                [only] => (true, format!("{verb}: {only}")),
                [first, rest @ ..] => (true, format!("{verb}: {first} and {} more", rest.len())),
            }
        }
    }
}

/// Evidence by query, for the checks.
pub(crate) type Evidences = HashMap<AccessQuery, Evidence>;
