use std::path::PathBuf;

/// Why an environment could not be made, used or removed. These are
/// infrastructure failures: a trial that meets one ends as `infra_error`,
/// but for [`EnvError::Broken`].
#[derive(Debug, thiserror::Error)]
pub enum EnvError {
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{program} failed: {detail}")]
    Command { program: String, detail: String },
    #[error("limit {limit} cannot be enforced on this host: {why} (pass --allow-unlimited to run anyway)")]
    LimitUnavailable { limit: &'static str, why: String },
    #[error("base image not found at {0}: run `cleanroom image build`")]
    NoImage(PathBuf),
    /// An image that the backend was not asked to prepare.
    #[error("image `{0}` was not prepared for this backend")]
    ImageNotPrepared(String),
    /// A `--backend` name that no backend has (bad input).
    #[error("unknown backend `{name}` (available: {available})")]
    UnknownBackend { name: String, available: String },
    #[error("{0}")]
    Phase(String),
    /// What ran in the environment broke it (a machine whose disk no longer
    /// mounts): the trial fails, it is no infrastructure error.
    #[error("the environment was broken by what ran in it: {0}")]
    Broken(String),
    /// A base image name that `image::IMAGES` does not define (bad input).
    #[error("unknown image `{name}` (known images: {known})")]
    UnknownImage { name: String, known: String },
    /// What the host's configuration gives a backend is unusable (bad
    /// input): the message names the entry (`vm.gpus[0]: ...`).
    #[error("{0}")]
    Config(String),
    /// A base image cannot be built or read: no mirror, a bad `--mirror`, a
    /// damaged image.json.
    #[error("{0}")]
    Image(String),
}

impl EnvError {
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        EnvError::Io { what: what.into(), source }
    }
}
