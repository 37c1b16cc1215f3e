//! Reporters: turn trial records and summaries into text for people.
//! Every string that can come from a task or an environment is escaped for
//! where it goes.

mod escape;
mod terminal;

pub use escape::escape_terminal;
pub use terminal::{summary_table, trial_line};
