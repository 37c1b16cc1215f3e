//! `cleanroom`: can this agent deploy a research artifact on a fresh machine
//! and run the paper's designated experiment?

mod args;
mod calibrate_cmd;
mod calibrate_edit;
mod check_cmd;
mod error;
mod export_cmd;
mod image_cmd;
mod import_cmd;
mod index_cmd;
mod interrupt;
mod new_cmd;
mod new_source;
mod prepare;
mod report_cmd;
mod reporter;
mod rootless;
mod run_cmd;
mod slurm;
mod status_cmd;
mod task_info;
mod tasks_cmd;
mod user_scope;
mod view_cmd;

use std::process::ExitCode;

use clap::Parser;

use crate::args::{Cli, Command, TasksCommand};

fn main() -> ExitCode {
    // Signals are handled by one thread (interrupt.rs); block them before
    // any other thread exists so they all inherit the mask.
    interrupt::block_signals();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            // --help and --version are no errors.
            return if e.use_stderr() { ExitCode::from(error::BAD_INPUT) } else { ExitCode::SUCCESS };
        }
    };
    let result = match cli.command {
        Command::Image(args::ImageCommand::Build(a)) => image_cmd::build(a),
        Command::Image(args::ImageCommand::Export(a)) => image_cmd::export(a),
        Command::Image(args::ImageCommand::Import(a)) => image_cmd::import(a),
        Command::Tasks(TasksCommand::List(a)) => tasks_cmd::list(a),
        Command::Tasks(TasksCommand::Check(a)) => check_cmd::check(a, cli.config.as_deref()),
        Command::Tasks(TasksCommand::Calibrate(a)) => calibrate_cmd::calibrate(a, cli.config.as_deref()),
        Command::Tasks(TasksCommand::New(a)) => new_cmd::new(a),
        Command::Tasks(TasksCommand::Import(a)) => import_cmd::import(a),
        Command::Tasks(TasksCommand::Export(a)) => export_cmd::export(a),
        Command::Run(a) => run_cmd::run(a, cli.config.as_deref()),
        Command::Report(a) => report_cmd::report(a),
        Command::Index(args::IndexCommand::Rebuild(a)) => index_cmd::rebuild(a),
        Command::Status(a) => status_cmd::status(a),
        Command::View(a) => view_cmd::view(a),
        Command::SlurmTrial(a) => slurm::node::run(a, cli.config.as_deref()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cleanroom: {e}");
            e.exit_code()
        }
    }
}
