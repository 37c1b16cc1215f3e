//! `tasks new --source SPEC`: the artifact source of a new task, as its
//! `[artifact]` table. A registry source (`pypi:NAME==VERSION`,
//! `crate:NAME@VERSION`, `debian:PACKAGE=VERSION`) is fetched by cleanroom
//! when the task runs; the task loader checks the name and version.

use crate::error::{input, CliError};

/// Where a new task's artifact comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NewSource {
    /// The task's own `artifact/` directory.
    Dir,
    PypiSdist {
        requirement: String,
    },
    Crate {
        name: String,
        version: String,
    },
    DebianSource {
        package: String,
        version: String,
    },
}

impl NewSource {
    /// Parses `--source`: `dir`, `pypi:NAME==VERSION`, `crate:NAME@VERSION`
    /// or `debian:PACKAGE=VERSION`.
    pub fn parse(spec: &str) -> Result<NewSource, CliError> {
        let bad = |what: &str| {
            input(format!(
                "--source {spec:?}: {what}; expected `dir`, `pypi:NAME==VERSION`, `crate:NAME@VERSION` or `debian:PACKAGE=VERSION`"
            ))
        };
        if spec == "dir" {
            return Ok(NewSource::Dir);
        }
        let (kind, rest) = spec.split_once(':').ok_or_else(|| bad("no source kind"))?;
        if rest.is_empty() || !rest.chars().all(|c| c.is_ascii_alphanumeric() || "._+-=@:~".contains(c)) {
            return Err(bad("a name and version of letters, digits and . _ + - : ~"));
        }
        let pair = |separator: &str| {
            rest.split_once(separator)
                .filter(|(name, version)| !name.is_empty() && !version.is_empty())
                .map(|(name, version)| (name.to_string(), version.to_string()))
                .ok_or_else(|| bad(&format!("no exact version after `{separator}`")))
        };
        match kind {
            "pypi" => {
                pair("==")?;
                Ok(NewSource::PypiSdist { requirement: rest.to_string() })
            }
            "crate" => pair("@").map(|(name, version)| NewSource::Crate { name, version }),
            "debian" => pair("=").map(|(package, version)| NewSource::DebianSource { package, version }),
            _ => Err(bad(&format!("unknown source kind `{kind}`"))),
        }
    }

    /// Whether the task itself holds the artifact (`artifact/`).
    pub fn is_dir(&self) -> bool {
        *self == NewSource::Dir
    }

    /// The `[artifact]` table of task.toml.
    pub fn artifact_table(&self) -> String {
        let quoted = |s: &str| toml_edit::Value::from(s).to_string();
        match self {
            NewSource::Dir => {
                "[artifact]\nsource = \"dir\"                 # the files in artifact/ (see docs/task-format.md for others)\n"
                    .to_string()
            }
            NewSource::PypiSdist { requirement } => format!(
                "[artifact]\nsource = \"pypi-sdist\"          # the version's source distribution, as PyPI lists it\nrequirement = {}\n",
                quoted(requirement)
            ),
            NewSource::Crate { name, version } => format!(
                "[artifact]\nsource = \"crate\"               # the .crate of crates.io\ncrate = {}\nversion = {}\n",
                quoted(name),
                quoted(version)
            ),
            NewSource::DebianSource { package, version } => format!(
                "[artifact]\nsource = \"debian-source\"       # the source package, patches not applied\npackage = {}\nversion = {}\n",
                quoted(package),
                quoted(version)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_sources_parse_into_their_tables() {
        let pypi = NewSource::parse("pypi:deap==1.3.3").unwrap();
        assert!(pypi.artifact_table().contains("source = \"pypi-sdist\""));
        assert!(pypi.artifact_table().contains("requirement = \"deap==1.3.3\""));
        let krate = NewSource::parse("crate:itoa@0.4.8").unwrap();
        assert_eq!(krate, NewSource::Crate { name: "itoa".into(), version: "0.4.8".into() });
        let deb = NewSource::parse("debian:bzip2=1.0.8-5").unwrap();
        assert_eq!(deb, NewSource::DebianSource { package: "bzip2".into(), version: "1.0.8-5".into() });
        assert_eq!(
            NewSource::parse("debian:sl=1:5.02-1").unwrap(),
            NewSource::DebianSource { package: "sl".into(), version: "1:5.02-1".into() }
        );
        assert!(NewSource::parse("dir").unwrap().is_dir());
    }

    #[test]
    fn bad_sources_are_bad_input() {
        for spec in
            ["pypi:deap", "pypi:deap>=1", "crate:itoa", "npm:x@1", "deap==1.3.3", "pypi:a==1\"b", "pypi:"]
        {
            let e = NewSource::parse(spec).unwrap_err();
            assert!(matches!(e, CliError::Input(_)), "{spec}: {e}");
        }
    }
}
