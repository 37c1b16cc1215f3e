//! Where a trial's host comes from: the configuration's pools, each a list
//! of hosts (made fresh by the pool's reset command before every trial) or
//! a provisioner (a machine created for the trial and destroyed after),
//! each with its own limit of trials at once. A host is never handed out
//! twice without a reset: a pool without one runs each host once. A lock
//! file per host, named by where ssh reaches it and kept where every
//! cleanroom process of this machine looks whatever its home
//! ([`machine_locks`]), keeps two processes that lease it apart.

use std::collections::VecDeque;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::error::EnvError;
use crate::image::Locked;
use crate::ssh::config::{HostConfig, PoolConfig, SshConfig};
use crate::ssh::transport::{quote, Target};

/// How often a host that another cleanroom process holds is tried again.
const ELSEWHERE_POLL: Duration = Duration::from_secs(1);

/// One host a trial holds, and how it got it.
pub struct Lease {
    pub target: Target,
    pub gpus: u32,
    pub labels: Vec<String>,
    pool: Arc<Pool>,
    host: Option<HostConfig>,
    /// Held until the lease ends (after its host is back in the pool).
    _lock: Option<File>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.pool.give_back(self.host.take(), &self.target);
    }
}

struct Pool {
    config: PoolConfig,
    /// Where the hosts' locks are (pool::lock_path).
    locks: PathBuf,
    ssh: SshConfig,
    state: Mutex<PoolState>,
    freed: Condvar,
}

#[derive(Default)]
struct PoolState {
    /// Hosts no trial holds; a host that ran a trial comes back only
    /// where the pool can reset it.
    free: VecDeque<HostConfig>,
    in_use: usize,
}

pub struct Pools {
    pools: Vec<Arc<Pool>>,
}

/// Where the hosts' locks are for every cleanroom process of this machine
/// and user, whatever its home: a host is shared by the machine's runs,
/// not by one home's (the CLI's runs and a second home's tests leased the
/// same host at once). Under /run, cleared at boot like the locks.
pub fn machine_locks() -> PathBuf {
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    match std::env::var_os("XDG_RUNTIME_DIR") {
        _ if uid == 0 => PathBuf::from("/run/cleanroom/ssh-hosts"),
        Some(dir) if !dir.is_empty() => PathBuf::from(dir).join("cleanroom/ssh-hosts"),
        _ => std::env::temp_dir().join(format!("cleanroom-{uid}/ssh-hosts")),
    }
}

impl Pools {
    /// The pools of `ssh`, their hosts' locks under `locks`.
    pub fn new(ssh: &SshConfig, locks: &Path) -> Pools {
        let pools = ssh
            .pools
            .iter()
            .map(|config| {
                Arc::new(Pool {
                    config: config.clone(),
                    locks: locks.to_path_buf(),
                    ssh: ssh.clone(),
                    state: Mutex::new(PoolState {
                        free: config.hosts.iter().cloned().collect(),
                        ..Default::default()
                    }),
                    freed: Condvar::new(),
                })
            })
            .collect();
        Pools { pools }
    }

    /// The most GPUs any machine of any pool has.
    pub fn most_gpus(&self) -> u32 {
        self.pools
            .iter()
            .map(|p| p.config.hosts.iter().map(|h| h.gpus).max().unwrap_or(p.config.gpus))
            .max()
            .unwrap_or(0)
    }

