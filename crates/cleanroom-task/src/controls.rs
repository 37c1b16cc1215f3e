//! Two cleanroom additions to task.toml that check the benchmark rather
//! than the agent: `[negative_control]` (no correct deployment passes this
//! task) and `[substitutes]` (agents that skip the deployment, each of which
//! `tasks check` runs and must see fail).

use std::path::Path;

use serde::Serialize;

use crate::rules::{
    is_crate_name, is_crate_version, is_debian_package, parse_requirement, relative_path_problem,
};
use crate::spec::ArtifactSource;
use crate::task_toml::check_keys;
use crate::toml_read::{Reader, Tab};

/// `[negative_control]`: a pass means a forged result or a broken
/// verifier, so it is flagged and kept out of every pass rate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NegativeControl {
    /// Why no correct deployment passes, for the people reading reports.
    pub reason: String,
}

/// `[substitutes]`: one entry per agent of the battery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Substitutes {
    /// Each entry: Debian package names (space-separated) to `apt-get install`.
    pub debian: Vec<String>,
    /// Each entry: pip requirements (space-separated), `name` or `name==version`.
    pub pypi: Vec<String>,
    /// Each entry: npm packages (space-separated), `name` or `name@version`.
    pub npm: Vec<String>,
    /// Each entry: one crate, `name` or `name@version`, to `cargo install`.
    pub crates: Vec<String>,
    /// The task's own shortcut agents: scripts relative to the task directory.
    pub agents: Vec<String>,
    /// Whether to run the replay substitute (deploy as the oracle does, then
    /// swap the experiment's entry point for one that prints its output).
    pub replay: bool,
}

impl Default for Substitutes {
    fn default() -> Self {
        Substitutes {
            debian: Vec::new(),
            pypi: Vec::new(),
            npm: Vec::new(),
            crates: Vec::new(),
            agents: Vec::new(),
            replay: true,
        }
    }
}

const NEGATIVE_CONTROL_KEYS: &[&str] = &["reason"];
const SUBSTITUTES_KEYS: &[&str] = &["debian", "pypi", "npm", "crates", "agents", "replay"];

pub(crate) fn negative_control(r: &mut Reader, tab: &Tab<'_>) -> Option<NegativeControl> {
    check_keys(r, tab, NEGATIVE_CONTROL_KEYS);
    let reason = r.required_string(
        tab,
        "reason",
        "a negative control needs `reason`: why no correct deployment passes it",
    )?;
    if reason.trim().is_empty() {
        r.key_err(tab, "reason", "is empty; say why no correct deployment passes this task");
        return None;
    }
    Some(NegativeControl { reason })
}

pub(crate) fn substitutes(r: &mut Reader, tab: &Tab<'_>, dir: &Path) -> Option<Substitutes> {
    check_keys(r, tab, SUBSTITUTES_KEYS);
    let debian = entries(r, tab, "debian", |word| {
        is_debian_package(word).then_some(()).ok_or("is not a Debian package name")
    });
    let pypi = entries(r, tab, "pypi", |word| {
        let name = word.split("==").next().unwrap_or("");
        let ok = !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.[],".contains(c))
            && word.matches("==").count() <= 1
            && !word.ends_with("==");
        ok.then_some(()).ok_or("is not a PyPI requirement; expected `name` or `name==version`")
    });
    let npm = entries(r, tab, "npm", |word| {
        // Scoped packages start with `@`: the version is after the last one.
        let name = match word.rfind('@') {
            Some(i) if i > 0 => &word[..i],
            _ => word,
        };
        let ok = !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || "@/-_.".contains(c))
            && !word.ends_with('@');
        ok.then_some(()).ok_or("is not an npm package; expected `name` or `name@version`")
    });
    let crates = entries(r, tab, "crates", |word| {
        let (name, version) = word.split_once('@').unwrap_or((word, ""));
        let ok = is_crate_name(name) && (version.is_empty() || is_crate_version(version));
        ok.then_some(()).ok_or("is not a crate; expected `name` or `name@x.y.z`")
    });
    let agents = match r.get(tab, "agents") {
        None => Some(Vec::new()),
        Some(_) => {
            let list = r.string_list(tab, "agents")?;
            let mut ok = true;
            for (path, line) in &list {
                let problem = relative_path_problem(path).map(str::to_owned).or_else(|| {
                    (!dir.join(path).is_file()).then(|| "is not a file in the task directory".to_owned())
                });
                if let Some(problem) = problem {
                    r.err(*line, "substitutes.agents", format!("{path:?} {problem}"));
                    ok = false;
                }
            }
            ok.then(|| list.into_iter().map(|(s, _)| s).collect())
        }
    };
    let replay = match r.get(tab, "replay") {
        None => Some(true),
        Some(_) => r.boolean(tab, "replay"),
    };
    Some(Substitutes {
        debian: debian?,
        pypi: pypi?,
        npm: npm?,
        crates: crates?,
        agents: agents?,
        replay: replay?,
    })
}

