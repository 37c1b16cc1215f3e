//! `cleanroom view`: a local, read-only web application over a directory
//! of runs. Pages are rendered on the server from the run directories and
//! the results index; they carry no script and fetch nothing, and every
//! string that came from a task or an environment is escaped.
//!
//! - `source`: what is read (runs, records, trial files), never written;
//! - `server`: routes and headers;
//! - one file per page: `runs_page`, `run_page` (with `filter`),
//!   `trial_page` (with `trajectory` and `env_diff`), `file_page`,
//!   `compare_page`; `page`: the frame, escaping and links they share.

mod compare_page;
mod env_diff;
mod file_page;
mod filter;
mod page;
mod run_page;
mod runs_page;
mod server;
mod source;
mod trajectory;
mod trial_page;

pub use filter::Filter;
pub use run_page::render_run;
pub use server::{router, serve};
pub use source::{Library, LoadedRun, RunState, SourceError};
