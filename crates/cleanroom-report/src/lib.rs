//! Reporters: turn trial records and summaries into text for people and
//! for other tools. Every string that can come from a task or an
//! environment is escaped for where it goes.
//!
//! - `terminal`: progress lines and the end-of-run table.
//! - `model`: what every report shows, computed once (`Report::build`);
//!   `stats`: the statistics behind it; `class_row`: the failure-class rows;
//!   `gate_effect`: one agent with the completion gate off and on.
//! - one file per format: `markdown`, `json` (and CSV), `junit`, `html`
//!   (with `svg` charts of `segment`s); `why`: each failed trial's first
//!   failure and the file that shows it.

mod class_row;
mod escape;
mod format;
mod gate_effect;
mod html;
mod json;
mod junit;
mod markdown;
mod model;
mod segment;
pub mod stats;
mod svg;
pub mod tables;
mod terminal;
mod why;

pub use class_row::ClassRow;
pub use cleanroom_store::TaskInfo;
pub use escape::{escape_html, escape_md, escape_terminal, escape_xml};
pub use gate_effect::{GateEffect, SelfStops};
pub use html::{html_table, render_html, render_html_sections, Links, CSP, STYLE};
pub use json::{render_csv, render_json};
pub use junit::render_junit;
pub use markdown::render_markdown;
pub use model::{
    Arm, ArmCounts, Costs, PairRow, Rate, Report, ReportInput, RunInput, SliceBy, SliceRow, Trial,
    PAIRING_RULE,
};
pub use terminal::{summary_table, trial_line};
pub use why::{first_failure, trial_dir, why, Why};
