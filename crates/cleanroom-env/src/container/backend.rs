//! The `container` backend: every environment is a container of a local
//! engine (environment.rs), Podman's or Docker's, made from cleanroom's base
//! image imported into the engine as `cleanroom/<name>:<digest>`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use crate::backend::{
    Backend, EnvSpec, Environment, LimitState, Limits, Needs, PreparedImage, SweepReport, Unmet,
};
use crate::container::build::{with_tar_of, Builds};
use crate::container::engine::Engine;
use crate::container::environment::ContainerEnv;
use crate::container::profile;
use crate::error::EnvError;
use crate::image;
use crate::sandbox::sweep::{owner_in_id_alive, Owner};

/// The label that names the environment a container is, `<pid>-<start
/// time>-<n>` of the run that made it (the sweep reads it back).
const ENV_LABEL: &str = "cleanroom.env";

/// Where the host's catatonit is in each container.
const WAITING: &str = "/run/cleanroom-init";

pub struct ContainerBackend {
    engine: Arc<Engine>,
    /// Each prepared image's reference in the engine, by name.
    images: Mutex<HashMap<String, String>>,
    /// What a container runs while no command of a phase does, as its PID
    /// 1: the host's catatonit (static), mounted in read-only and pausing,
    /// never a program of the image's, which the agent may have replaced
    /// (it would run before the phase's seals are made).
    catatonit: PathBuf,
    /// The seccomp profile, as the engine takes it (profile.rs).
    security_opt: String,
    /// The images tasks' Dockerfiles built (build.rs).
    builds: Builds,
}

impl ContainerBackend {
    /// The backend of the engine `DOCKER_HOST` names, or of the first
    /// default socket there is.
    pub fn new(home: &Path) -> Result<ContainerBackend, EnvError> {
        ContainerBackend::with_engine(Engine::locate()?, home)
    }

    /// The backend of `engine`, keeping its state under `home`
    /// (cleanroom's home).
    pub fn with_engine(engine: Engine, home: &Path) -> Result<ContainerBackend, EnvError> {
        // The harness makes a phase's network and seals in the container's
        // namespaces from this host, as root.
        if crate::privilege::current() != crate::privilege::Privilege::HostRoot {
            return Err(EnvError::Phase(
                "the container backend needs root (it works in the containers' namespaces)".into(),
            ));
        }
        for tool in ["slirp4netns", "ip", "tar"] {
            if crate::sandbox::host_tool(tool).is_none() {
                return Err(EnvError::Phase(format!(
                    "`{tool}` not found: the container backend needs slirp4netns, iproute2 and tar (see the README)"
                )));
            }
        }
        let version = engine.version()?;
        let security_opt = profile::security_opt(home, version.kind == "podman")?;
        let catatonit = ["/usr/bin/catatonit", "/usr/libexec/podman/catatonit"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.is_file())
            .ok_or_else(|| {
                EnvError::Config(
                    "catatonit not found (/usr/bin/catatonit): the container backend mounts it into each \
                     container as what runs between phases; install it (apt-get install catatonit)"
                        .into(),
                )
            })?;
        Ok(ContainerBackend {
            engine: Arc::new(engine),
            images: Mutex::default(),
            catatonit,
            security_opt,
            builds: Builds::default(),
        })
    }

    fn image(&self, name: &str) -> Result<String, EnvError> {
        let images = self.images.lock().unwrap_or_else(|p| p.into_inner());
        images.get(name).cloned().ok_or_else(|| EnvError::ImageNotPrepared(name.to_string()))
    }

    /// The base image's root file system, as a tar stream into the engine.
    fn import(&self, root: &Path, reference: &str) -> Result<(), EnvError> {
        with_tar_of(root, |tar| self.engine.import_image(tar, reference).map(drop))
    }
}

