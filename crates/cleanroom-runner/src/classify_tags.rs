//! Failure tags: which kind of failure a failed trial shows, and the log
//! lines that show it (issue 5, part 1).
//!
//! The rules are data: `rules/tags.toml`, embedded in the binary. Each
//! `[[tag]]` names a tag, the logs it reads (`agent.log`, `verify.log`), a
//! list of regular expressions (the `regex` crate's syntax), and optionally
//! `exclude = [...]` (lines matching one of these do not count),
//! `last_lines = N` (only the last N lines of each log count, "near the
//! end"), `stop_reason = [...]` and `stage = [...]` (the rule applies only to
//! trials whose agent stopped for one of these reasons, or whose verdict got
//! to one of these stages).
//!
//! A user extends the rules with the environment variable
//! `CLEANROOM_TAG_RULES`: the path of a TOML file of the same shape. Its
//! rules are added to the embedded ones; a rule with the name of an existing
//! tag adds to that tag's evidence. When that file cannot be read or parsed,
//! or one of its patterns is not a valid regex, the embedded rules still
//! apply and the trial gets a `rules_error` tag whose evidence says why.
//!
//! Every tag carries at most [`MAX_EVIDENCE`] evidence lines (the last
//! matches, in log order), each 1-based, trimmed and cut to
//! [`MAX_TEXT`] characters.

use std::sync::OnceLock;

use cleanroom_store::{Evidence, StopReason, Tag, TrialRecord};
use cleanroom_verify::VerdictStage;
use regex::Regex;
use serde::Deserialize;

/// The embedded rules.
pub const EMBEDDED_RULES: &str = include_str!("../rules/tags.toml");
/// The environment variable naming an extra rules file.
pub const RULES_ENV: &str = "CLEANROOM_TAG_RULES";
/// Evidence lines kept per tag.
pub const MAX_EVIDENCE: usize = 5;
/// Characters kept of an evidence line.
pub const MAX_TEXT: usize = 200;

const AGENT_LOG: &str = "agent.log";
const VERIFY_LOG: &str = "verify.log";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RulesFile {
    #[serde(default)]
    tag: Vec<RuleDef>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleDef {
    name: String,
    files: Vec<String>,
    patterns: Vec<String>,
    #[serde(default)]
    exclude: Vec<String>,
    #[serde(default)]
    last_lines: Option<usize>,
    #[serde(default)]
    stop_reason: Option<Vec<StopReason>>,
    #[serde(default)]
    stage: Option<Vec<VerdictStage>>,
}

/// A compiled rule.
#[derive(Debug)]
pub struct Rule {
    name: String,
    files: Vec<String>,
    patterns: Vec<Regex>,
    exclude: Vec<Regex>,
    last_lines: Option<usize>,
    stop_reason: Option<Vec<StopReason>>,
    stage: Option<Vec<VerdictStage>>,
}

/// Parses and compiles a rules file.
pub fn parse_rules(text: &str) -> Result<Vec<Rule>, String> {
    let file: RulesFile = toml::from_str(text).map_err(|e| e.to_string())?;
    file.tag.into_iter().map(compile).collect()
}

fn compile(def: RuleDef) -> Result<Rule, String> {
    if def.name.trim().is_empty() {
        return Err("a [[tag]] has an empty name".into());
    }
    for f in &def.files {
        if f != AGENT_LOG && f != VERIFY_LOG {
            return Err(format!("tag {}: unknown file {f:?} (agent.log or verify.log)", def.name));
        }
    }
    let compile_all = |list: &[String]| {
        list.iter()
            .map(|p| Regex::new(p).map_err(|e| format!("tag {}: pattern {p:?}: {e}", def.name)))
            .collect::<Result<Vec<_>, _>>()
    };
    let patterns = compile_all(&def.patterns)?;
    let exclude = compile_all(&def.exclude)?;
    Ok(Rule {
        name: def.name,
        files: def.files,
        patterns,
        exclude,
        last_lines: def.last_lines,
        stop_reason: def.stop_reason,
        stage: def.stage,
    })
}

fn embedded() -> &'static [Rule] {
    static RULES: OnceLock<Vec<Rule>> = OnceLock::new();
    RULES.get_or_init(|| parse_rules(EMBEDDED_RULES).expect("rules/tags.toml is valid (tested)"))
}

