//! A task's metadata as a run saw it when it started (from task.toml):
//! what reports slice by and the index's `tasks` table holds, kept in
//! run.toml so that a run's reports and index need not find the task
//! directories again.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskInfo {
    pub title: String,
    /// `ai`, `systems` or `scientific`.
    pub domain: String,
    /// `easy`, `medium` or `hard`.
    pub difficulty: String,
    /// Main language first.
    pub languages: Vec<String>,
    pub legacy: bool,
    pub gpu: bool,
    pub qemu: bool,
    /// The paper's year, where the task gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub year: Option<i64>,
    #[serde(default)]
    pub tags: Vec<String>,
}
