use std::path::PathBuf;

/// What went wrong with a run directory. Every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot {what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `--out`: where run directories are made.
    #[error("cannot make a run directory in {}: {source}; give --out a directory that exists or can be created", path.display())]
    OutDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("run directory {} already exists: pick another run id or resume it with --resume", .0.display())]
    RunExists(PathBuf),
    #[error("{} is not a run directory: it has no run.toml", .0.display())]
    NoRun(PathBuf),
    #[error("run {} is in use by another cleanroom process{}: wait for it to end or stop it", path.display(), holder(*pid))]
    InUse { path: PathBuf, pid: Option<u32> },
    #[error("{} is not a valid trial record: {source}", path.display())]
    BadRecord {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{} has schema_version {found}, newer than this cleanroom reads ({supported}): upgrade cleanroom", path.display())]
    NewerSchema { path: PathBuf, found: u32, supported: u32 },
    #[error("{} is not a valid run configuration: {source}", path.display())]
    BadConfig {
        path: PathBuf,
        #[source]
        source: Box<toml::de::Error>,
    },
    #[error("cannot encode {}: {detail}", path.display())]
    Encode { path: PathBuf, detail: String },
    #[error("{what} {name:?} cannot name a file or directory in a run: use a non-empty name without `/`, NUL or a leading `.`")]
    BadName { what: &'static str, name: String },
    #[error("refusing to write {name} in {}: the name is reserved for the trial's records", dir.display())]
    ReservedName { dir: PathBuf, name: String },
    #[error("{} already exists: a trial has exactly one result", .0.display())]
    ResultExists(PathBuf),
    #[error("{} already exists: a kept attempt is never replaced", .0.display())]
    AttemptExists(PathBuf),
}

fn holder(pid: Option<u32>) -> String {
    pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
}

impl StoreError {
    /// An I/O failure; `what` is the verb phrase after "cannot", e.g.
    /// "create directory".
    pub(crate) fn io(what: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        StoreError::Io { what, path: path.into(), source }
    }
}