/// The tags of a failed trial, from its logs and its record (stop reason,
/// verdict stage), by the embedded rules plus those of `CLEANROOM_TAG_RULES`.
pub fn tags(agent_log: &[u8], verify_log: &[u8], record: &TrialRecord) -> Vec<Tag> {
    let extra = std::env::var_os(RULES_ENV).filter(|p| !p.is_empty()).map(std::path::PathBuf::from);
    tags_with_extra(agent_log, verify_log, record, extra.as_deref())
}

/// [`tags`] with the extra rules file given rather than read from the
/// environment.
pub fn tags_with_extra(
    agent_log: &[u8],
    verify_log: &[u8],
    record: &TrialRecord,
    extra_rules: Option<&std::path::Path>,
) -> Vec<Tag> {
    let mut extra = Vec::new();
    let mut error = None;
    if let Some(path) = extra_rules {
        match std::fs::read_to_string(path).map_err(|e| e.to_string()).and_then(|t| parse_rules(&t)) {
            Ok(rules) => extra = rules,
            Err(e) => error = Some((path.display().to_string(), e)),
        }
    }
    let rules = embedded().iter().chain(extra.iter());
    let mut out = tags_with(rules, agent_log, verify_log, record.stop_reason, record.stage);
    if let Some((path, e)) = error {
        out.push(Tag {
            name: "rules_error".into(),
            evidence: vec![Evidence { file: path, line: 1, text: clip(&format!("{RULES_ENV}: {e}")) }],
        });
    }
    out
}

/// [`tags`] with the rules given.
pub fn tags_with<'a>(
    rules: impl IntoIterator<Item = &'a Rule>,
    agent_log: &[u8],
    verify_log: &[u8],
    stop_reason: Option<StopReason>,
    stage: VerdictStage,
) -> Vec<Tag> {
    let agent = lines(agent_log);
    let verify = lines(verify_log);
    let mut out: Vec<Tag> = Vec::new();
    for rule in rules {
        if let Some(allowed) = &rule.stop_reason {
            match stop_reason {
                Some(s) if allowed.contains(&s) => {}
                _ => continue,
            }
        }
        if let Some(allowed) = &rule.stage {
            if !allowed.contains(&stage) {
                continue;
            }
        }
        let mut found = Vec::new();
        for file in &rule.files {
            let log = if file == AGENT_LOG { &agent } else { &verify };
            let start = rule.last_lines.map_or(0, |n| log.len().saturating_sub(n));
            for (i, line) in log.iter().enumerate().skip(start) {
                if rule.patterns.iter().any(|p| p.is_match(line))
                    && !rule.exclude.iter().any(|p| p.is_match(line))
                {
                    found.push(Evidence { file: file.clone(), line: i as u64 + 1, text: clip(line) });
                }
            }
        }
        if found.is_empty() {
            continue;
        }
        let tag = match out.iter_mut().position(|t| t.name == rule.name) {
            Some(i) => &mut out[i],
            None => {
                out.push(Tag { name: rule.name.clone(), evidence: Vec::new() });
                out.last_mut().expect("just pushed")
            }
        };
        for e in found {
            if !tag.evidence.iter().any(|x| x.file == e.file && x.line == e.line) {
                tag.evidence.push(e);
            }
        }
    }
    for tag in &mut out {
        // Log order (agent.log first), then the last few: the ones nearest
        // where the trial ended.
        tag.evidence.sort_by_key(|e| (e.file != AGENT_LOG, e.line));
        let extra = tag.evidence.len().saturating_sub(MAX_EVIDENCE);
        tag.evidence.drain(..extra);
    }
    out
}

fn lines(bytes: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(bytes).lines().map(|l| l.strip_suffix('\r').unwrap_or(l).to_string()).collect()
}

