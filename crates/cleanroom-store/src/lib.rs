//! The run directory (DESIGN.md, "Run directory"): one result.json per trial
//! written by atomic rename, the attempts that ended in infra errors (each
//! with its own files), logs, run.toml and summary.json. Every writer holds
//! the run's lock, so two cleanroom processes never write one run. The results index
//! (`index.sqlite` beside the runs) is derived from them and rebuildable.

mod agent_id;
mod atomic;
mod error;
pub mod index;
mod lock;
mod record;
mod remote_attempt;
mod run_config;
mod run_dir;
mod summary;
mod task_info;

pub use agent_id::agent_ids;
pub use cleanroom_env::time::{rfc3339_utc, rfc3339_utc_now};
pub use error::StoreError;
pub use index::{Index, IndexError, IndexedRun, RebuildReport, Skipped, INDEX_FILE, INDEX_SCHEMA_VERSION};
pub use lock::held as run_in_use;
pub use record::{
    CacheBytes, ChangeCounts, Evidence, ExecutorRecord, FailureClass, Outcome, Tag, Timings, Tokens,
    TrialRecord, SCHEMA_VERSION,
};
pub use remote_attempt::{in_flight, InFlight, RemoteAttempt};
pub use run_config::{AgentEntry, ArtifactEntry, RunConfig};
pub use run_dir::{
    make_out_dir, new_run_id, read_results, read_run_config, RunDir, TrialFile, OUTPUTS_DIR, RESULT_FILE,
};
pub use summary::{AgentSummary, Counts, Summary};
pub use task_info::TaskInfo;

/// The types of other crates that a record embeds, so that readers of
/// records need only this crate.
pub use cleanroom_env::{LimitState, Limits, SlurmOptions};
pub use cleanroom_model::{AppliedGate, GateMode, StopReason};
pub use cleanroom_verify::{Verdict, VerdictStage};
