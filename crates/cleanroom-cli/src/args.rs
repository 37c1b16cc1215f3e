//! The command line (DESIGN.md, "Command line"): the surface users learn.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use cleanroom_agent::GateMode;

#[derive(Debug, Parser)]
#[command(
    name = "cleanroom",
    version,
    about = "Can this agent deploy a research artifact on a fresh machine and run its designated experiment?"
)]
pub struct Cli {
    /// The configuration (models, external agents); default ./cleanroom.toml,
    /// then ~/.config/cleanroom/config.toml, over the built-in defaults.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per process: the size of its largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Base images for environments.
    #[command(subcommand)]
    Image(ImageCommand),
    /// Tasks: list, vet, calibrate, create.
    #[command(subcommand)]
    Tasks(TasksCommand),
    /// Run agents on tasks in fresh environments and verify them.
    Run(RunArgs),
    /// Report on runs: pass rates with intervals, failures, matrix, cost.
    Report(ReportArgs),
    /// The results index (index.sqlite beside the run directories).
    #[command(subcommand)]
    Index(IndexCommand),
    /// Where a run stands: its results so far, what its nodes are on, and
    /// whether a `cleanroom run` is attached to it.
    Status(StatusArgs),
    /// A local, read-only web application over a directory of runs: runs,
    /// a run's tables and trials, each trial with why it failed, its
    /// trajectory and logs, and comparisons of two agents.
    View(ViewArgs),
    /// One attempt of a Slurm run, as an element of its job array on a node
    /// (what `run --executor slurm` submits).
    #[command(hide = true)]
    SlurmTrial(SlurmTrialArgs),
}

