//! Agent SPECs as the command line takes them (DESIGN.md, "Agent SPECs").

use std::io::Read;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentSpec {
    /// Runs the task's solution/setup.sh.
    Oracle,
    /// Does nothing.
    Nop,
    /// A script on the host, copied in and run as the agent.
    Script(PathBuf),
}

#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("agent `{0}`: unknown kind (expected oracle, nop or script:PATH)")]
    Unknown(String),
    #[error("agent `{spec}`: {what} is not available yet")]
    NotYet { spec: String, what: &'static str },
    #[error("agent `{spec}`: {path}: {why}")]
    Script { spec: String, path: String, why: String },
}

impl AgentSpec {
    pub fn parse(spec: &str) -> Result<AgentSpec, SpecError> {
        match spec {
            "oracle" => return Ok(AgentSpec::Oracle),
            "nop" => return Ok(AgentSpec::Nop),
            _ => {}
        }
        if let Some(path) = spec.strip_prefix("script:") {
            let bad = |why: String| SpecError::Script { spec: spec.into(), path: path.into(), why };
            let meta = std::fs::metadata(path).map_err(|e| bad(e.to_string().to_lowercase()))?;
            if !meta.is_file() {
                return Err(bad("not a regular file".into()));
            }
            let abs = std::fs::canonicalize(path).map_err(|e| bad(e.to_string()))?;
            return Ok(AgentSpec::Script(abs));
        }
        for (prefix, what) in
            [("command:", "external agent CLIs (command:)"), ("llm:", "the built-in LLM agent (llm:)")]
        {
            if spec.starts_with(prefix) {
                return Err(SpecError::NotYet { spec: spec.into(), what });
            }
        }
        Err(SpecError::Unknown(spec.into()))
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
    fn parses_the_three_kinds() {
        assert_eq!(AgentSpec::parse("oracle").unwrap(), AgentSpec::Oracle);
        assert_eq!(AgentSpec::parse("nop").unwrap(), AgentSpec::Nop);
        let script = std::env::temp_dir().join(format!("agent-spec-{}.sh", std::process::id()));
        std::fs::write(&script, "#!/bin/sh\ntrue\n").unwrap();
        let parsed = AgentSpec::parse(&format!("script:{}", script.display())).unwrap();
        assert!(matches!(parsed, AgentSpec::Script(ref p) if p.is_absolute()));
        assert!(has_shebang(&script));
        std::fs::remove_file(script).unwrap();
    }

    #[test]
    fn bad_specs_say_what_is_expected() {
        let err = AgentSpec::parse("orcale").unwrap_err().to_string();
        assert!(err.contains("orcale") && err.contains("script:PATH"), "{err}");
        let err = AgentSpec::parse("script:/no/such/agent.sh").unwrap_err().to_string();
        assert!(err.contains("/no/such/agent.sh") && err.contains("no such file"), "{err}");
        let err = AgentSpec::parse("llm:local").unwrap_err().to_string();
        assert!(err.contains("not available yet"), "{err}");
    }
}
