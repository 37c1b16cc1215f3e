//! What the configuration's `[ssh]` section says: how to reach hosts, and
//! the pools they come from (docs/backends.md).
//!
//! ```toml
//! [ssh]
//! ssh_config = "~/.ssh/config-lab"   # optional: `ssh -F`; else the user's own
//! phase_end = "reboot"               # or "kill" (weaker, faster)
//!
//! [[ssh.pools]]
//! name = "lab"
//! reset = "lab-reset {name}"        # run before a host is handed to a trial
//! concurrency = 2
//! [[ssh.pools.hosts]]
//! name = "gpu-1"
//! address = "root@10.1.2.3"
//! gpus = 1
//!
//! [[ssh.pools]]
//! name = "cloud"
//! create = "make-vm"                # prints address=..., name=..., gpus=...
//! destroy = "drop-vm {name}"
//! gpus = 1
//! ```

use serde::Deserialize;

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SshConfig {
    /// An OpenSSH client configuration to use instead of the user's
    /// (`ssh -F FILE`); the user's own `~/.ssh/config`, known_hosts and
    /// agent otherwise.
    #[serde(default)]
    pub ssh_config: Option<String>,
    /// Options added to every ssh command, as `Key=Value` (`ssh -o`).
    #[serde(default)]
    pub options: Vec<String>,
    #[serde(default)]
    pub phase_end: PhaseEnd,
    #[serde(default)]
    pub pools: Vec<PoolConfig>,
    /// The file that set this section, for errors about it.
    #[serde(skip)]
    pub file: Option<String>,
}

/// How a phase's processes end on a host where the agent was root.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseEnd {
    /// Every command's cgroup killed, then the host rebooted by the kernel
    /// at once (no shutdown of its services, nothing of the agent's runs
    /// on the way down) before anything else touches it.
    #[default]
    Reboot,
    /// Every command's cgroup killed: a process that left its cgroup (a
    /// unit it asked systemd for, a job for cron) survives.
    Kill,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolConfig {
    pub name: String,
    /// Trials at once on this pool (default: as many as its hosts; one for
    /// a provisioner).
    #[serde(default)]
    pub concurrency: Option<usize>,
    /// Makes a host fresh again before a trial takes it: a shell command,
    /// `{name}` and `{address}` replaced (quoted). Without one, each host
    /// runs one trial per run.
    #[serde(default)]
    pub reset: Option<String>,
    #[serde(default)]
    pub hosts: Vec<HostConfig>,
    /// A provisioner instead of hosts: `create` makes a fresh machine and
    /// prints `key=value` lines (address, and optionally name, port, user,
    /// key, gpus); `destroy` removes it (`{name}`, `{address}` replaced).
    #[serde(default)]
    pub create: Option<String>,
    #[serde(default)]
    pub destroy: Option<String>,
    /// GPUs of every machine the provisioner makes.
    #[serde(default)]
    pub gpus: u32,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    pub name: String,
    /// What `ssh` is given: a host name, an alias of the SSH configuration,
    /// or `user@host`.
    pub address: String,
    #[serde(default)]
    pub port: Option<u16>,
    #[serde(default)]
    pub user: Option<String>,
    /// A private key file (`ssh -i`).
    #[serde(default)]
    pub key: Option<String>,
    #[serde(default)]
    pub gpus: u32,
    /// Free-form, recorded with each trial the host runs.
    #[serde(default)]
    pub labels: Vec<String>,
}

impl SshConfig {
    /// Errors name the key: `ssh.pools[1].create: ...`.
    pub fn check(&self) -> Result<(), String> {
        for (i, pool) in self.pools.iter().enumerate() {
            let at = |key: &str| format!("ssh.pools[{i}].{key}");
            if pool.name.is_empty() {
                return Err(format!("{}: a pool needs a name", at("name")));
            }
            match (&pool.create, &pool.destroy, pool.hosts.is_empty()) {
                (Some(_), Some(_), true) | (None, None, false) => {}
                (Some(_), None, _) => {
                    return Err(format!("{}: a provisioner needs destroy too", at("destroy")))
                }
                (None, Some(_), _) => {
                    return Err(format!("{}: a provisioner needs create too", at("create")))
                }
                (Some(_), Some(_), false) => {
                    return Err(format!("{}: a pool has hosts or a provisioner, not both", at("hosts")))
                }
                (None, None, true) => {
                    return Err(format!("{}: a pool needs hosts, or create and destroy", at("hosts")))
                }
            }
            if pool.concurrency == Some(0) {
                return Err(format!("{}: at least 1", at("concurrency")));
            }
            for (j, host) in pool.hosts.iter().enumerate() {
                if host.name.is_empty() || host.address.is_empty() {
                    return Err(format!("ssh.pools[{i}].hosts[{j}]: a host needs a name and an address"));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> SshConfig {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn pools_are_hosts_or_a_provisioner() {
        let hosts = parse(
            "[[pools]]\nname = \"lab\"\nreset = \"r {name}\"\n[[pools.hosts]]\nname = \"a\"\naddress = \"root@a\"\ngpus = 2\n",
        );
        assert_eq!(hosts.check(), Ok(()));
        assert_eq!(hosts.pools[0].hosts[0].gpus, 2);
        assert_eq!(hosts.phase_end, PhaseEnd::Reboot);
        let cloud = parse(
            "phase_end = \"kill\"\n[[pools]]\nname = \"c\"\ncreate = \"mk\"\ndestroy = \"rm {name}\"\n",
        );
        assert_eq!(cloud.check(), Ok(()));
        assert_eq!(cloud.phase_end, PhaseEnd::Kill);
        let half = parse("[[pools]]\nname = \"c\"\ncreate = \"mk\"\n");
        assert!(half.check().unwrap_err().starts_with("ssh.pools[0].destroy"));
        let empty = parse("[[pools]]\nname = \"c\"\n");
        assert!(empty.check().unwrap_err().starts_with("ssh.pools[0].hosts"));
        assert!(toml::from_str::<SshConfig>("phase_end = \"nap\"").is_err());
    }
}
