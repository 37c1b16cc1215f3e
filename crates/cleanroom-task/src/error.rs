//! Errors of loading and validating tasks.

use std::fmt;
use std::path::{Path, PathBuf};

/// One problem with a task: `<file>:<line>: <key>: <what is wrong>`.
///
/// The message is a lowercase fragment on one line that says what is wrong
/// and what is expected. `line` is absent for a file that is missing as a
/// whole; `key` is absent when no key is involved (a TOML syntax error, a
/// missing file).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LoadError {
    pub file: PathBuf,
    pub line: Option<usize>,
    pub key: Option<String>,
    pub message: String,
}

impl LoadError {
    pub(crate) fn new(
        file: impl Into<PathBuf>,
        line: Option<usize>,
        key: Option<&str>,
        message: impl Into<String>,
    ) -> Self {
        LoadError { file: file.into(), line, key: key.map(str::to_owned), message: one_line(&message.into()) }
    }

    /// An error about a file or directory as a whole.
    pub(crate) fn file(file: impl AsRef<Path>, message: impl Into<String>) -> Self {
        LoadError::new(file.as_ref(), None, None, message)
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(key) = &self.key {
            write!(f, ": {key}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for LoadError {}

/// Every problem found while loading one or more tasks; displays one line
/// per error.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct LoadErrors(pub Vec<LoadError>);

impl LoadErrors {
    pub fn errors(&self) -> &[LoadError] {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for LoadErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for LoadErrors {}

impl From<LoadError> for LoadErrors {
    fn from(e: LoadError) -> Self {
        LoadErrors(vec![e])
    }
}

/// Messages stay on one line: a parser's multi-line message is joined.
fn one_line(s: &str) -> String {
    let parts: Vec<&str> = s.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    parts.join("; ")
}
