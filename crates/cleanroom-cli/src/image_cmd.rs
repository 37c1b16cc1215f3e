use std::path::Path;
use std::process::Stdio;

use cleanroom_env::{image, EnvError};

use crate::args::{ImageBuildArgs, ImageExportArgs, ImageImportArgs};
use crate::error::CliError;

pub fn build(args: ImageBuildArgs) -> Result<(), CliError> {
    let flavour = image::Flavour::of_backend(&args.backend)?;
    if flavour == image::Flavour::Sandbox {
        crate::prepare::enter_user_namespace_if_unprivileged()?;
    }
    let img = image::build(&args.image, flavour, args.mirror.as_deref(), args.force, &mut |line| {
        eprintln!("image: {line}")
    })?;
    println!("{} {} {}", img.name, img.digest, img.root.display());
    Ok(())
}

pub fn export(args: ImageExportArgs) -> Result<(), CliError> {
    crate::prepare::enter_user_namespace_if_unprivileged()?;
    let out = match &args.output {
        Some(path) => Stdio::from(
            std::fs::File::create(path).map_err(|e| CliError::Input(format!("{}: {e}", path.display())))?,
        ),
        None => Stdio::inherit(),
    };
    image::export(&args.image, out)?;
    Ok(())
}

pub fn import(args: ImageImportArgs) -> Result<(), CliError> {
    // The command runs again there from its start, standard input too.
    crate::prepare::enter_user_namespace_if_unprivileged()?;
    let from = match args.archive.as_deref().filter(|p| *p != Path::new("-")) {
        Some(path) => Stdio::from(
            std::fs::File::open(path).map_err(|e| CliError::Input(format!("{}: {e}", path.display())))?,
        ),
        None => Stdio::inherit(),
    };
    let named = args.archive.as_deref().map_or("standard input".into(), |p| p.display().to_string());
    let img = image::import(from, &mut |line| eprintln!("image: {line}")).map_err(|e| match e {
        // What the archive holds is the user's input.
        EnvError::Image(why) => CliError::Input(format!("{named}: {why}")),
        EnvError::Command { program, detail } => CliError::Input(format!("{named}: {program}: {detail}")),
        other => other.into(),
    })?;
    println!("{} {} {}", img.name, img.digest, img.root.display());
    Ok(())
}
