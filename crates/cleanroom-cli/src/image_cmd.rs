use cleanroom_env::image;

use crate::args::ImageBuildArgs;
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
