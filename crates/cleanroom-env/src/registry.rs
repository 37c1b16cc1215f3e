//! Backends by name: what `--backend NAME` selects.

use std::path::Path;

use crate::backend::Backend;
use crate::container::ContainerBackend;
use crate::error::EnvError;
use crate::sandbox::{GpuHost, SandboxBackend};
use crate::ssh::{SshBackend, SshConfig};
use crate::vm::VmBackend;

/// Every backend this build has, the default first.
pub const BACKENDS: &[&str] = &["sandbox", "vm", "ssh", "container"];

/// What the host's configuration gives the backends.
#[derive(Debug, Clone, Default)]
pub struct HostConfig {
    /// PCI addresses of GPUs bound to vfio-pci, for the vm backend.
    pub vm_gpus: Vec<String>,
    /// The ssh backend's hosts and how to reach them.
    pub ssh: SshConfig,
}

/// The backend `name`, keeping its state under `home` (cleanroom's home).
pub fn open_backend(name: &str, home: &Path, host: &HostConfig) -> Result<Box<dyn Backend>, EnvError> {
    match name {
        "sandbox" => Ok(Box::new(SandboxBackend::new(home)?.with_gpus(GpuHost::discover()))),
        "vm" => Ok(Box::new(VmBackend::new(home)?.with_gpus(&host.vm_gpus)?)),
        "ssh" => Ok(Box::new(SshBackend::new(home, &host.ssh)?)),
        "container" => Ok(Box::new(ContainerBackend::new(home)?)),
        other => Err(EnvError::UnknownBackend { name: other.to_string(), available: BACKENDS.join(", ") }),
    }
}
