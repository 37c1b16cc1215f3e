use std::path::PathBuf;

/// Why an artifact could not be materialized. Messages are lowercase
/// fragments that name the file, url or entry involved.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("{}: {what}: {source}", path.display())]
    Io {
        path: PathBuf,
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: not empty; the artifact is materialized into a new, empty directory", path.display())]
    OutDirNotEmpty { path: PathBuf },
    #[error("{location}: sha256 mismatch: expected {expected}, got {actual}")]
    Digest { location: String, expected: String, actual: String },
    #[error("{url}: {message}")]
    Http { url: String, message: String },
    #[error("git {url}: {message}")]
    Git { url: String, message: String },
    #[error("{origin}: {message}")]
    Archive { origin: String, message: String },
    /// An entry that would land outside the tree or write through a link.
    #[error("{origin}: {entry}: {reason}")]
    Unsafe { origin: String, entry: String, reason: String },
    #[error("pypi {requirement}: {message}")]
    Pypi { requirement: String, message: String },
    #[error("crate {name} {version}: {message}")]
    Crate { name: String, version: String, message: String },
    #[error("debian-source {package} {version}: {message}")]
    Debian { package: String, version: String, message: String },
    /// The task does not describe a fetchable artifact (it did not pass
    /// validation).
    #[error("{task}: {message}")]
    Invalid { task: String, message: String },
}

impl FetchError {
    pub(crate) fn io(
        path: impl Into<PathBuf>,
        what: &'static str,
    ) -> impl FnOnce(std::io::Error) -> FetchError {
        let path = path.into();
        move |source| FetchError::Io { path, what, source }
    }
}
