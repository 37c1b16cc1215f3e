//! Backends by name: what `--backend NAME` selects.

use std::path::Path;

use crate::backend::Backend;
use crate::error::EnvError;
use crate::sandbox::SandboxBackend;
use crate::vm::VmBackend;

/// Every backend this build has, the default first.
pub const BACKENDS: &[&str] = &["sandbox", "vm"];

/// The backend `name`, keeping its state under `home` (cleanroom's home).
pub fn open_backend(name: &str, home: &Path) -> Result<Box<dyn Backend>, EnvError> {
    match name {
        "sandbox" => Ok(Box::new(SandboxBackend::new(home)?)),
        "vm" => Ok(Box::new(VmBackend::new(home)?)),
        other => Err(EnvError::UnknownBackend { name: other.to_string(), available: BACKENDS.join(", ") }),
    }
}
