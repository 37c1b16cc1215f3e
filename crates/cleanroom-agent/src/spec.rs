//! Agent SPECs as the command line takes them (DESIGN.md, "Agent SPECs").

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::config::Config;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentSpec {
    /// Runs the task's solution/setup.sh.
    Oracle,
    /// Does nothing.
    Nop,
    /// A script on the host, copied in and run as the agent.
    Script(PathBuf),
    /// The built-in agent with a model of the configuration.
    Llm { model: String },
    /// An external agent CLI of the configuration, with a model.
    Command { name: String, model: String },
    /// An agent of `tasks check`'s substitution battery, also given as
    /// `substitute:LABEL` (`substitute:replay`, `substitute:debian:PKG`).
    Substitute(cleanroom_task::Substitute),
}

#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error(
        "agent `{0}`: unknown kind (expected oracle, nop, script:PATH, llm:MODEL, command:NAME[@MODEL] or substitute:LABEL)"
    )]
    Unknown(String),
    #[error("agent `{spec}`: {why}")]
    Config { spec: String, why: String },
    #[error("agent `{spec}`: {path}: {why}")]
    Script { spec: String, path: String, why: String },
}

impl AgentSpec {
    /// Parses a SPEC; models and external agents must be in `config`.
    pub fn parse(spec: &str, config: &Config) -> Result<AgentSpec, SpecError> {
        match spec {
            "oracle" => return Ok(AgentSpec::Oracle),
            "nop" => return Ok(AgentSpec::Nop),
            _ => {}
        }
        let config_err = |why: String| SpecError::Config { spec: spec.into(), why };
        if let Some(path) = spec.strip_prefix("script:") {
            let bad = |why: String| SpecError::Script { spec: spec.into(), path: path.into(), why };
            let meta = std::fs::metadata(path).map_err(|e| bad(e.to_string().to_lowercase()))?;
            if !meta.is_file() {
                return Err(bad("not a regular file".into()));
            }
            let abs = std::fs::canonicalize(path).map_err(|e| bad(e.to_string()))?;
            return Ok(AgentSpec::Script(abs));
        }
        if let Some(label) = spec.strip_prefix("substitute:") {
            return cleanroom_task::Substitute::parse(label).map(AgentSpec::Substitute).ok_or_else(|| {
                config_err(
                    "expected substitute:replay, substitute:debian:PKG, substitute:pypi:REQ, substitute:npm:PKG, \
                     substitute:crates:CRATE or substitute:agent:PATH (relative to the task)"
                        .into(),
                )
            });
        }
        if let Some(model) = spec.strip_prefix("llm:") {
            config.model(model).map_err(config_err)?;
            return Ok(AgentSpec::Llm { model: model.to_string() });
        }
        if let Some(rest) = spec.strip_prefix("command:") {
            let (name, model) = match rest.split_once('@') {
                Some((n, m)) => (n, Some(m.to_string())),
                None => (rest, None),
            };
            let agent = config.agent(name).map_err(config_err)?;
            let model = model.or_else(|| agent.model.clone()).unwrap_or_else(|| "local".to_string());
            config.model(&model).map_err(config_err)?;
            return Ok(AgentSpec::Command { name: name.to_string(), model });
        }
        Err(SpecError::Unknown(spec.into()))
    }

    /// The configured model this agent uses, if any.
    pub fn model(&self) -> Option<&str> {
        match self {
            AgentSpec::Llm { model } | AgentSpec::Command { model, .. } => Some(model),
            _ => None,
        }
    }
}

/// Whether a script names its own interpreter; one without is run by bash.
pub(crate) fn has_shebang(path: &Path) -> bool {
    let mut head = [0u8; 2];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut head)).is_ok() && &head == b"#!"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_kind() {
        let config = Config::built_in();
        assert_eq!(AgentSpec::parse("oracle", &config).unwrap(), AgentSpec::Oracle);
        assert_eq!(AgentSpec::parse("nop", &config).unwrap(), AgentSpec::Nop);
        let script = std::env::temp_dir().join(format!("agent-spec-{}.sh", std::process::id()));
        std::fs::write(&script, "#!/bin/sh\ntrue\n").unwrap();
        let parsed = AgentSpec::parse(&format!("script:{}", script.display()), &config).unwrap();
        assert!(matches!(parsed, AgentSpec::Script(ref p) if p.is_absolute()));
        assert!(has_shebang(&script));
        std::fs::remove_file(script).unwrap();
        assert_eq!(AgentSpec::parse("llm:local", &config).unwrap(), AgentSpec::Llm { model: "local".into() });
        for label in
            ["replay", "debian:python3-deap python3-numpy", "pypi:deap==1.3.1", "agent:substitutes/a.sh"]
        {
            let parsed = AgentSpec::parse(&format!("substitute:{label}"), &config).unwrap();
            assert!(matches!(&parsed, AgentSpec::Substitute(s) if s.label() == label), "{parsed:?}");
        }
    }

    #[test]
    fn bad_specs_say_what_is_expected() {
        let config = Config::built_in();
        let err = AgentSpec::parse("orcale", &config).unwrap_err().to_string();
        assert!(err.contains("orcale") && err.contains("script:PATH") && err.contains("llm:MODEL"), "{err}");
        let err = AgentSpec::parse("script:/no/such/agent.sh", &config).unwrap_err().to_string();
        assert!(err.contains("/no/such/agent.sh") && err.contains("no such file"), "{err}");
        let err = AgentSpec::parse("llm:gpt-9", &config).unwrap_err().to_string();
        assert!(err.contains("no model `gpt-9`") && err.contains("local"), "{err}");
        for bad in ["substitute:", "substitute:apt:x", "substitute:debian:", "substitute:agent:../x.sh"] {
            let err = AgentSpec::parse(bad, &config).unwrap_err().to_string();
            assert!(err.contains(bad) && err.contains("substitute:replay"), "{err}");
        }
        let err = AgentSpec::parse("command:nobody", &config).unwrap_err().to_string();
        assert!(err.contains("no external agent `nobody`"), "{err}");
    }
}
