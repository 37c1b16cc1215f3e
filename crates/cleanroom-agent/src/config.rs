//! The configuration (DESIGN.md): models, external agents and what the
//! host gives the backends (`[vm]`, `[ssh]`), from
//! `--config FILE`, else `./cleanroom.toml`, else
//! `~/.config/cleanroom/config.toml`, laid over the built-in defaults.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cleanroom_model::{ExternalAgent, ModelConfig};
use serde::Deserialize;

const DEFAULTS: &str = include_str!("default-config.toml");

/// Files the built-in defaults refer to, by their path under `agents/` of
/// the repository (embedded, so the binary needs no checkout).
macro_rules! agent_files {
    ($($path:literal),* $(,)?) => {
        &[$(($path, include_str!(concat!("../../../agents/", $path)))),*]
    };
}
const BUILT_IN_FILES: &[(&str, &str)] = agent_files![
    "_lib/common.sh",
    "mini-swe-agent/install.sh",
    "mini-swe-agent/constraints.txt",
    "mini-swe-agent/run.sh",
    "claude-code/install.sh",
    "claude-code/run.sh",
    "codex/install.sh",
    "codex/run.sh",
    "openhands/install.sh",
    "openhands/constraints.txt",
    "openhands/run.sh",
];

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    pub models: BTreeMap<String, ModelConfig>,
    pub agents: BTreeMap<String, ExternalAgent>,
    pub vm: VmConfig,
    /// The ssh backend's hosts (`[ssh]`).
    pub ssh: cleanroom_env::ssh::SshConfig,
    /// The Slurm executor's job options (`[slurm]`).
    pub slurm: cleanroom_env::SlurmOptions,
    /// The files read, in the order laid over each other.
    pub sources: Vec<String>,
}

/// What the host gives the vm backend.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VmConfig {
    /// PCI addresses of GPUs bound to vfio-pci, for passthrough.
    #[serde(default)]
    pub gpus: Vec<String>,
    /// The file that set this section, for errors about it.
    #[serde(skip)]
    pub file: Option<String>,
}

#[derive(Debug, thiserror::Error)]
#[error("{file}: {message}")]
pub struct ConfigError {
    pub file: String,
    pub message: String,
}

/// A configuration file as written: agents name their scripts by path.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    #[serde(default)]
    models: BTreeMap<String, ModelConfig>,
    #[serde(default)]
    agents: BTreeMap<String, FileAgent>,
    #[serde(default)]
    vm: Option<VmConfig>,
    #[serde(default)]
    ssh: Option<cleanroom_env::ssh::SshConfig>,
    #[serde(default)]
    slurm: Option<cleanroom_env::SlurmOptions>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileAgent {
    version: String,
    dialect: String,
    #[serde(default)]
    model: Option<String>,
    /// Paths relative to the configuration file.
    install: String,
    run: String,
    /// Files the install script reads, relative to its directory.
    #[serde(default)]
    install_files: Vec<String>,
    #[serde(default)]
    logs: Vec<String>,
    #[serde(default)]
    stop_hook: bool,
    #[serde(default)]
    resume: bool,
}

const DIALECTS: &[&str] = &["openai-chat", "anthropic-messages", "openai-responses"];

impl Config {
    /// The built-in defaults alone.
    pub fn built_in() -> Config {
        let mut config = Config::default();
        config.lay_over(DEFAULTS, "(built-in defaults)", None).expect("the built-in configuration is valid");
        config
    }

    /// The built-in defaults under the first configuration file found.
    pub fn load(explicit: Option<&Path>) -> Result<Config, ConfigError> {
        let mut config = Config::built_in();
        let file = match explicit {
            Some(p) => Some(p.to_path_buf()),
            None => default_locations().into_iter().find(|p| p.is_file()),
        };
        if let Some(path) = file {
            let shown = path.display().to_string();
            let text = std::fs::read_to_string(&path)
                .map_err(|e| ConfigError { file: shown.clone(), message: e.to_string().to_lowercase() })?;
            let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
            config.lay_over(&text, &shown, Some(&base))?;
        }
        Ok(config)
    }

    /// Parses `text` and replaces entries of the same name. `base` is the
    /// directory agent scripts are relative to; None for the built-ins.
    fn lay_over(&mut self, text: &str, shown: &str, base: Option<&Path>) -> Result<(), ConfigError> {
        let err = |message: String| ConfigError { file: shown.to_string(), message };
        let parsed: FileConfig = toml::from_str(text).map_err(|e| err(e.to_string().trim().to_string()))?;
        for (name, model) in parsed.models {
            if !model.base_url.starts_with("http://") && !model.base_url.starts_with("https://") {
                return Err(err(format!(
                    "models.{name}.base_url: `{}` is not an http(s) URL",
                    model.base_url
                )));
            }
            self.models.insert(name, model);
        }
        for (name, agent) in parsed.agents {
            if !DIALECTS.contains(&agent.dialect.as_str()) {
                return Err(err(format!(
                    "agents.{name}.dialect: `{}` is not one of {}",
                    agent.dialect,
                    DIALECTS.join(", ")
                )));
            }
            let read = |key: &str, rel: &str| {
                read_script(base, rel).map_err(|m| err(format!("agents.{name}.{key}: {m}")))
            };
            let install_dir = Path::new(&agent.install).parent().unwrap_or(Path::new(""));
            let mut install_files = BTreeMap::new();
            for rel in &agent.install_files {
                if rel.starts_with('/') || rel.split('/').filter(|c| *c == "..").count() > 3 {
                    return Err(err(format!("agents.{name}.install_files: `{rel}` must be a relative path")));
                }
                let path = install_dir.join(rel).to_string_lossy().into_owned();
                install_files.insert(rel.clone(), read("install_files", &normalize(&path))?);
            }
            let resolved = ExternalAgent {
                install_script: read("install", &agent.install)?,
                install_files,
                run_script: read("run", &agent.run)?,
                version: agent.version,
                dialect: agent.dialect,
                model: agent.model,
                logs: agent.logs,
                stop_hook: agent.stop_hook,
                resume: agent.resume,
            };
            self.agents.insert(name, resolved);
        }
        if let Some(vm) = parsed.vm {
            self.vm = VmConfig { file: Some(shown.to_string()), ..vm };
        }
        if let Some(ssh) = parsed.ssh {
            ssh.check().map_err(err)?;
            self.ssh = cleanroom_env::ssh::SshConfig { file: Some(shown.to_string()), ..ssh };
        }
        if let Some(slurm) = parsed.slurm {
            self.slurm = slurm;
        }
        self.sources.push(shown.to_string());
        Ok(())
    }

