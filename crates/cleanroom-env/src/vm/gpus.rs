//! GPUs given to machines by PCI passthrough (VFIO): the devices that the
//! host's configuration names (`vm.gpus`), each bound to the host's
//! vfio-pci driver beforehand (docs/backends.md says how). A machine of a
//! task that needs N GPUs takes N of them for its whole life, and nobody
//! else has them meanwhile; a phase boots with them, the harness's file
//! work between phases without.

use std::path::{Path, PathBuf};

use crate::error::EnvError;

/// Where the kernel shows PCI devices and VFIO's groups.
pub struct HostPaths {
    pub sys: PathBuf,
    pub dev: PathBuf,
}

impl HostPaths {
    pub fn real() -> HostPaths {
        HostPaths { sys: PathBuf::from("/sys"), dev: PathBuf::from("/dev") }
    }
}

/// The devices of `vm.gpus`, each checked usable for passthrough: its PCI
/// address in full form, or why it is not (naming the entry).
pub fn check_all(addresses: &[String], paths: &HostPaths) -> Result<Vec<String>, EnvError> {
    let mut checked: Vec<String> = Vec::new();
    for (n, given) in addresses.iter().enumerate() {
        let address = check(given, paths).map_err(|why| EnvError::Config(format!("vm.gpus[{n}]: {why}")))?;
        if checked.contains(&address) {
            return Err(EnvError::Config(format!("vm.gpus[{n}]: {address} is named twice")));
        }
        checked.push(address);
    }
    Ok(checked)
}

/// `given` in full form (`0000:65:00.0`) if the device is there, bound to
/// vfio-pci, and every device of its IOMMU group is too (QEMU can take a
/// device only with its whole group).
fn check(given: &str, paths: &HostPaths) -> Result<String, String> {
    let address = full_address(given).ok_or_else(|| {
        format!("{given:?} is not a PCI address (DOMAIN:BUS:DEVICE.FUNCTION, as lspci -D prints)")
    })?;
    let device = paths.sys.join("bus/pci/devices").join(&address);
    if !device.exists() {
        return Err(format!("no PCI device {address} on this host"));
    }
    if let Some(other) = unbound(&device) {
        return Err(format!("{address} is {other}: bind it to vfio-pci (docs/backends.md)"));
    }
    let group = std::fs::read_link(device.join("iommu_group"))
        .ok()
        .and_then(|g| g.file_name().map(|n| n.to_string_lossy().into_owned()))
        .ok_or_else(|| {
            format!("{address} is in no IOMMU group: turn the IOMMU on (intel_iommu=on or amd_iommu=on)")
        })?;
    let members = paths.sys.join("kernel/iommu_groups").join(&group).join("devices");
    for member in std::fs::read_dir(&members).into_iter().flatten().flatten() {
        let name = member.file_name().to_string_lossy().into_owned();
        if let Some(other) = unbound(&member.path()).filter(|_| !is_bridge(&member.path())) {
            return Err(format!(
                "{address} shares IOMMU group {group} with {name}, which is {other}: bind every device of the \
                 group to vfio-pci"
            ));
        }
    }
    let node = paths.dev.join("vfio").join(&group);
    if !node.exists() {
        return Err(format!("{} is missing: load the vfio-pci module", node.display()));
    }
    Ok(address)
}

/// `DDDD:BB:DD.F` of `given`, which may leave the domain out.
fn full_address(given: &str) -> Option<String> {
    let full = if given.matches(':').count() == 1 { format!("0000:{given}") } else { given.to_string() };
    let hex = |s: &str, len: usize| s.len() == len && s.chars().all(|c| c.is_ascii_hexdigit());
    let (domain, rest) = full.split_once(':')?;
    let (bus, rest) = rest.split_once(':')?;
    let (device, function) = rest.split_once('.')?;
    let ok = hex(domain, 4) && hex(bus, 2) && hex(device, 2) && function.len() == 1 && hex(function, 1);
    ok.then(|| full.to_ascii_lowercase())
}

/// What the device is bound to, when that is not vfio-pci.
fn unbound(device: &Path) -> Option<String> {
    match std::fs::read_link(device.join("driver")) {
        Ok(driver) => {
            let name = driver.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            (name != "vfio-pci").then(|| format!("bound to {name}"))
        }
        Err(_) => Some("bound to no driver".into()),
    }
}

/// PCI bridges may stay with their own driver (class 0x0604).
fn is_bridge(device: &Path) -> bool {
    std::fs::read_to_string(device.join("class")).is_ok_and(|c| c.trim().starts_with("0x0604"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A host's /sys and /dev with the devices given as (address, driver,
    /// group); for the logic of the checks (the real /sys is read by the
    /// CLI's tests).
    fn host(devices: &[(&str, Option<&str>, &str)]) -> (PathBuf, HostPaths) {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let root = std::env::temp_dir().join(format!("cleanroom-gpus-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let (sys, dev) = (root.join("sys"), root.join("dev"));
        for (address, driver, group) in devices {
            let device = sys.join("bus/pci/devices").join(address);
            std::fs::create_dir_all(&device).unwrap();
            std::fs::write(device.join("class"), "0x030200\n").unwrap();
            if let Some(driver) = driver {
                symlink(format!("../../../bus/pci/drivers/{driver}"), device.join("driver")).unwrap();
            }
            let members = sys.join("kernel/iommu_groups").join(group).join("devices");
            std::fs::create_dir_all(&members).unwrap();
            symlink(format!("../../../kernel/iommu_groups/{group}"), device.join("iommu_group")).unwrap();
            symlink(&device, members.join(address)).unwrap();
            std::fs::create_dir_all(dev.join("vfio")).unwrap();
            std::fs::write(dev.join("vfio").join(group), "").unwrap();
        }
        (root, HostPaths { sys, dev })
    }

    #[test]
    fn a_device_passes_only_bound_to_vfio_with_its_whole_group() {
        let (root, paths) = host(&[
            ("0000:65:00.0", Some("vfio-pci"), "7"),
            ("0000:b3:00.0", Some("nvidia"), "9"),
            ("0000:c1:00.0", Some("vfio-pci"), "12"),
            ("0000:c1:00.1", Some("snd_hda_intel"), "12"),
            ("0000:d0:00.0", None, "14"),
        ]);
        assert_eq!(check_all(&["65:00.0".into()], &paths).unwrap(), ["0000:65:00.0"]);
        let why = |address: &str| check_all(&[address.to_string()], &paths).unwrap_err().to_string();
        assert!(
            why("0000:b3:00.0").contains("vm.gpus[0]: 0000:b3:00.0 is bound to nvidia"),
            "{}",
            why("b3:00.0")
        );
        assert!(why("0000:c1:00.0").contains("with 0000:c1:00.1, which is bound to snd_hda_intel"));
        assert!(why("0000:d0:00.0").contains("bound to no driver"));
        assert!(why("0000:99:00.0").contains("no PCI device 0000:99:00.0"));
        assert!(why("gpu0").contains("not a PCI address"));
        let twice = check_all(&["65:00.0".into(), "0000:65:00.0".into()], &paths).unwrap_err().to_string();
        assert!(twice.contains("vm.gpus[1]: 0000:65:00.0 is named twice"), "{twice}");
        std::fs::remove_file(paths.dev.join("vfio/7")).unwrap();
        assert!(why("0000:65:00.0").contains("load the vfio-pci module"));
        std::fs::remove_dir_all(root).unwrap();
    }
}
