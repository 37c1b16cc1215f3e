use cleanroom_env::{image, EnvError};

use crate::args::ImageBuildArgs;
use crate::error::{input, internal, CliError};

/// Unknown image names are bad input; everything else is ours.
pub fn image_error(e: EnvError) -> CliError {
    match e {
        EnvError::UnknownImage { .. } => input(e),
        other => internal(other),
    }
}

pub fn build(args: ImageBuildArgs) -> Result<(), CliError> {
    let img =
        image::build(&args.image, args.mirror.as_deref(), args.force, &mut |line| eprintln!("image: {line}"))
            .map_err(image_error)?;
    println!("{} {} {}", img.name, img.digest, img.root.display());
    Ok(())
}
