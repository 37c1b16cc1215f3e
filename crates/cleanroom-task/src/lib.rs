//! The cleanroom task format (version 1): parse, validate, list, and fetch
//! artifacts. The format is a public contract, described in TASK_FORMAT.md.
//!
//! - `load_task` / `load_tasks` read task.toml, instruction.md and
//!   verify/checks.toml and report every problem as
//!   `<file>:<line>: <key>: <what is wrong>`.
//! - `render_list` writes `cleanroom tasks list` in its three formats.
//! - `materialize_artifact` fills a host directory with the artifact.
//! - `import_harbor` / `export_harbor` convert from and to Harbor's format.

mod checks;
mod checks_toml;
mod controls;
mod error;
mod fetch;
mod harbor;
mod harbor_export;
mod harbor_import;
mod harbor_registry;
mod list;
mod load;
mod perl_regex;
mod placed;
mod rules;
mod spec;
mod task_toml;
mod toml_read;

pub use checks::{
    AccessKind, AccessQuery, Check, CheckFile, Comparison, CsvRow, Mutation, Selector, Stage, Step,
    VerifySpec,
};
pub use controls::{NegativeControl, Substitute, Substitutes};
pub use error::{LoadError, LoadErrors};
pub use fetch::{materialize_artifact, materialize_artifact_with, ArtifactRecord, FetchError, FetchOptions};
pub use harbor_export::{export_harbor, write as write_exported, Exported};
pub use harbor_import::{import_harbor, is_harbor_task, write as write_imported, Imported};
pub use harbor_registry::ListedTask;
pub use list::{render_list, ListEntry, ListFormat, CSV_COLUMNS};
pub use load::{dir_name, listed_tasks, load_task, load_tasks, Task};
pub use rules::{build_globset, compile_glob, is_valid_task_id, parse_requirement};
pub use spec::{
    AgentSpec, Artifact, ArtifactSource, Difficulty, Domain, Environment, Experiment, GpuDriver, Oracle,
    Paper, TaskMeta, TaskSpec, VerifyConfig, DEFAULT_ARTIFACT_DEST, DEFAULT_VERIFY_TIMEOUT_SEC,
};