#[derive(Debug, Args)]
pub struct ViewArgs {
    /// The directory of runs (the `--out` of `cleanroom run`).
    #[arg(default_value = "runs")]
    pub runs_dir: PathBuf,
    /// The port to listen on; 0 lets the system choose one.
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// The address to listen on. The viewer shows everything in the runs,
    /// agents' logs included: bind beyond this machine only on purpose.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: std::net::IpAddr,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The run directory.
    pub run_dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct SlurmTrialArgs {
    /// The run directory, on a file system the nodes share.
    #[arg(long)]
    pub run_dir: PathBuf,
    /// The array's list of attempts, one per element.
    #[arg(long)]
    pub list: PathBuf,
}

#[derive(Debug, Subcommand)]
pub enum IndexCommand {
    /// Rebuild index.sqlite from the run directories (the source of truth).
    Rebuild(IndexRebuildArgs),
}

#[derive(Debug, Args)]
pub struct IndexRebuildArgs {
    /// The directory of runs, where index.sqlite is.
    #[arg(long, default_value = "runs")]
    pub out: PathBuf,
}

#[derive(Debug, Subcommand)]
pub enum ImageCommand {
    /// Build a base image with debootstrap from the host's apt mirror.
    Build(ImageBuildArgs),
    /// Write a sandbox image as a tar archive (for `image import` on
    /// another machine or by another user).
    Export(ImageExportArgs),
    /// Install a sandbox image from an archive that `image export` wrote;
    /// its digest is checked.
    Import(ImageImportArgs),
}

#[derive(Debug, Args)]
pub struct ImageExportArgs {
    #[arg(long, default_value = "debian-12-minimal")]
    pub image: String,
    /// Where to write the archive (default: standard output).
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ImageImportArgs {
    /// The archive (`-` or none: standard input).
    pub archive: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ImageBuildArgs {
    #[arg(long, default_value = "debian-12-minimal")]
    pub image: String,
    /// The backend the image is for: `sandbox` (a root file system) or
    /// `vm` (a bootable disk with a kernel and systemd).
    #[arg(long, default_value = "sandbox")]
    pub backend: String,
    /// Debian mirror URL (default: the host's configured apt mirror).
    #[arg(long)]
    pub mirror: Option<String>,
    /// Rebuild even if the image exists.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Subcommand)]
pub enum TasksCommand {
    /// List tasks with their metadata.
    List(TasksListArgs),
    /// Vet tasks: schema, artifact, no leaked expected values, the oracle
    /// passes, nop fails, verdicts repeatable.
    Check(TasksCheckArgs),
    /// Run the oracle (and other correct deployments) N times each and
    /// widen tolerances to the spread.
    Calibrate(TasksCalibrateArgs),
    /// Write a task skeleton that passes validation.
    New(TasksNewArgs),
    /// Convert a task written for another harness into cleanroom's format,
    /// saying what could not be carried over.
    Import(TasksImportArgs),
    /// Write a cleanroom task in another harness's format, saying what
    /// could not be carried over.
    Export(TasksExportArgs),
}

#[derive(Debug, Args)]
pub struct TasksImportArgs {
    /// The format of SRC.
    pub format: ImportFormat,
    /// The task directory to convert, or a dataset: a directory of tasks,
    /// or a Harbor registry.json (`#NAME@VERSION` picks one dataset).
    pub src: PathBuf,
    /// The new task's directory (it must not exist); its name is the task
    /// id. For a dataset, the new directory of its tasks.
    pub dest: PathBuf,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ImportFormat {
    /// Harbor's (Terminal-Bench's harness): task.toml, instruction.md,
    /// environment/Dockerfile, tests/test.sh, solution/solve.sh.
    Harbor,
}

#[derive(Debug, Args)]
pub struct TasksExportArgs {
    /// The format to write.
    pub format: ExportFormat,
    /// The cleanroom task to convert, or a directory of tasks.
    pub task: PathBuf,
    /// The new task's directory (it must not exist, or be empty). For a
    /// directory of tasks, the new directory of their exports, each named
    /// by its task's id.
    pub dest: PathBuf,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    /// Harbor's (Terminal-Bench's harness): task.toml, instruction.md,
    /// environment/Dockerfile, tests/test.sh, solution/solve.sh.
    Harbor,
}

#[derive(Debug, Args)]
pub struct TasksCheckArgs {
    /// A task directory, or a directory of tasks.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Only what needs no environment: schema, artifact, leaks.
    #[arg(long)]
    pub no_run: bool,
    /// Skip the substitution battery (agents that install a same-named
    /// package or replay the experiment's output, each of which must fail).
    #[arg(long)]
    pub no_substitutes: bool,
    /// Tasks checked at once (default: 1).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = at_least_one::<usize>)]
    pub jobs: usize,
    /// The environment backend that runs the oracle and nop (default: sandbox).
    #[arg(long, default_value = cleanroom_env::BACKENDS[0])]
    pub backend: String,
    /// Where the check's trials keep their files (agent.log, verify.log,
    /// ...), in a directory `check-<id>` of their own (default: runs).
    #[arg(long, default_value = "runs")]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct TasksCalibrateArgs {
    /// A task directory, or a directory of tasks.
    pub dir: PathBuf,
    /// Runs per task of each deployment (at least 2).
    #[arg(long, default_value_t = 5, allow_negative_numbers = true, value_parser = whole_number)]
    pub runs: u32,
    /// Another correct deployment, a setup script run as `script:PATH`
    /// (repeatable); its values join the oracle's in the spread.
    #[arg(long = "setup", value_name = "PATH")]
    pub setups: Vec<PathBuf>,
    /// Also narrow tolerances and ranges to the spread (by default they only
    /// widen: the author's may be deliberate).
    #[arg(long)]
    pub tighten: bool,
    /// Write the proposed tolerances into verify/checks.toml.
    #[arg(long)]
    pub write: bool,
    /// Runs at once (default: 1).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = at_least_one::<usize>)]
    pub jobs: usize,
    /// The environment backend that runs the deployments (default: sandbox).
    #[arg(long, default_value = cleanroom_env::BACKENDS[0])]
    pub backend: String,
}

#[derive(Debug, Args)]
pub struct TasksNewArgs {
    /// The new task's id (and directory name).
    pub id: String,
    /// Where to make it (default: the current directory).
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// Where the artifact comes from: `dir` (the task's artifact/),
    /// `pypi:NAME==VERSION`, `crate:NAME@VERSION` or
    /// `debian:PACKAGE=VERSION` (fetched when the task runs).
    #[arg(long, default_value = "dir")]
    pub source: String,
    /// Write the experiment's script and input into overlay/, laid over the
    /// fetched artifact (with a registry --source).
    #[arg(long)]
    pub overlay: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ListFormat {
    Table,
    Csv,
    Json,
}

#[derive(Debug, Args)]
pub struct TasksListArgs {
    /// A task directory, or a directory of tasks.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    #[arg(long, value_enum, default_value = "table")]
    pub format: ListFormat,
}

/// Where a run's trials execute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExecutorArg {
    /// On this machine, `--jobs` at once.
    Local,
    /// As job arrays on a Slurm cluster, `--jobs` of each array at once.
    Slurm,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Gate {
    Off,
    Advisory,
    Enforced,
}

impl From<Gate> for GateMode {
    fn from(gate: Gate) -> GateMode {
        match gate {
            Gate::Off => GateMode::Off,
            Gate::Advisory => GateMode::Advisory,
            Gate::Enforced => GateMode::Enforced,
        }
    }
}

/// `run`. The flags that make the plan are options, without defaults here
/// (see run_cmd.rs), so that `--resume`, which takes the plan from run.toml,
/// can tell which were given.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// A task directory, or a directory of tasks.
    #[arg(long = "tasks", required_unless_present = "resume")]
    pub tasks: Vec<PathBuf>,
    /// Run only this task (repeatable).
    #[arg(long = "task")]
    pub task_ids: Vec<String>,
    /// oracle | nop | script:PATH | llm:MODEL | command:NAME[@MODEL] (repeatable).
    #[arg(long = "agent", required_unless_present = "resume")]
    pub agents: Vec<String>,
    /// Trials of each task and agent (default: 1).
    #[arg(long, allow_negative_numbers = true, value_parser = at_least_one::<u32>)]
    pub trials: Option<u32>,
    /// Trials at once (default: the number of CPUs).
    #[arg(long, allow_negative_numbers = true, value_parser = at_least_one::<usize>)]
    pub jobs: Option<usize>,
    /// The environment backend (default: sandbox).
    #[arg(long)]
    pub backend: Option<String>,
    /// Parent directory of the run directories (default: runs).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Completion gate for llm: and command: agents: when the agent stops,
    /// run the task's public experiment and report it back (advisory) or
    /// send the agent back to work until it succeeds (enforced) (default:
    /// off).
    /// Repeatable: given several modes, each agent runs under every one, as
    /// agents `<ID>-gate-<MODE>` on the same tasks, and `cleanroom report`
    /// compares gate off with gate on.
    #[arg(long = "gate", value_enum, value_name = "MODE")]
    pub gates: Vec<Gate>,
    /// Most model requests of an llm: or command: agent.
    #[arg(long, allow_negative_numbers = true, value_parser = at_least_one::<u32>)]
    pub max_steps: Option<u32>,
    /// Most tokens (prompt + completion) of an llm: or command: agent.
    #[arg(long, allow_negative_numbers = true, value_parser = at_least_one::<u64>)]
    pub max_tokens: Option<u64>,
    /// Most dollars of model use per trial (from the configured prices).
    #[arg(long, value_name = "USD", allow_negative_numbers = true, value_parser = positive_number)]
    pub max_cost: Option<f64>,
    /// Scales every agent time budget (default: 1).
    #[arg(long, value_name = "X", allow_negative_numbers = true, value_parser = positive_number)]
    pub timeout_multiplier: Option<f64>,
    /// Attempts after the first of a trial that ends in infra_error
    /// (default: 1).
    #[arg(long, allow_negative_numbers = true, value_parser = whole_number)]
    pub retries: Option<u32>,
    /// Finish an interrupted run: rerun the trials without a result, with
    /// the plan of RUN_DIR/run.toml.
    #[arg(long, value_name = "RUN_DIR")]
    pub resume: Option<PathBuf>,
    /// Start trials even where a limit cannot be enforced (recorded).
    #[arg(long)]
    pub allow_unlimited: bool,
    /// Let the agents download packages from the registries directly,
    /// not through cleanroom's package cache (recorded).
    #[arg(long)]
    pub no_cache: bool,
    /// Most GiB the package cache keeps; past it the least recently used
    /// files go (default: 20).
    #[arg(long, value_name = "GIB", allow_negative_numbers = true, value_parser = at_least_one::<u64>)]
    pub cache_size: Option<u64>,
    /// Where the package cache lives (default: cache/packages under
    /// cleanroom's home, /var/lib/cleanroom for root).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Exit 100 when the pass rate is below RATE (0 to 1); with --resume,
    /// replaces the run's own.
    #[arg(long, value_name = "RATE", allow_negative_numbers = true, value_parser = rate)]
    pub fail_under: Option<f64>,
    /// Where the trials execute (default: local); slurm needs the run
    /// directory (--out) on a file system the nodes share.
    #[arg(long, value_enum)]
    pub executor: Option<ExecutorArg>,
    /// Slurm: the partition (default: the configuration's [slurm], else
    /// the cluster's default).
    #[arg(long)]
    pub partition: Option<String>,
    /// Slurm: the account to charge.
    #[arg(long)]
    pub account: Option<String>,
    /// Slurm: each job's time limit as sbatch takes it (default: from the
    /// task's budgets).
    #[arg(long = "slurm-time", value_name = "TIME")]
    pub slurm_time: Option<String>,
    /// Slurm: one more sbatch option, as one argument (repeatable).
    #[arg(long = "sbatch-option", value_name = "OPTION", allow_hyphen_values = true)]
    pub sbatch_options: Vec<String>,
}

/// A count that must be at least 1 (`--jobs 0` would run nothing).
fn at_least_one<T: std::str::FromStr + Default + PartialEq>(s: &str) -> Result<T, String> {
    match s.parse::<T>() {
        Ok(n) if n != T::default() => Ok(n),
        Ok(_) => Err("must be at least 1".into()),
        Err(_) => Err("expected a whole number, at least 1".into()),
    }
}

/// A count that may be 0.
fn whole_number(s: &str) -> Result<u32, String> {
    s.parse().map_err(|_| "expected a whole number, 0 or more".to_string())
}

/// A finite number above 0.
fn positive_number(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err("expected a number above 0, such as 1.5".into()),
    }
}

/// A pass rate: a number from 0 to 1.
fn rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if (0.0..=1.0).contains(&x) => Ok(x),
        _ => Err("expected a pass rate from 0 to 1, such as 0.8".into()),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Md,
    Json,
    Csv,
    Junit,
    Html,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportSlice {
    Domain,
    Difficulty,
    Gpu,
    Legacy,
    Language,
    Tag,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A run directory, or a run id under --runs-dir. None: every run in
    /// the results index of --runs-dir (index.sqlite).
    #[arg(value_name = "RUN")]
    pub runs: Vec<PathBuf>,
    #[arg(long, value_enum, default_value = "md")]
    pub format: ReportFormat,
    /// The rows below Overall: one per value of this task field.
    #[arg(long, value_enum, default_value = "domain")]
    pub by: ReportSlice,
    /// Write the report here instead of to standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Where run ids are looked up.
    #[arg(long, default_value = "runs")]
    pub runs_dir: PathBuf,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gate_values_are_the_names_run_toml_records() {
        for gate in Gate::value_variants() {
            let value = gate.to_possible_value().expect("a value");
            assert_eq!(value.get_name(), GateMode::from(*gate).as_str());
        }
    }
}
