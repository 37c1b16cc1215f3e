use cleanroom_env::image;

use crate::args::ImageBuildArgs;
use crate::error::CliError;

pub fn build(args: ImageBuildArgs) -> Result<(), CliError> {
    let img = image::build(&args.image, args.mirror.as_deref(), args.force, &mut |line| {
        eprintln!("image: {line}")
    })?;
    println!("{} {} {}", img.name, img.digest, img.root.display());
    Ok(())
}
