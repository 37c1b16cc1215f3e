//! The sandbox as an ordinary user's Slurm submission sees it. Slurm's
//! commands must run as the user: inside the rootless sandbox's user
//! namespace sbatch says it is uid 0, which Slurm refuses. So the
//! submitting command stays outside, and makes no environment (the nodes
//! do, each in a namespace of its own, docs/rootless.md). It still builds
//! the run's images, through `cleanroom image build` run as a child (which
//! enters the namespace itself), so that run.toml records their digests
//! as a root submission's does.

use std::process::{Command, Stdio};

use cleanroom_env::{Backend, EnvError, EnvSpec, Environment, Needs, PreparedImage, SweepReport, Unmet};

pub struct RootlessSubmitter;

impl Backend for RootlessSubmitter {
    fn name(&self) -> &'static str {
        "sandbox"
    }

    /// What a task needs is the node's to judge.
    fn unmet(&self, _needs: &Needs) -> Vec<Unmet> {
        Vec::new()
    }

    fn prepare_images(
        &self,
        names: &[&str],
        progress: &mut dyn FnMut(&str),
    ) -> Result<Vec<PreparedImage>, EnvError> {
        let exe = std::env::current_exe().map_err(|e| EnvError::io("finding this program", e))?;
        let mut prepared = Vec::new();
        for name in names {
            progress(&format!("building {name} in the user's namespace (cleanroom image build)"));
            let out = Command::new(&exe)
                .args(["image", "build", "--backend", "sandbox", "--image", name])
                .stdin(Stdio::null())
                .output()
                .map_err(|e| EnvError::io("running cleanroom image build", e))?;
            let printed = String::from_utf8_lossy(&out.stdout);
            match printed.split_whitespace().collect::<Vec<_>>()[..] {
                [built, digest, _root] if out.status.success() && built == *name => {
                    prepared.push(PreparedImage { name: built.to_string(), digest: digest.to_string() })
                }
                _ => {
                    return Err(EnvError::Command {
                        program: format!("cleanroom image build --image {name}"),
                        detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
                    })
                }
            }
        }
        Ok(prepared)
    }

    /// Nothing of an environment is ever left here; the nodes sweep their own.
    fn sweep(&self) -> Result<SweepReport, EnvError> {
        Ok(SweepReport::default())
    }

    fn create(&self, _spec: &EnvSpec) -> Result<Box<dyn Environment>, EnvError> {
        Err(EnvError::Phase("a Slurm run's environments are made on its nodes".into()))
    }

    /// The user's jobs run the rootless sandbox on the nodes.
    fn limits_never_enforced(&self) -> Option<String> {
        Some("the nodes run the user's rootless sandbox, which makes no cgroups in a Slurm job (docs/rootless.md)".into())
    }
}