impl Backend for ContainerBackend {
    fn name(&self) -> &'static str {
        "container"
    }

    fn unmet(&self, needs: &Needs) -> Vec<Unmet> {
        let mut unmet = Vec::new();
        if needs.gpus > 0 {
            unmet.push(Unmet {
                need: "gpus",
                why: "the container backend gives no GPUs yet (--backend sandbox or vm)".into(),
            });
        }
        if needs.machine {
            unmet.push(Unmet {
                need: "machine",
                why:
                    "a container shares the host's kernel: the task needs a machine of its own (--backend vm)"
                        .into(),
            });
        }
        unmet
    }

    fn prepare_images(
        &self,
        names: &[&str],
        progress: &mut dyn FnMut(&str),
    ) -> Result<Vec<PreparedImage>, EnvError> {
        let mut prepared = Vec::new();
        for name in names {
            let img = image::ensure(name, image::Flavour::Sandbox, None, progress)?;
            let digest = img.digest.trim_start_matches("sha256:");
            let reference = format!("cleanroom/{name}:{}", &digest[..digest.len().min(16)]);
            if self.engine.image_id(&reference)?.is_none() {
                progress(&format!("importing image {name} into the container engine as {reference}"));
                self.import(&img.root, &reference)?;
            }
            // The name a task's Dockerfile says FROM.
            self.engine.tag_image(&reference, &format!("cleanroom/{name}:latest"))?;
            let mut images = self.images.lock().unwrap_or_else(|p| p.into_inner());
            images.insert(name.to_string(), reference);
            prepared.push(PreparedImage { name: name.to_string(), digest: img.digest });
        }
        Ok(prepared)
    }

    fn sweep(&self) -> Result<SweepReport, EnvError> {
        let mut report = SweepReport::default();
        for (container, labels) in self.engine.containers_labelled(ENV_LABEL)? {
            let id = labels[ENV_LABEL].as_str().unwrap_or_default().to_string();
            if !owner_in_id_alive(&id) {
                self.engine.remove(&container)?;
                report.environments.push(id);
            }
        }
        Ok(report)
    }

    fn create(&self, spec: &EnvSpec) -> Result<Box<dyn Environment>, EnvError> {
        if spec.gpus > 0 {
            return Err(EnvError::Phase("the container backend gives no GPUs".into()));
        }
        let (image, image_env) = match &spec.build {
            Some(context) => {
                self.image(&spec.image)?;
                let built = self.builds.image(&self.engine, context)?;
                (built.reference, built.env)
            }
            None => (self.image(&spec.image)?, Vec::new()),
        };
        let id = Owner::current().new_id();
        let memory = spec.memory_mb * 1024 * 1024;
        let config = json!({
            "Image": image,
            "Entrypoint": [WAITING, "-P"],
            "Cmd": [],
            "Labels": { ENV_LABEL: id },
            "Hostname": "cleanroom",
            "HostConfig": {
                "NetworkMode": "none",
                "Binds": [format!("{}:{WAITING}:ro", self.catatonit.display())],
                "Memory": memory,
                "MemorySwap": memory,
                "PidsLimit": spec.pids_max,
                "NanoCpus": u64::from(spec.cpus) * 1_000_000_000,
                "SecurityOpt": [self.security_opt],
                // The capabilities both engines give but for those Docker
                // adds to Podman's: no device nodes, raw sockets or audit.
                "CapDrop": ["MKNOD", "NET_RAW", "AUDIT_WRITE"],
                // PID 1's output goes nowhere: a log would be a file of the
                // host's that the agent could fill through /proc/1/fd.
                "LogConfig": { "Type": "none" },
                // Podman on cgroup v1 needs them said.
                "Ulimits": [
                    { "Name": "nofile", "Soft": 4096, "Hard": 4096 },
                    { "Name": "nproc", "Soft": 4096, "Hard": 4096 },
                ],
            },
        });
        // Named by the engine: its helpers (Podman's conmon of each exec,
        // which it keeps five minutes after the exec ends) name the
        // container, and no process of the host's may name the environment
        // once it is destroyed.
        let container = self.engine.create_container(None, config)?;
        // From here on, dropping the environment removes the container.
        let mut env = ContainerEnv::new(id, self.engine.clone(), container.clone(), image_env, unlimited());
        let held = self.engine.inspect(&container)?;
        let limits = limits_held(&held["HostConfig"]);
        if !spec.allow_unlimited {
            for (limit, state) in [("memory", limits.memory), ("pids", limits.pids)] {
                if state == LimitState::Unenforced {
                    return Err(EnvError::LimitUnavailable {
                        limit,
                        why: format!("the container engine at {} dropped it", self.engine.socket().display()),
                    });
                }
            }
        }
        env.set_limits(limits);
        Ok(Box::new(env))
    }
}

fn unlimited() -> Limits {
    Limits { memory: LimitState::Unenforced, pids: LimitState::Unenforced, disk: LimitState::Unenforced }
}

/// The limits the engine kept of those asked for. The disk is the engine's
/// storage, shared with every container: no size is asked of it (a size
/// needs a storage driver with quotas), so the disk limit is unenforced.
fn limits_held(host_config: &Value) -> Limits {
    let held = |key: &str| {
        if host_config[key].as_i64().is_some_and(|v| v > 0) {
            LimitState::Enforced
        } else {
            LimitState::Unenforced
        }
    };
    Limits { memory: held("Memory"), pids: held("PidsLimit"), disk: LimitState::Unenforced }
}