/// A list of entries, each of space-separated words that `valid` accepts.
fn entries(
    r: &mut Reader,
    tab: &Tab<'_>,
    key: &str,
    valid: impl Fn(&str) -> Result<(), &'static str>,
) -> Option<Vec<String>> {
    if r.get(tab, key).is_none() {
        return Some(Vec::new());
    }
    let list = r.string_list(tab, key)?;
    let mut ok = true;
    for (entry, line) in &list {
        let words: Vec<&str> = entry.split_whitespace().collect();
        if words.is_empty() {
            r.err(*line, &Reader::full_key(tab, key), "an empty entry; give at least one package");
            ok = false;
        }
        for word in words {
            if let Err(why) = valid(word) {
                r.err(*line, &Reader::full_key(tab, key), format!("{word:?} {why}"));
                ok = false;
            }
        }
    }
    ok.then(|| list.into_iter().map(|(s, _)| s.split_whitespace().collect::<Vec<_>>().join(" ")).collect())
}

/// One agent of the battery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Substitute {
    /// `apt-get install` these Debian packages, then run the experiment.
    Debian(String),
    /// `pip install` these requirements, then run the experiment.
    Pypi(String),
    /// `npm install` these packages in the artifact, then run the experiment.
    Npm(String),
    /// `cargo install` this crate, then run the experiment.
    Crate(String),
    /// The task's own shortcut agent, relative to the task directory.
    Agent(String),
    /// Deploy as the oracle does, run the experiment once, then replace its
    /// entry point with one that replays what it wrote and printed.
    Replay,
}

impl Substitute {
    /// The inverse of [`Substitute::label`]; none for anything else.
    pub fn parse(label: &str) -> Option<Substitute> {
        if label == "replay" {
            return Some(Substitute::Replay);
        }
        let (kind, what) = label.split_once(':')?;
        let what = what.split_whitespace().collect::<Vec<_>>().join(" ");
        if what.is_empty() {
            return None;
        }
        Some(match kind {
            "debian" => Substitute::Debian(what),
            "pypi" => Substitute::Pypi(what),
            "npm" => Substitute::Npm(what),
            "crates" => Substitute::Crate(what),
            "agent" if relative_path_problem(&what).is_none() => Substitute::Agent(what),
            _ => return None,
        })
    }

    /// How reports and `tasks check` name it: `debian:python3-deap`.
    pub fn label(&self) -> String {
        match self {
            Substitute::Debian(p) => format!("debian:{p}"),
            Substitute::Pypi(p) => format!("pypi:{p}"),
            Substitute::Npm(p) => format!("npm:{p}"),
            Substitute::Crate(p) => format!("crates:{p}"),
            Substitute::Agent(path) => format!("agent:{path}"),
            Substitute::Replay => "replay".to_owned(),
        }
    }
}

impl Substitutes {
    /// Every agent of the battery: the same-named package of the artifact's
    /// own registry, newest release (unless declared), then the declared
    /// ones in the order of task.toml's keys; replay only where there is an
    /// experiment to replay.
    pub fn battery(&self, has_experiment: bool, artifact: &ArtifactSource) -> Vec<Substitute> {
        let each = |list: &[String], make: fn(String) -> Substitute| -> Vec<Substitute> {
            list.iter().cloned().map(make).collect()
        };
        let same_name = match artifact {
            ArtifactSource::PypiSdist { requirement } => {
                parse_requirement(requirement).map(|(name, _)| Substitute::Pypi(name))
            }
            ArtifactSource::DebianSource { package, .. } => Some(Substitute::Debian(package.clone())),
            _ => None,
        };
        let mut all: Vec<Substitute> = same_name.into_iter().collect();
        all.extend(each(&self.debian, Substitute::Debian));
        all.extend(each(&self.pypi, Substitute::Pypi));
        all.extend(each(&self.npm, Substitute::Npm));
        all.extend(each(&self.crates, Substitute::Crate));
        all.extend(each(&self.agents, Substitute::Agent));
        if self.replay && has_experiment {
            all.push(Substitute::Replay);
        }
        let mut seen = std::collections::HashSet::new();
        all.retain(|s| seen.insert(s.label()));
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_battery_starts_with_the_artifacts_own_package_and_holds_each_substitute_once() {
        let declared = Substitutes {
            debian: vec!["python3-deap python3-pip".into()],
            pypi: vec!["deap==1.3.3".into(), "deap".into()],
            agents: vec!["substitutes/x.sh".into()],
            ..Substitutes::default()
        };
        let pypi = ArtifactSource::PypiSdist { requirement: "deap==1.2.2".into() };
        let labels: Vec<String> = declared.battery(true, &pypi).iter().map(Substitute::label).collect();
        assert_eq!(
            labels,
            [
                "pypi:deap",
                "debian:python3-deap python3-pip",
                "pypi:deap==1.3.3",
                "agent:substitutes/x.sh",
                "replay"
            ]
        );
        let debian = ArtifactSource::DebianSource {
            package: "arj".into(),
            version: "3.10.22-26".into(),
            mirror: None,
            sha256: None,
        };
        let labels: Vec<String> =
            Substitutes::default().battery(false, &debian).iter().map(Substitute::label).collect();
        assert_eq!(labels, ["debian:arj"], "no replay without an experiment");
        assert!(Substitutes::default().battery(false, &ArtifactSource::Dir).is_empty());
        for s in declared.battery(true, &pypi) {
            assert_eq!(Substitute::parse(&s.label()), Some(s.clone()), "label and parse agree");
        }
    }
}