/// Trimmed, control characters (escape sequences) dropped, cut to
/// [`MAX_TEXT`] characters.
fn clip(line: &str) -> String {
    let clean: String = line.chars().filter(|c| !c.is_control() || *c == '\t').collect();
    clean.trim().chars().take(MAX_TEXT).collect::<String>().trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn rec(stop: Option<StopReason>, stage: VerdictStage) -> TrialRecord {
        let mut r: TrialRecord =
            serde_json::from_str(include_str!("../tests/fixtures/logs/real-flaky-claims-done/result.json"))
                .unwrap();
        r.stop_reason = stop;
        r.stage = stage;
        r.tags.clear();
        r
    }

    fn names(agent: &str, verify: &str, stop: Option<StopReason>, stage: VerdictStage) -> Vec<String> {
        let mut n: Vec<String> = tags(agent.as_bytes(), verify.as_bytes(), &rec(stop, stage))
            .into_iter()
            .map(|t| t.name)
            .collect();
        n.sort();
        n
    }

    fn one(agent: &str, verify: &str) -> Vec<String> {
        names(agent, verify, Some(StopReason::Timeout), VerdictStage::Run)
    }

    #[test]
    fn embedded_rules_parse() {
        let rules = parse_rules(EMBEDDED_RULES).unwrap();
        let mut n: Vec<&str> = rules.iter().map(|r| r.name.as_str()).collect();
        n.dedup();
        assert_eq!(n, ["dependency_repair", "system_level", "legacy_compat", "network", "weaker_target"]);
    }

    #[test]
    fn dependency_repair_near_the_end_only() {
        assert_eq!(
            one("pip install foo\nERROR: No matching distribution found for foo\n", ""),
            ["dependency_repair"]
        );
        assert_eq!(one("apt-get install x\nE: Unable to locate package x\n", ""), ["dependency_repair"]);
        assert_eq!(one("error: linking with `cc` failed: exit status: 1\n", ""), ["dependency_repair"]);
        assert_eq!(one("main.o: undefined reference to `foo'\n", ""), ["dependency_repair"]);
        assert_eq!(one("make: *** [Makefile:3: all] Error 2\n", ""), ["dependency_repair"]);
        assert_eq!(one("npm ERR! code ERESOLVE\n", ""), ["dependency_repair"]);
        assert_eq!(one("CMake Error at CMakeLists.txt:3 (find_package):\n", ""), ["dependency_repair"]);
        assert_eq!(one("ModuleNotFoundError: No module named 'torch'\n", ""), ["dependency_repair"]);
        // Repaired long ago: 60 ordinary lines follow.
        let early = format!("npm ERR! code ERESOLVE\n{}", "ok\n".repeat(60));
        assert!(one(&early, "").is_empty());
        // Only agent.log counts for this tag.
        assert!(one("", "make: *** [Makefile:3: all] Error 2\n").is_empty());
        assert!(one("pip install foo\nSuccessfully installed foo-1.0\n", "").is_empty());
    }

    #[test]
    fn system_level() {
        assert_eq!(one("RuntimeError: CUDA error: out of memory\n", ""), ["system_level"]);
        assert_eq!(
            one("", "modprobe: FATAL: Module nvidia not found in directory /lib/modules/6.1\n"),
            ["system_level"]
        );
        assert_eq!(one("cat: /dev/nvidia0: No such file or directory\n", ""), ["system_level"]);
        assert_eq!(one("bash: nvidia-smi: command not found\n", ""), ["dependency_repair", "system_level"]);
        assert!(one("using the CPU; no GPU needed\nls /dev/null\n", "").is_empty());
    }

    #[test]
    fn legacy_compat() {
        assert_eq!(one("AttributeError: module 'numpy' has no attribute 'float'.\n", ""), ["legacy_compat"]);
        assert_eq!(
            one("", "SyntaxError: Missing parentheses in call to 'print'. Did you mean print(...)?\n"),
            ["legacy_compat"]
        );
        assert_eq!(one("", "/usr/bin/ld: b.o:(.bss+0x0): multiple definition of `x'; a.o:(.bss+0x0): first defined here\n"), ["legacy_compat"]);
        assert_eq!(
            one("", "Error: Rank mismatch in argument 'a' at (1) (rank-1 and scalar)\n"),
            ["legacy_compat"]
        );
        assert_eq!(
            one("", "a.h:2:9: error: ISO C++17 does not allow dynamic exception specifications\n"),
            ["legacy_compat"]
        );
        assert_eq!(one("", "Foo.java:3: error: package sun.misc does not exist\n"), ["legacy_compat"]);
        assert_eq!(
            one("ModuleNotFoundError: No module named 'distutils'\n", ""),
            ["dependency_repair", "legacy_compat"]
        );
        assert!(one("x = np.float64(1)\nprint('ok')\n", "").is_empty());
    }

    #[test]
    fn network() {
        assert_eq!(one("curl: (6) Could not resolve host: example.org\n", ""), ["network"]);
        assert_eq!(
            one("socket.gaierror: [Errno -3] Temporary failure in name resolution\n", ""),
            ["network"]
        );
        assert_eq!(one("ConnectionRefusedError: [Errno 111] Connection refused\n", ""), ["network"]);
        assert_eq!(
            one("ReadTimeoutError: HTTPSConnectionPool(host='x', port=443): Read timed out.\n", ""),
            ["network"]
        );
        // The verifier runs offline: its log does not count.
        assert!(one("", "curl: (6) Could not resolve host: example.org\n").is_empty());
        assert!(one("downloaded 3 files\n", "").is_empty());
    }

    #[test]
    fn weaker_target_needs_finish_early_stage_and_claim() {
        let claim = "running the build\nAll done, the results are reproduced.\n";
        let fin = Some(StopReason::Finished);
        assert_eq!(names(claim, "", fin, VerdictStage::Setup), ["weaker_target"]);
        assert_eq!(names(claim, "", fin, VerdictStage::None), ["weaker_target"]);
        assert_eq!(names(claim, "", fin, VerdictStage::Build), ["weaker_target"]);
        assert!(names(claim, "", fin, VerdictStage::Run).is_empty());
        assert!(names(claim, "", Some(StopReason::Timeout), VerdictStage::Setup).is_empty());
        assert!(names(claim, "", None, VerdictStage::None).is_empty());
        assert!(names("I could not get it to build.\n", "", fin, VerdictStage::Setup).is_empty());
        // The claim has to be among the last 20 lines.
        let early = format!("{claim}{}", "step\n".repeat(20));
        assert!(names(&early, "", fin, VerdictStage::Setup).is_empty());
        // pip's own "Successfully installed" is not the agent's claim.
        assert!(names("Successfully installed numpy-1.26.4\n", "", fin, VerdictStage::Setup).is_empty());
    }

    #[test]
    fn evidence_is_capped_numbered_and_trimmed() {
        let mut log = String::from("start\n");
        for i in 0..8 {
            log.push_str(&format!("   npm ERR! {i} {}\n", "x".repeat(300)));
        }
        let t = tags(log.as_bytes(), b"", &rec(Some(StopReason::Crash), VerdictStage::None));
        assert_eq!(t.len(), 1);
        let ev = &t[0].evidence;
        assert_eq!(ev.len(), MAX_EVIDENCE);
        assert_eq!(ev.iter().map(|e| e.line).collect::<Vec<_>>(), [5, 6, 7, 8, 9]);
        assert!(ev.iter().all(|e| e.file == "agent.log"
            && e.text.starts_with("npm ERR!")
            && e.text.chars().count() == MAX_TEXT));
        // Escape sequences do not reach the record.
        let t = tags(b"\x1b[31mnpm ERR! boom\x1b[0m\r\n", b"", &rec(None, VerdictStage::None));
        assert_eq!(t[0].evidence[0].text, "[31mnpm ERR! boom[0m");
    }

    #[test]
    fn extra_rules_extend_and_bad_ones_are_reported() {
        let dir = std::env::temp_dir().join(format!("classify-tags-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.toml");
        std::fs::write(&good, "[[tag]]\nname = \"conda\"\nfiles = [\"verify.log\"]\npatterns = ['PackagesNotFoundError']\n\n[[tag]]\nname = \"network\"\nfiles = [\"agent.log\"]\npatterns = ['(?i)proxy error']\n").unwrap();
        let r = rec(Some(StopReason::Crash), VerdictStage::None);
        let t = tags_with_extra(b"Proxy Error 502\n", b"PackagesNotFoundError: x\n", &r, Some(&good));
        let n: Vec<&str> = t.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(n, ["conda", "network"]);
        let bad = dir.join("bad.toml");
        std::fs::write(&bad, "[[tag]]\nname = \"x\"\nfiles = [\"agent.log\"]\npatterns = ['(']\n").unwrap();
        let t = tags_with_extra(b"npm ERR! x\n", b"", &r, Some(&bad));
        assert_eq!(
            t.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
            ["dependency_repair", "rules_error"]
        );
        let t = tags_with_extra(b"", b"", &r, Some(&dir.join("missing.toml")));
        assert_eq!(t[0].name, "rules_error");
        assert!(parse_rules("[[tag]]\nname = \"x\"\nfiles = [\"other.log\"]\npatterns = []\n").is_err());
        // Stop reasons and stages are result.json's names, and only those.
        let rule = |key: &str, value: &str| {
            parse_rules(&format!(
                "[[tag]]\nname = \"x\"\nfiles = [\"agent.log\"]\npatterns = []\n{key} = [\"{value}\"]\n"
            ))
        };
        assert!(rule("stop_reason", "crash").is_ok() && rule("stage", "setup").is_ok());
        let err = rule("stop_reason", "model_error").unwrap_err();
        assert!(err.contains("model_error") && err.contains("crash"), "{err}");
        let err = rule("stage", "deploy").unwrap_err();
        assert!(err.contains("deploy") && err.contains("results"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Logs of real failed trials (and three hand-made ones, see SOURCE in
    /// each directory), with the tags they must get.
    #[test]
    fn fixtures() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/logs");
        let cases: &[(&str, &[&str])] = &[
            ("real-nop-lirs-setup", &[]),
            ("real-mpi-naive", &["dependency_repair", "legacy_compat"]),
            ("real-salib-oracle", &["legacy_compat"]),
            ("real-node-explore", &["dependency_repair", "network"]),
            ("real-cargo-latest", &["dependency_repair"]),
            ("real-flaky-claims-done", &["weaker_target"]),
            ("real-ld-cannot-find", &["dependency_repair"]),
            ("real-deap-oracle", &["legacy_compat"]),
            ("hand-cuda", &["system_level"]),
            ("hand-pip-offline", &["dependency_repair", "network", "weaker_target"]),
            ("hand-py2-apt", &["dependency_repair", "legacy_compat"]),
        ];
        for (dir, want) in cases {
            let d = root.join(dir);
            let record = match std::fs::read(d.join("result.json")) {
                Ok(b) => serde_json::from_slice(&b).unwrap(),
                Err(_) => rec(Some(StopReason::Finished), VerdictStage::Setup),
            };
            let agent = std::fs::read(d.join("agent.log")).unwrap();
            let verify = std::fs::read(d.join("verify.log")).unwrap();
            let t = tags_with_extra(&agent, &verify, &record, None);
            let mut got: Vec<&str> = t.iter().map(|t| t.name.as_str()).collect();
            got.sort();
            assert_eq!(&got, want, "{dir}: {t:#?}");
            for tag in &t {
                assert!(!tag.evidence.is_empty() && tag.evidence.len() <= MAX_EVIDENCE, "{dir}");
                for e in &tag.evidence {
                    let log = if e.file == "agent.log" { &agent } else { &verify };
                    let line =
                        String::from_utf8_lossy(log).lines().nth(e.line as usize - 1).unwrap().to_string();
                    assert!(line.contains(e.text.as_str()), "{dir}: {e:?}");
                }
            }
        }
    }
}
