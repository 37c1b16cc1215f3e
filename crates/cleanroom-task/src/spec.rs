//! task.toml as typed data, with the defaults of the task format applied.

use serde::Serialize;

use crate::controls::{NegativeControl, Substitutes};

/// Every table and key of task.toml, defaults applied.
#[derive(Debug, Clone, Serialize)]
pub struct TaskSpec {
    pub schema_version: u32,
    pub task: TaskMeta,
    pub paper: Paper,
    pub artifact: Artifact,
    pub environment: Environment,
    pub agent: AgentSpec,
    /// `[experiment]`, when the table is present.
    pub experiment: Option<Experiment>,
    pub oracle: Oracle,
    pub verify: VerifyConfig,
    /// `[negative_control]` [cleanroom]: no correct deployment passes.
    pub negative_control: Option<NegativeControl>,
    /// `[substitutes]` [cleanroom]: the battery of `tasks check`.
    pub substitutes: Substitutes,
}

/// `[task]`.
#[derive(Debug, Clone, Serialize)]
pub struct TaskMeta {
    /// `task.id`, or the directory name.
    pub id: String,
    pub title: String,
    pub domain: Domain,
    pub difficulty: Difficulty,
    /// Main language first.
    pub languages: Vec<String>,
    pub legacy: bool,
    pub gpu: bool,
    pub qemu: bool,
    pub tags: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Domain {
    Ai,
    Systems,
    Scientific,
}

impl Domain {
    pub const ALL: [Domain; 3] = [Domain::Ai, Domain::Systems, Domain::Scientific];

    /// The name in task.toml.
    pub fn as_str(self) -> &'static str {
        match self {
            Domain::Ai => "ai",
            Domain::Systems => "systems",
            Domain::Scientific => "scientific",
        }
    }

    /// DeployBench's `type` column in papers.csv.
    pub fn deploybench_type(self) -> &'static str {
        match self {
            Domain::Ai => "ai",
            Domain::Systems => "sys",
            Domain::Scientific => "scientific",
        }
    }

    pub fn parse(s: &str) -> Option<Domain> {
        Domain::ALL.into_iter().find(|d| d.as_str() == s)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Difficulty {
    Easy,
    Medium,
    Hard,
}

impl Difficulty {
    pub const ALL: [Difficulty; 3] = [Difficulty::Easy, Difficulty::Medium, Difficulty::Hard];

    pub fn as_str(self) -> &'static str {
        match self {
            Difficulty::Easy => "easy",
            Difficulty::Medium => "medium",
            Difficulty::Hard => "hard",
        }
    }

    pub fn parse(s: &str) -> Option<Difficulty> {
        Difficulty::ALL.into_iter().find(|d| d.as_str() == s)
    }
}

/// `[paper]`: every key optional.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Paper {
    pub title: Option<String>,
    pub venue: Option<String>,
    pub year: Option<i64>,
    pub url: Option<String>,
}

/// `[artifact]`.
#[derive(Debug, Clone, Serialize)]
pub struct Artifact {
    pub source: ArtifactSource,
    /// Absolute path inside the environment.
    pub dest: String,
}

pub const DEFAULT_ARTIFACT_DEST: &str = "/workspace/artifact";

/// Where the artifact comes from (`artifact.source` and its keys).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "source", rename_all = "kebab-case")]
pub enum ArtifactSource {
    /// `artifact/` in the task.
    Dir,
    /// `path` inside the task, or `url` with a required `sha256`
    /// (lowercase hex). With `path`, `sha256` is optional and checked when given.
    Archive { path: Option<String>, url: Option<String>, sha256: Option<String> },
    /// `rev` is a full commit id, lowercase hex.
    Git { url: String, rev: String },
    /// `requirement = "name==version"`.
    PypiSdist { requirement: String },
    /// A cleanroom addition: `crate = "name"`, `version = "x.y.z"`: the
    /// .crate file of exactly that version on crates.io, checked against the
    /// registry index's sha256 and, when given, `sha256` (lowercase hex).
    Crate {
        #[serde(rename = "crate")]
        name: String,
        version: String,
        sha256: Option<String>,
    },
    /// A cleanroom addition: `package = "name"`, `version = "debian
    /// version"`: a Debian source package from `mirror` (an http, https or
    /// file url of a Debian archive) or else the host's configured Debian
    /// mirror. `sha256`, when given, pins the .dsc file.
    DebianSource { package: String, version: String, mirror: Option<String>, sha256: Option<String> },
}