    /// A fresh host with at least `gpus` GPUs, waiting for one to be free.
    pub fn take(&self, gpus: u32) -> Result<Lease, EnvError> {
        let fits: Vec<&Arc<Pool>> = self.pools.iter().filter(|p| p.can_hold(gpus)).collect();
        let Some(first) = fits.first() else {
            return Err(EnvError::Phase(format!("no host of the ssh backend's pools has {gpus} GPUs")));
        };
        // The first pool that fits takes it; the others wait their turn
        // when it is spent for good.
        for pool in &fits {
            match pool.take(gpus) {
                Ok(Some(lease)) => return Ok(lease),
                Ok(None) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(EnvError::Phase(format!(
            "every host of pool `{}` has run a trial, and the pool has no reset command to make one fresh",
            first.config.name
        )))
    }
}

impl Pool {
    fn can_hold(&self, gpus: u32) -> bool {
        match self.config.create {
            Some(_) => self.config.gpus >= gpus,
            None => self.config.hosts.iter().any(|h| h.gpus >= gpus),
        }
    }

    fn limit(&self) -> usize {
        self.config.concurrency.unwrap_or(if self.config.create.is_some() {
            1
        } else {
            self.config.hosts.len()
        })
    }

    /// A lease, or None when no host of the pool will ever be free.
    fn take(self: &Arc<Self>, gpus: u32) -> Result<Option<Lease>, EnvError> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let host = 'found: loop {
            let fitting: Vec<usize> = (0..state.free.len()).filter(|&i| state.free[i].gpus >= gpus).collect();
            if state.in_use < self.limit() {
                if self.config.create.is_some() {
                    break None;
                }
                let mut held_elsewhere = false;
                for &at in &fitting {
                    match crate::image::try_lock(&self.lock_path(&state.free[at]))? {
                        Locked::Mine(lock) => {
                            let host = state.free.remove(at).expect("a free host");
                            break 'found Some((host, lock));
                        }
                        Locked::Elsewhere(_) => held_elsewhere = true,
                    }
                }
                if held_elsewhere {
                    // Another cleanroom holds them: nothing here says when
                    // it lets go.
                    drop(state);
                    std::thread::sleep(ELSEWHERE_POLL);
                    state = self.state.lock().unwrap_or_else(|p| p.into_inner());
                    continue;
                }
            }
            let could_come_back =
                state.in_use > 0 && (self.config.reset.is_some() || self.config.create.is_some());
            if !could_come_back && fitting.is_empty() {
                return Ok(None);
            }
            state = self.freed.wait(state).unwrap_or_else(|p| p.into_inner());
        };
        state.in_use += 1;
        drop(state);
        let made = match host {
            Some((host, lock)) => match self.reset(&host) {
                Ok(()) => Ok(self.lease(Target::of(&host, &self.ssh), &host, Some(lock))),
                Err(e) => {
                    // The trial fails with the error; the run goes on without the host.
                    eprintln!(
                        "cleanroom: pool `{}`: host `{}` is left out of this run, its reset failed: {e}",
                        self.config.name, host.name
                    );
                    Err(e)
                }
            },
            None => self.create(),
        };
        match made {
            Ok(lease) => Ok(Some(lease)),
            Err(e) => {
                let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
                state.in_use -= 1;
                self.freed.notify_all();
                Err(e)
            }
        }
    }

    fn lease(self: &Arc<Self>, target: Target, host: &HostConfig, lock: Option<File>) -> Lease {
        Lease {
            target,
            gpus: host.gpus,
            labels: host.labels.clone(),
            pool: self.clone(),
            host: Some(host.clone()),
            _lock: lock,
        }
    }

    /// The lock a host's trial holds against other cleanroom processes,
    /// named by the host as ssh reaches it, not by the pool's name for it:
    /// two configurations that name one host apart still share its lock.
    fn lock_path(&self, host: &HostConfig) -> PathBuf {
        let safe = |s: &str| s.replace(|c: char| !c.is_ascii_alphanumeric() && c != '-' && c != '.', "_");
        let user = host.user.as_deref().map(|u| format!("{u}@")).unwrap_or_default();
        let port = host.port.map(|p| format!(":{p}")).unwrap_or_default();
        self.locks.join(safe(&format!("{user}{}{port}", host.address)) + ".lock")
    }

    fn reset(&self, host: &HostConfig) -> Result<(), EnvError> {
        match &self.config.reset {
            Some(command) => {
                run_command(&self.config.name, "reset", &fill(command, &host.name, &host.address)).map(drop)
            }
            None => Ok(()),
        }
    }

    fn create(self: &Arc<Self>) -> Result<Lease, EnvError> {
        let command = self.config.create.as_deref().unwrap_or_default();
        let printed = run_command(&self.config.name, "create", command)?;
        let host = parse_created(&printed, self.config.gpus)
            .map_err(|why| EnvError::Phase(format!("pool `{}`: create printed {why}", self.config.name)))?;
        let mut lease = self.lease(Target::of(&host, &self.ssh), &host, None);
        // Destroyed when given back, never back in a free list.
        lease.host = None;
        Ok(lease)
    }

    fn give_back(&self, host: Option<HostConfig>, target: &Target) {
        if let (Some(destroy), None) = (&self.config.destroy, &host) {
            if let Err(e) =
                run_command(&self.config.name, "destroy", &fill(destroy, &target.name, &target.address))
            {
                eprintln!("cleanroom: {e}");
            }
        }
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.in_use -= 1;
        if let Some(host) = host.filter(|_| self.config.reset.is_some()) {
            state.free.push_back(host);
        }
        self.freed.notify_all();
    }
}

/// `command` with `{name}` and `{address}` replaced, each quoted.
fn fill(command: &str, name: &str, address: &str) -> String {
    command.replace("{name}", &quote(name)).replace("{address}", &quote(address))
}