    pub fn model(&self, name: &str) -> Result<&ModelConfig, String> {
        self.models.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.models.keys().map(String::as_str).collect();
            format!("no model `{name}` in the configuration (models: {})", known.join(", "))
        })
    }

    pub fn agent(&self, name: &str) -> Result<&ExternalAgent, String> {
        self.agents.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.agents.keys().map(String::as_str).collect();
            format!("no external agent `{name}` in the configuration (agents: {})", known.join(", "))
        })
    }
}

fn default_locations() -> Vec<PathBuf> {
    let mut out = vec![PathBuf::from("cleanroom.toml")];
    if let Some(home) = std::env::var_os("HOME") {
        out.push(PathBuf::from(home).join(".config/cleanroom/config.toml"));
    }
    out
}

/// `a/b/../c` as `a/c`, so built-in files are found by their plain path.
fn normalize(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." if out.last().is_some_and(|p| *p != "..") => {
                out.pop();
            }
            p => out.push(p),
        }
    }
    let joined = out.join("/");
    if path.starts_with('/') {
        format!("/{joined}")
    } else {
        joined
    }
}

fn read_script(base: Option<&Path>, rel: &str) -> Result<String, String> {
    match base {
        None => BUILT_IN_FILES
            .iter()
            .find(|(path, _)| *path == normalize(rel))
            .map(|(_, text)| text.to_string())
            .ok_or_else(|| format!("`{rel}` is not a built-in file")),
        Some(dir) => {
            let path = dir.join(rel);
            std::fs::read_to_string(&path)
                .map_err(|e| format!("{}: {}", path.display(), e.to_string().to_lowercase()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn a_file_lays_its_models_and_agents_over_the_defaults() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "install.sh", "echo install\n");
        write(dir.path(), "run.sh", "echo run\n");
        let file = write(
            dir.path(),
            "c.toml",
            r#"
[models.big]
base_url = "https://api.example.com/v1"
api_key_env = "EXAMPLE_KEY"
model = "big-1"
prices = { input_per_mtok = 3.0, output_per_mtok = 15.0 }

[agents.mine]
version = "1.0"
dialect = "openai-chat"
install = "install.sh"
run = "run.sh"
logs = ["traj.json"]
"#,
        );
        let c = Config::load(Some(&file)).unwrap();
        assert_eq!(c.model("local").unwrap().model, "local", "the built-in model stays");
        let big = c.model("big").unwrap();
        assert_eq!((big.model.as_str(), big.prices.output_per_mtok), ("big-1", 15.0));
        assert_eq!(c.agent("mine").unwrap().run_script, "echo run\n");
        let err = c.model("nope").unwrap_err();
        assert!(err.contains("nope") && err.contains("big") && err.contains("local"), "{err}");
    }

    #[test]
    fn the_built_in_agents_carry_their_recipes() {
        let c = Config::built_in();
        for name in ["mini-swe-agent", "claude-code", "codex", "openhands"] {
            let a = c.agent(name).unwrap();
            assert!(a.install_script.contains("install.sh PREFIX"), "{name}");
            assert!(a.install_files["../_lib/common.sh"].contains("begin_install"), "{name}");
            assert!(a.run_script.contains("CLEANROOM_MODEL_BASE_URL"), "{name}");
        }
    }

    #[test]
    fn mistakes_name_the_file_and_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let file = write(dir.path(), "c.toml", "[models.x]\nbase_url = \"ftp://x\"\nmodel = \"m\"\n");
        let err = Config::load(Some(&file)).unwrap_err().to_string();
        assert!(err.contains("c.toml") && err.contains("models.x.base_url"), "{err}");
        let file = write(dir.path(), "d.toml", "[models.x]\nbase_url = \"http://x\"\nmodle = \"m\"\n");
        let err = Config::load(Some(&file)).unwrap_err().to_string();
        assert!(err.contains("d.toml") && err.contains("modle"), "{err}");
        let file = write(
            dir.path(),
            "e.toml",
            "[agents.a]\nversion = \"1\"\ndialect = \"openai-chat\"\ninstall = \"missing.sh\"\nrun = \"r.sh\"\n",
        );
        let err = Config::load(Some(&file)).unwrap_err().to_string();
        assert!(err.contains("agents.a.install") && err.contains("missing.sh"), "{err}");
    }
}
