//! NVIDIA GPUs in sandbox environments, given the way NVIDIA's container
//! toolkit gives them to containers: an environment that holds GPUs sees
//! their device nodes and the driver's control nodes, and nothing else of
//! the host's /dev; with `environment.gpu_driver = "host"` it also sees the
//! host's driver user space (its libraries and tools), each file bound
//! read-only at its own name in the environment's library and program
//! directories, so that the dynamic loader finds it without a cache. The
//! kernel module is the host's either way: a driver the agent installs
//! must be of its version (`/proc/driver/nvidia/version` says which).
//!
//! What the host has is read once, when the backend opens. Two cleanroom
//! processes on one host do not know each other's GPUs.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::backend::{GpuDriver, HostMount, Needs, Unmet};
use crate::sandbox::host_tool;

/// The driver's libraries, by the name before `.so` (the toolkit's
/// compute and utility sets).
const LIBRARIES: &[&str] = &[
    "libcuda",
    "libcudadebugger",
    "libnvidia-allocator",
    "libnvidia-cfg",
    "libnvidia-gpucomp",
    "libnvidia-ml",
    "libnvidia-nvvm",
    "libnvidia-opencl",
    "libnvidia-pkcs11",
    "libnvidia-pkcs11-openssl3",
    "libnvidia-ptxjitcompiler",
];

/// The driver's programs.
const PROGRAMS: &[&str] = &[
    "nvidia-smi",
    "nvidia-debugdump",
    "nvidia-persistenced",
    "nvidia-cuda-mps-control",
    "nvidia-cuda-mps-server",
];

/// Nodes every process that uses a GPU opens, whichever GPU.
const CONTROL_NODES: &[&str] = &["nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset"];

/// One GPU of the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gpu {
    /// N of `/dev/nvidiaN`, its name inside too.
    pub index: u32,
    /// The device node on the host.
    pub node: PathBuf,
    /// What the driver calls it (`nvidia-smi`), when it says.
    pub name: Option<String>,
}

/// What a host offers GPU environments.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GpuHost {
    pub gpus: Vec<Gpu>,
    /// Control nodes: (name under /dev inside, node on the host).
    pub control: Vec<(String, PathBuf)>,
    /// Driver libraries: (name inside, file on the host).
    pub libraries: Vec<(String, PathBuf)>,
    /// Driver programs: (name inside, file on the host).
    pub programs: Vec<(String, PathBuf)>,
    /// The driver's version, when it says.
    pub driver: Option<String>,
}

impl GpuHost {
    /// What this host has: nothing where no `/dev/nvidiaN` exists.
    pub fn discover() -> GpuHost {
        let mut gpus = device_nodes(Path::new("/dev"));
        if gpus.is_empty() {
            return GpuHost::default();
        }
        // The UVM nodes (CUDA needs them) appear once something loads the
        // module; the toolkit makes them this way too.
        if !Path::new("/dev/nvidia-uvm").exists() {
            if let Some(modprobe) = host_tool("nvidia-modprobe") {
                let _ = Command::new(modprobe).args(["-u", "-c=0"]).env_clear().output();
            }
        }
        let control = CONTROL_NODES
            .iter()
            .map(|n| (n.to_string(), Path::new("/dev").join(n)))
            .filter(|(_, node)| is_char_device(node))
            .collect();
        let libraries = host_tool("ldconfig")
            .and_then(|ldconfig| Command::new(ldconfig).arg("-p").env_clear().output().ok())
            .map(|out| driver_libraries(&String::from_utf8_lossy(&out.stdout)))
            .unwrap_or_default();
        let programs: Vec<(String, PathBuf)> =
            PROGRAMS.iter().filter_map(|p| host_tool(p).map(|path| (p.to_string(), path))).collect();
        let mut driver = None;
        if let Some((_, smi)) = programs.iter().find(|(name, _)| name == "nvidia-smi") {
            let out = Command::new(smi)
                .args(["--query-gpu=index,name,driver_version", "--format=csv,noheader"])
                .env_clear()
                .output();
            if let Ok(out) = out {
                driver = name_gpus(&mut gpus, &String::from_utf8_lossy(&out.stdout));
            }
        }
        GpuHost { gpus, control, libraries, programs, driver }
    }

    /// Why `needs` cannot be met here, if it cannot.
    pub fn unmet(&self, needs: &Needs) -> Option<Unmet> {
        if needs.gpus == 0 {
            return None;
        }
        let why = if self.gpus.is_empty() {
            "this host has no NVIDIA GPU (no /dev/nvidiaN): run the task where one is, or on hosts of the ssh \
             backend that declare `gpus`"
                .to_string()
        } else if needs.gpus as usize > self.gpus.len() {
            format!("the task needs {} GPUs, and this host has {}", needs.gpus, self.gpus.len())
        } else if needs.gpu_driver == GpuDriver::Host && !self.has_driver() {
            "the task wants the host's NVIDIA driver (`environment.gpu_driver` is \"host\"), and ldconfig lists \
             no libcuda.so.1 and libnvidia-ml.so.1 here: install the driver's libraries, or set \
             `environment.gpu_driver = \"agent\"` for the agent to install them"
                .to_string()
        } else {
            return None;
        };
        Some(Unmet { need: "gpus", why })
    }