/// Runs one of the pool's commands with the user's shell; its standard
/// output when it succeeds.
fn run_command(pool: &str, which: &str, command: &str) -> Result<String, EnvError> {
    let out = Command::new("/bin/sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| EnvError::io(format!("pool `{pool}`: running its {which} command"), e))?;
    if !out.status.success() {
        return Err(EnvError::Command {
            program: format!("pool `{pool}`'s {which} command `{command}`"),
            detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A provisioner's `key=value` lines as a host.
fn parse_created(printed: &str, gpus: u32) -> Result<HostConfig, String> {
    let mut host = HostConfig { gpus, ..Default::default() };
    for line in printed.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let (key, value) = line.split_once('=').ok_or_else(|| format!("`{line}`, not key=value"))?;
        let value = value.trim().to_string();
        match key.trim() {
            "address" => host.address = value,
            "name" => host.name = value,
            "port" => host.port = Some(value.parse().map_err(|_| format!("port `{value}`"))?),
            "user" => host.user = Some(value),
            "key" => host.key = Some(value),
            "gpus" => host.gpus = value.parse().map_err(|_| format!("gpus `{value}`"))?,
            other => return Err(format!("an unknown key `{other}`")),
        }
    }
    if host.address.is_empty() {
        return Err("no address=".into());
    }
    if host.name.is_empty() {
        host.name = host.address.clone();
    }
    Ok(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(hosts: &[&str], reset: Option<&str>) -> Pools {
        let config = PoolConfig {
            name: "p".into(),
            reset: reset.map(String::from),
            hosts: hosts
                .iter()
                .map(|h| HostConfig { name: h.to_string(), address: h.to_string(), ..Default::default() })
                .collect(),
            ..Default::default()
        };
        let locks = std::env::temp_dir().join(format!("cleanroom-pool-test-{}", std::process::id()));
        std::fs::create_dir_all(&locks).unwrap();
        Pools::new(&SshConfig { pools: vec![config], ..Default::default() }, &locks)
    }

    /// The class of the two homes' collision, from the other side: one
    /// host under another pool's and another host's name (a second
    /// configuration) is held by the same lock; another port is another
    /// host.
    #[test]
    fn one_host_under_two_names_has_one_lock() {
        let locks = tempfile::tempdir().unwrap();
        let pools = |pool: &str, name: &str, port: u16| {
            let host = HostConfig {
                name: name.into(),
                address: "10.254.9.2".into(),
                user: Some("root".into()),
                port: Some(port),
                ..Default::default()
            };
            let config = PoolConfig { name: pool.into(), hosts: vec![host], ..Default::default() };
            Pools::new(&SshConfig { pools: vec![config], ..Default::default() }, locks.path())
        };
        let lock_of = |pools: &Pools| {
            let pool = &pools.pools[0];
            crate::image::try_lock(&pool.lock_path(&pool.config.hosts[0])).unwrap()
        };
        let held = pools("ci", "th-1", 22).take(0).unwrap();
        assert!(matches!(lock_of(&pools("tests", "test-host", 22)), Locked::Elsewhere(_)));
        assert!(matches!(lock_of(&pools("ci", "th-1", 2222)), Locked::Mine(_)));
        drop(held);
        assert!(matches!(lock_of(&pools("tests", "test-host", 22)), Locked::Mine(_)));
    }

    #[test]
    fn a_pool_without_reset_runs_each_host_once() {
        let pools = pool(&["a"], None);
        let lease = pools.take(0).unwrap();
        assert_eq!(lease.target.name, "a");
        drop(lease);
        let again = pools.take(0).map(|l| l.target.name.clone()).unwrap_err();
        assert!(again.to_string().contains("no reset command"), "{again}");
    }

    #[test]
    fn reset_runs_before_every_lease_with_the_hosts_name_quoted() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        let reset = format!("echo {{name}} >> {}", log.display());
        let pools = pool(&["it's a"], Some(&reset));
        drop(pools.take(0).unwrap());
        drop(pools.take(0).unwrap());
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "it's a\nit's a\n");
        assert!(pools.take(1).is_err(), "no host has a GPU");
    }

    #[test]
    fn a_host_whose_reset_failed_is_left_out_and_the_others_go_on() {
        let pools = pool(&["a", "b"], Some("test {name} != a"));
        let failed = pools.take(0).map(|l| l.target.name.clone()).unwrap_err();
        assert!(failed.to_string().contains("reset command"), "{failed}");
        for _ in 0..2 {
            assert_eq!(pools.take(0).unwrap().target.name, "b");
        }
    }

    #[test]
    fn a_provisioners_output_names_the_host() {
        let host = parse_created("address=10.0.0.5\nuser=ubuntu\ngpus=2\n", 0).unwrap();
        assert_eq!((host.name.as_str(), host.user.as_deref(), host.gpus), ("10.0.0.5", Some("ubuntu"), 2));
        assert!(parse_created("name=x\n", 0).unwrap_err().contains("no address"));
        assert!(parse_created("address=a\ncolour=red\n", 0).is_err());
    }
}
