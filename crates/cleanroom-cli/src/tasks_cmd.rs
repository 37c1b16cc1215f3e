use cleanroom_task::{load_tasks, render_list, ListFormat};

use crate::args::{self, TasksListArgs};
use crate::error::CliError;

pub fn list(args: TasksListArgs) -> Result<(), CliError> {
    let tasks = load_tasks(&args.dirs)?;
    let format = match args.format {
        args::ListFormat::Table => ListFormat::Table,
        args::ListFormat::Csv => ListFormat::Csv,
        args::ListFormat::Json => ListFormat::Json,
    };
    print!("{}", render_list(&tasks, format));
    Ok(())
}