    fn has_driver(&self) -> bool {
        ["libcuda.so.1", "libnvidia-ml.so.1"].iter().all(|n| self.libraries.iter().any(|(name, _)| name == n))
    }

    /// The GPU with index `index`.
    pub fn gpu(&self, index: u32) -> Option<&Gpu> {
        self.gpus.iter().find(|g| g.index == index)
    }
}

/// What a phase of an environment holding GPUs binds in.
#[derive(Debug, Default)]
pub(crate) struct GpuBinds {
    /// Device nodes, at their path inside (under /dev, which bubblewrap makes).
    pub devices: Vec<HostMount>,
    /// Driver files, read-only, at their path inside.
    pub files: Vec<HostMount>,
}

/// The binds for `held` (indices) of `host`, with the driver's files when
/// `driver` is the host's; `lib_dir` is the environment's own directory for
/// libraries (`/usr/lib/x86_64-linux-gnu` on Debian).
pub(crate) fn binds(host: &GpuHost, held: &[u32], driver: GpuDriver, lib_dir: &str) -> GpuBinds {
    let mut binds = GpuBinds::default();
    for (name, node) in &host.control {
        binds.devices.push(HostMount { host: node.clone(), path: format!("/dev/{name}") });
    }
    for gpu in held.iter().filter_map(|i| host.gpu(*i)) {
        binds.devices.push(HostMount { host: gpu.node.clone(), path: format!("/dev/nvidia{}", gpu.index) });
    }
    if driver == GpuDriver::Host {
        for (name, file) in &host.libraries {
            binds.files.push(HostMount { host: file.clone(), path: format!("{lib_dir}/{name}") });
        }
        for (name, file) in &host.programs {
            binds.files.push(HostMount { host: file.clone(), path: format!("/usr/bin/{name}") });
        }
    }
    binds
}

/// `/dev/nvidiaN` nodes under `dev`, by index.
fn device_nodes(dev: &Path) -> Vec<Gpu> {
    let mut gpus: Vec<Gpu> = std::fs::read_dir(dev)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let index = name.strip_prefix("nvidia")?.parse::<u32>().ok()?;
            is_char_device(&entry.path()).then(|| Gpu { index, node: entry.path(), name: None })
        })
        .collect();
    gpus.sort_by_key(|g| g.index);
    gpus
}

fn is_char_device(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_char_device())
}

/// The driver's 64-bit libraries in `ldconfig -p`'s listing, each name once
/// with the real file it leads to. Lines look like
/// `\tlibcuda.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcuda.so.1`.
fn driver_libraries(listing: &str) -> Vec<(String, PathBuf)> {
    let mut found: Vec<(String, PathBuf)> = Vec::new();
    for line in listing.lines() {
        let Some((left, path)) = line.split_once(" => ") else { continue };
        let Some((name, flags)) = left.trim().split_once(' ') else { continue };
        if !flags.contains("x86-64") || found.iter().any(|(n, _)| n == name) {
            continue;
        }
        let base = name.split(".so").next().unwrap_or_default();
        if !name.contains(".so") || !LIBRARIES.contains(&base) {
            continue;
        }
        let file = std::fs::canonicalize(path.trim()).unwrap_or_else(|_| PathBuf::from(path.trim()));
        found.push((name.to_string(), file));
    }
    found
}