impl ArtifactSource {
    /// Every `source` name, in the order messages list them.
    pub const KINDS: [&'static str; 6] = ["dir", "archive", "git", "pypi-sdist", "crate", "debian-source"];

    /// The name in task.toml: `dir`, `archive`, `git`, `pypi-sdist`,
    /// `crate` or `debian-source`.
    pub fn kind(&self) -> &'static str {
        match self {
            ArtifactSource::Dir => "dir",
            ArtifactSource::Archive { .. } => "archive",
            ArtifactSource::Git { .. } => "git",
            ArtifactSource::PypiSdist { .. } => "pypi-sdist",
            ArtifactSource::Crate { .. } => "crate",
            ArtifactSource::DebianSource { .. } => "debian-source",
        }
    }
}

/// `[environment]`.
#[derive(Debug, Clone, Serialize)]
pub struct Environment {
    pub image: String,
    pub cpus: u32,
    pub memory_mb: u64,
    pub disk_mb: u64,
    pub network: bool,
    pub gpus: u32,
    /// **[cleanroom]** Whose NVIDIA driver user space a GPU environment has.
    pub gpu_driver: GpuDriver,
    /// **[cleanroom]** A machine of its own (a kernel, systemd): backends
    /// that share the host's kernel skip the task.
    pub machine: bool,
    /// **[cleanroom]** A directory of the task holding a Dockerfile that
    /// builds the environment's image FROM `cleanroom/<image>`: backends
    /// without a container engine skip the task.
    pub build: Option<String>,
}

/// `environment.gpu_driver`: whether a GPU environment comes with the
/// host's NVIDIA driver libraries and tools (mounted read-only, as NVIDIA's
/// container toolkit does), or without, for the agent to install, as on a
/// fresh cloud VM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GpuDriver {
    Host,
    Agent,
}

impl GpuDriver {
    pub const ALL: [GpuDriver; 2] = [GpuDriver::Host, GpuDriver::Agent];

    pub fn as_str(self) -> &'static str {
        match self {
            GpuDriver::Host => "host",
            GpuDriver::Agent => "agent",
        }
    }

    pub fn parse(s: &str) -> Option<GpuDriver> {
        GpuDriver::ALL.into_iter().find(|d| d.as_str() == s)
    }
}

impl Default for Environment {
    fn default() -> Self {
        Environment {
            image: "debian-12-minimal".to_owned(),
            cpus: 2,
            memory_mb: 4096,
            disk_mb: 20480,
            network: true,
            gpus: 0,
            gpu_driver: GpuDriver::Host,
            machine: false,
            build: None,
        }
    }
}

/// `[agent]`.
#[derive(Debug, Clone, Serialize)]
pub struct AgentSpec {
    pub timeout_sec: u64,
}

/// `[experiment]`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Experiment {
    pub command: Option<String>,
    /// Relative to `artifact.dest`.
    pub outputs: Vec<String>,
}

impl Experiment {
    /// The words of the command that may name a file of the artifact (the
    /// entry point is the first that does): unquoted, relative, no `..`.
    pub fn entry_candidates(&self) -> Vec<&str> {
        self.command
            .as_deref()
            .unwrap_or("")
            .split_whitespace()
            .map(|w| w.trim_matches(|c| c == '"' || c == '\'' || c == ';'))
            .filter(|w| !w.is_empty() && !w.starts_with('/') && !w.split('/').any(|c| c == ".."))
            .collect()
    }
}

/// `[oracle]`.
#[derive(Debug, Clone, Serialize)]
pub struct Oracle {
    /// Defaults to `agent.timeout_sec`.
    pub timeout_sec: u64,
}

/// `[verify]` of task.toml (the pipeline itself is in verify/checks.toml).
#[derive(Debug, Clone, Serialize)]
pub struct VerifyConfig {
    pub timeout_sec: u64,
    pub network: bool,
    /// Globs relative to `artifact.dest`.
    pub protected: Vec<String>,
}

pub const DEFAULT_VERIFY_TIMEOUT_SEC: u64 = 900;