/// Names `gpus` from `nvidia-smi --query-gpu=index,name,driver_version
/// --format=csv,noheader`; returns the driver's version.
fn name_gpus(gpus: &mut [Gpu], csv: &str) -> Option<String> {
    let mut driver = None;
    for line in csv.lines() {
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let [index, name, version] = fields[..] else { continue };
        if let Some(gpu) = index.parse::<u32>().ok().and_then(|i| gpus.iter_mut().find(|g| g.index == i)) {
            gpu.name = Some(name.to_string());
        }
        driver.get_or_insert_with(|| version.to_string());
    }
    driver
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_drivers_64_bit_libraries_are_taken_from_ldconfig() {
        let listing = "1234 libs found in cache `/etc/ld.so.cache'\n\
            \tlibnvidia-ml.so.1 (libc6,x86-64) => /nonexistent/libnvidia-ml.so.1\n\
            \tlibnvidia-ml.so.1 (libc6) => /nonexistent/i386/libnvidia-ml.so.1\n\
            \tlibnvidia-mlx.so.2 (libc6,x86-64) => /nonexistent/libnvidia-mlx.so.2\n\
            \tlibcuda.so.1 (libc6,x86-64) => /nonexistent/libcuda.so.1\n\
            \tlibcuda.so (libc6,x86-64) => /nonexistent/libcuda.so\n\
            \tlibcudart.so.12 (libc6,x86-64) => /nonexistent/libcudart.so.12\n\
            \tlibc.so.6 (libc6,x86-64, OS ABI: Linux 3.2.0) => /lib/x86_64-linux-gnu/libc.so.6\n\
            Cache generated by: ldconfig (GNU libc) stable release version 2.36\n";
        let found = driver_libraries(listing);
        let names: Vec<&str> = found.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["libnvidia-ml.so.1", "libcuda.so.1", "libcuda.so"]);
        // The CUDA runtime is the application's, not the driver's.
        assert!(!names.contains(&"libcudart.so.12"));
    }

    #[test]
    fn gpus_are_named_and_the_driver_read_from_nvidia_smi() {
        let mut gpus = vec![
            Gpu { index: 0, node: "/dev/nvidia0".into(), name: None },
            Gpu { index: 1, node: "/dev/nvidia1".into(), name: None },
        ];
        let driver = name_gpus(&mut gpus, "0, NVIDIA H200, 570.124.06\n1, NVIDIA H200, 570.124.06\n");
        assert_eq!(driver.as_deref(), Some("570.124.06"));
        assert_eq!(gpus[1].name.as_deref(), Some("NVIDIA H200"));
        assert_eq!(name_gpus(&mut gpus, "NVIDIA-SMI has failed\n"), None);
    }

    #[test]
    fn a_gpu_node_is_a_character_device_named_by_its_index() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("nvidia0"), "").unwrap();
        std::os::unix::fs::symlink("/dev/null", dir.path().join("nvidia3")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("nvidia1")).unwrap();
        std::os::unix::fs::symlink("/dev/null", dir.path().join("nvidiactl")).unwrap();
        let found: Vec<u32> = device_nodes(dir.path()).iter().map(|g| g.index).collect();
        // A regular file is no node; links to nodes stand for them here.
        assert_eq!(found, [1, 3]);
    }

    fn host_with(gpus: u32, driver: bool) -> GpuHost {
        GpuHost {
            gpus: (0..gpus)
                .map(|index| Gpu { index, node: format!("/dev/nvidia{index}").into(), name: None })
                .collect(),
            control: vec![("nvidiactl".into(), "/dev/nvidiactl".into())],
            libraries: if driver {
                vec![
                    ("libcuda.so.1".into(), "/usr/lib/x86_64-linux-gnu/libcuda.so.570.124.06".into()),
                    (
                        "libnvidia-ml.so.1".into(),
                        "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.570.124.06".into(),
                    ),
                ]
            } else {
                Vec::new()
            },
            programs: vec![("nvidia-smi".into(), "/usr/bin/nvidia-smi".into())],
            driver: None,
        }
    }

    #[test]
    fn a_task_is_unmet_with_a_reason_that_says_what_to_change() {
        let one = Needs::new(1, false, false);
        let why = |host: &GpuHost, needs: &Needs| host.unmet(needs).map(|u| u.why);
        assert!(why(&GpuHost::default(), &one).unwrap().contains("no NVIDIA GPU"));
        assert!(why(&host_with(1, true), &Needs::new(2, false, false)).unwrap().contains("needs 2 GPUs"));
        let driverless = host_with(1, false);
        assert!(why(&driverless, &one).unwrap().contains("environment.gpu_driver = \"agent\""));
        assert_eq!(why(&driverless, &one.clone().with_gpu_driver(GpuDriver::Agent)), None);
        assert_eq!(why(&host_with(1, true), &one), None);
        assert_eq!(why(&GpuHost::default(), &Needs::new(0, false, false)), None);
    }

    #[test]
    fn a_phase_gets_the_held_gpus_nodes_and_the_driver_only_when_asked() {
        let host = host_with(2, true);
        let with = binds(&host, &[1], GpuDriver::Host, "/usr/lib/x86_64-linux-gnu");
        let devices: Vec<&str> = with.devices.iter().map(|m| m.path.as_str()).collect();
        assert_eq!(devices, ["/dev/nvidiactl", "/dev/nvidia1"]);
        let files: Vec<&str> = with.files.iter().map(|m| m.path.as_str()).collect();
        assert_eq!(
            files,
            [
                "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
                "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
                "/usr/bin/nvidia-smi"
            ]
        );
        let without = binds(&host, &[1], GpuDriver::Agent, "/usr/lib/x86_64-linux-gnu");
        assert_eq!(without.devices.len(), 2);
        assert!(without.files.is_empty());
    }
}
