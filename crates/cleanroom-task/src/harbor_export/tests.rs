use std::fs;
use std::process::Command;

use super::*;
use crate::fetch::materialize_artifact;
use crate::harbor_import::{import_harbor, write as write_imported};
use crate::load::load_task;

/// The task of the CLI's export test: every kind of check, a mutation, a
/// `clean` glob, protected files, a paper.
fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/harbor-export/column-stats")
}

/// `task` exported into `dest`, its artifact materialized as a run does.
fn export(task: &Task, dest: &Path) -> Exported {
    let staged = tempfile::tempdir().unwrap();
    let artifact = staged.path().join("artifact");
    materialize_artifact(task, &staged.path().join("cache"), &artifact).unwrap();
    let exported = export_harbor(task, &artifact).unwrap();
    write(dest, &exported).unwrap();
    exported
}

#[test]
fn an_export_is_a_harbor_task_that_imports_back_and_loads() {
    let task = load_task(&fixture()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("column-stats-harbor");
    export(&task, &dest);
    let dockerfile = fs::read_to_string(dest.join("environment/Dockerfile")).unwrap();
    assert_eq!(
        dockerfile,
        "# Exported from the cleanroom task `column-stats`.\nFROM cleanroom/debian-12-minimal\n\
         WORKDIR /workspace/artifact\nCOPY artifact/ /workspace/artifact/\nCOPY paper/ /workspace/paper/\n"
    );
    for file in ["environment/artifact/stats.awk", "environment/paper/note.md", "tests/verify/probe.txt"] {
        assert!(dest.join(file).is_file(), "{file}");
    }
    assert!(!dest.join("tests/verify/checks.toml").exists(), "checks.toml's values stay in checks.json");
    let harbor: toml_edit::DocumentMut = fs::read_to_string(dest.join("task.toml")).unwrap().parse().unwrap();
    assert_eq!(harbor["version"].as_str(), Some("1.0"));
    assert_eq!(harbor["metadata"]["category"].as_str(), Some("scientific"));
    assert_eq!(harbor["verifier"]["timeout_sec"].as_float(), Some(120.0));
    assert_eq!(harbor["environment"]["allow_internet"].as_bool(), Some(false));
    let solve = fs::read_to_string(dest.join("solution/solve.sh")).unwrap();
    assert!(
        solve.contains("cd /workspace\n") && solve.ends_with("bash stats.sh data/values.txt\n"),
        "{solve}"
    );

    let back = tmp.path().join("column-stats");
    write_imported(&back, &import_harbor(&dest, "column-stats").unwrap()).unwrap();
    let again = load_task(&back).unwrap();
    assert_eq!(again.spec.artifact.dest, task.spec.artifact.dest);
    assert_eq!(again.spec.task.difficulty, task.spec.task.difficulty);
    assert_eq!(again.spec.agent.timeout_sec, task.spec.agent.timeout_sec);
    assert_eq!(again.spec.verify.timeout_sec, task.spec.verify.timeout_sec);
    let (env, was) = (&again.spec.environment, &task.spec.environment);
    assert_eq!(
        (env.cpus, env.memory_mb, env.disk_mb, env.network),
        (was.cpus, was.memory_mb, was.disk_mb, false)
    );
    assert_eq!(again.instruction, task.agent_instruction(), "the agent is told what cleanroom tells it");
    assert_eq!(
        fs::read(back.join("artifact/stats.awk")).unwrap(),
        fs::read(fixture().join("artifact/stats.awk")).unwrap()
    );
    assert_eq!(load_task(&dest).unwrap().verify.steps.len(), 1, "the export loads as a Harbor task");
}

/// A task whose Dockerfile builds its environment keeps it: the export's
/// Dockerfile is that one, then the artifact's copy, and it imports back
/// as a task that builds.
#[test]
fn a_built_environment_keeps_its_dockerfile() {
    let harbor = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/harbor/fix-script");
    let tmp = tempfile::tempdir().unwrap();
    let imported = tmp.path().join("fix-script");
    write_imported(&imported, &import_harbor(&harbor, "fix-script").unwrap()).unwrap();
    let task = load_task(&imported).unwrap();
    assert_eq!(task.spec.environment.build.as_deref(), Some("environment"));
    let dest = tmp.path().join("fix-script-harbor");
    export(&task, &dest);
    let original = fs::read_to_string(harbor.join("environment/Dockerfile")).unwrap();
    let dockerfile = fs::read_to_string(dest.join("environment/Dockerfile")).unwrap();
    assert_eq!(
        dockerfile,
        format!(
            "{}\n# Exported from the cleanroom task `fix-script`: its artifact.\nWORKDIR /app\nCOPY artifact/ /app/\n",
            original.trim_end()
        )
    );
    assert!(dest.join("environment/fib.sh").is_file() && dest.join("environment/artifact/fib.sh").is_file());
    let back = load_task(&dest).unwrap();
    assert_eq!(back.spec.environment.build.as_deref(), Some("environment"));
}

#[test]
fn the_notes_say_what_is_not_carried_over() {
    let task = load_task(&fixture()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let notes = export(&task, &tmp.path().join("out")).notes;
    assert_eq!(
        notes,
        [
            "verify/checks.toml: check `table 1 read the tree's stats.awk` is dropped: it asks whether \
             `stats.awk` was opened during `table 1`, which only a harness outside the environment sees",
            "verify: the pipeline runs and is judged inside the agent's environment (tests/checks.pl, with its \
             perl), not from outside it, and its files are not sealed read-only during the steps",
            "verify.network = false: Harbor's verifier has the network",
            "verify/checks.toml: processes the unmutated steps leave are not ended before the mutations",
        ]
    );
    let checks: Value =
        serde_json::from_slice(&fs::read(tmp.path().join("out/tests/checks.json")).unwrap()).unwrap();
    assert_eq!(checks["checks"].as_array().unwrap().len(), task.verify.checks.len() - 1);
    let protected: Vec<&str> =
        checks["protected"].as_array().unwrap().iter().map(|e| e["path"].as_str().unwrap()).collect();
    assert_eq!(protected, ["data", "data/values.txt"]);
}

#[test]
fn what_harbor_has_no_place_for_is_noted() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("odd");
    fs::create_dir_all(dir.join("verify")).unwrap();
    fs::write(dir.join("instruction.md"), "Do it.\n").unwrap();
    // An archive in the task: a source that is not `dir`, offline.
    let mut archive =
        tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast()));
    let mut header = tar::Header::new_gnu();
    header.set_size(3);
    header.set_mode(0o644);
    archive.append_data(&mut header, "src/main.c", &b"int"[..]).unwrap();
    fs::write(dir.join("src.tar.gz"), archive.into_inner().unwrap().finish().unwrap()).unwrap();
    fs::write(
        dir.join("task.toml"),
        "schema_version = 1\n[task]\ntitle = \"t\"\ndomain = \"ai\"\n\
         [artifact]\nsource = \"archive\"\npath = \"src.tar.gz\"\n[environment]\nmachine = true\n\
         [agent]\ntimeout_sec = 60\n[oracle]\ntimeout_sec = 30\n[verify]\nnetwork = true\n\
         [negative_control]\nreason = \"the numbers never held\"\n[substitutes]\ndebian = [\"sl\"]\n",
    )
    .unwrap();
    fs::write(
        dir.join("verify/checks.toml"),
        "[[step]]\nname = \"s\"\nrun = \"true\"\n[[check]]\nname = \"verbose\"\nfile = \"stdout:s\"\n\
         regex = '(?x) (a) b'\nequals = \"a\"\n",
    )
    .unwrap();
    let notes = export(&load_task(&dir).unwrap(), &tmp.path().join("out")).notes;
    assert_eq!(fs::read(tmp.path().join("out/environment/artifact/main.c")).unwrap(), b"int");
    assert_eq!(
        notes,
        [
            "artifact: source = \"archive\" was fetched now and is copied in as environment/artifact; the \
             Harbor task does not fetch it",
            "solution/setup.sh is missing: the Harbor task has no oracle",
            "verify/checks.toml: check `verbose` is dropped: its regex uses the flag x, which Perl does not \
             read the same",
            "verify: the pipeline runs and is judged inside the agent's environment (tests/checks.pl, with its \
             perl), not from outside it, and its files are not sealed read-only during the steps",
            "task.toml: environment.machine (a machine of its own) is not carried over",
            "task.toml: oracle.timeout_sec (30) is not carried over: Harbor's oracle has the agent's budget",
            "task.toml: [negative_control] is not carried over: Harbor counts its trials as any other's (the \
             numbers never held)",
            "task.toml: [substitutes] (the battery of `tasks check`) is not carried over",
        ]
    );
}

#[test]
fn a_dest_a_dockerfile_cannot_hold_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let mut task = load_task(&fixture()).unwrap();
    task.spec.artifact.dest = "/work space".into();
    let e = export_harbor(&task, &tmp.path().join("artifact")).unwrap_err();
    assert!(e.contains("task.toml: artifact.dest: \"/work space\" cannot be written in a Dockerfile"), "{e}");
}

// ---- the checker (harbor_checks.pl), on planted outputs

/// Planted bytes that make the file a symbolic link to the rest.
const LINK_TO: &[u8] = b"\0link to ";

/// How the checker judged each case, (passed, observed): a case is a
/// check's selector and comparison (checks.toml lines) and the file it
/// reads (`f<case number>`, unless the lines name another), or LINK_TO a
/// target. `stdout` is the standard output of the one step, `s`.
fn judged(cases: &[(&str, &[u8])], stdout: Option<&str>) -> Vec<(bool, String)> {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t");
    fs::create_dir_all(dir.join("artifact")).unwrap();
    fs::create_dir_all(dir.join("verify")).unwrap();
    fs::write(dir.join("instruction.md"), "Do it.\n").unwrap();
    fs::write(
        dir.join("task.toml"),
        "schema_version = 1\n[task]\ntitle = \"t\"\ndomain = \"ai\"\n[agent]\ntimeout_sec = 60\n",
    )
    .unwrap();
    let out = tmp.path().join("out");
    fs::create_dir_all(&out).unwrap();
    let mut checks = String::from("[[step]]\nname = \"s\"\nrun = \"true\"\n");
    for (i, (check, bytes)) in cases.iter().enumerate() {
        let file = if check.contains("file =") { String::new() } else { format!("file = \"f{i}\"\n") };
        checks.push_str(&format!("[[check]]\nname = \"c{i}\"\n{file}{check}\n"));
        match bytes.strip_prefix(LINK_TO) {
            Some(target) => {
                std::os::unix::fs::symlink(std::str::from_utf8(target).unwrap(), out.join(format!("f{i}")))
                    .unwrap()
            }
            None => fs::write(out.join(format!("f{i}")), bytes).unwrap(),
        }
    }
    fs::write(dir.join("verify/checks.toml"), checks).unwrap();
    let task = load_task(&dir).unwrap_or_else(|e| panic!("{e}"));
    let spec = pipeline_json(&task, Vec::new(), &mut Vec::new()).unwrap();
    fs::write(tmp.path().join("checks.json"), spec.to_string()).unwrap();
    fs::write(tmp.path().join("checks.pl"), CHECKER).unwrap();
    let stdouts = tmp.path().join("stdouts");
    fs::create_dir_all(&stdouts).unwrap();
    if let Some(text) = stdout {
        fs::write(stdouts.join("1"), text).unwrap();
    }
    let run = Command::new("perl")
        .arg(tmp.path().join("checks.pl"))
        .arg(tmp.path().join("checks.json"))
        .arg("--judge")
        .args([&out, &stdouts])
        .output()
        .unwrap();
    let log = String::from_utf8(run.stdout).unwrap();
    assert!(run.stderr.is_empty(), "{}", String::from_utf8_lossy(&run.stderr));
    // One entry per check, as verify.log writes it: values verbatim, line
    // breaks and all.
    let log = format!("\n{log}");
    let starts: Vec<usize> =
        log.match_indices("\nPASS c").chain(log.match_indices("\nFAIL c")).map(|(at, _)| at).collect();
    let results: Vec<(bool, String)> = (0..cases.len())
        .map(|i| {
            let at = ["\nPASS", "\nFAIL"].iter().find_map(|verdict| log.find(&format!("{verdict} c{i}: ")));
            let at = at.unwrap_or_else(|| panic!("c{i} not judged: {log}"));
            // Up to the line break before the next entry, or the log's last.
            let end = starts.iter().copied().filter(|s| *s > at).min().unwrap_or(log.len() - 1);
            let entry = &log[at + 1..end];
            let observed = entry.split_once(", observed ").unwrap().1;
            (entry.starts_with("PASS"), observed.to_string())
        })
        .collect();
    let all = results.iter().all(|(passed, _)| *passed);
    assert_eq!(run.status.success(), all, "exit 0 only when every check passes: {log}");
    results
}

/// Whether each case passed.
fn passes(cases: &[(&str, &str)]) -> Vec<bool> {
    let cases: Vec<(&str, &[u8])> = cases.iter().map(|(c, t)| (*c, t.as_bytes())).collect();
    judged(&cases, None).into_iter().map(|(passed, _)| passed).collect()
}

#[test]
fn numbers_pass_within_their_tolerance_and_fail_outside() {
    assert_eq!(
        passes(&[
            ("expect = 1.5", "1.5\n"),
            ("expect = 1.5", "  1.50 "),
            ("expect = 1.5", "1.5000001"),
            ("expect = 1.0\nabs_tol = 0.5", "1.5"),
            ("expect = 1.0\nabs_tol = 0.5", "0.5"),
            ("expect = 1.0\nabs_tol = 0.5", "1.5000001"),
            ("expect = 0.3\nabs_tol = 0.1", "0.4"),
            ("expect = 0.3\nabs_tol = 0.1", "0.4000001"),
            ("expect = 100\nrel_tol = 0.05", "105"),
            ("expect = 100\nrel_tol = 0.05", "105.0001"),
            ("expect = -100\nrel_tol = 0.05", "-95"),
            ("expect = -100\nrel_tol = 0.05", "-94.9"),
            ("expect = 1.23e-4\nrel_tol = 0.05", "1.29e-4"),
            ("expect = 1.23e-4\nrel_tol = 0.05", "1.30e-4"),
            ("expect = 10\nabs_tol = 0.01\nrel_tol = 0.1", "11"),
            ("expect = 10\nabs_tol = 0.01\nrel_tol = 0.1", "11.01"),
            ("expect = 1\nabs_tol = 1e300", "NaN"),
            ("expect = 1\nrel_tol = 0.5", "inf"),
            ("expect = 0\nabs_tol = 1", "1,5"),
            ("expect = 0\nabs_tol = 1", "0x1"),
            ("expect = 1000\nabs_tol = 1", "1_000"),
            ("expect = 0.5\nabs_tol = 0", ".5"),
        ]),
        [
            true, true, false, true, true, false, true, false, true, false, true, false, true, false, true,
            false, false, false, false, false, false, true
        ]
    );
}

#[test]
fn ranges_are_inclusive_and_nan_never_passes() {
    assert_eq!(
        passes(&[
            ("range = [0.0, 0.01]", "0"),
            ("range = [0.0, 0.01]", "0.01"),
            ("range = [0.0, 0.01]", "0.0100001"),
            ("range = [0.0, 0.01]", "-0.0000001"),
            ("range = [-1e308, 1e308]", "nan"),
            ("range = [-1e308, 1e308]", "-inf"),
        ]),
        [true, true, false, false, false, false]
    );
}

#[test]
fn json_pointers_select_and_say_what_they_found() {
    let doc = r#"{"n64": {"max_error": 1.25e-4, "count": "12"}, "list": [3, 4], "a/b": {"~": 7}}"#;
    let results = judged(
        &[
            ("json = \"/n64/max_error\"\nexpect = 1.23e-4\nrel_tol = 0.05", doc.as_bytes()),
            ("json = \"/list/1\"\nexpect = 4", doc.as_bytes()),
            ("json = \"/list/01\"\nexpect = 4", doc.as_bytes()),
            ("json = \"/n64/count\"\nexpect = 12", doc.as_bytes()),
            ("json = \"/a~1b/~0\"\nexpect = 7", doc.as_bytes()),
            ("json = \"/n64/missing\"\nexpect = 1", doc.as_bytes()),
            ("json = \"/list\"\nexpect = 1", doc.as_bytes()),
            ("json = \"/a\"\nexpect = 1", b"{not json"),
            ("json = \"/a\"\nexpect = 1", b"{\"a\": 1} 2"),
        ],
        None,
    );
    let passed: Vec<bool> = results.iter().map(|(p, _)| *p).collect();
    assert_eq!(passed, [true, true, false, true, true, false, false, false, false]);
    assert_eq!(results[5].1, "no match: nothing at \"/n64/missing\"");
    assert_eq!(results[6].1, "not a number: [3,4]");
    assert!(results[7].1.starts_with("not json: "), "{}", results[7].1);
}

/// `equals` sees a JSON value that is not a string as serde_json writes it.
#[test]
fn json_values_compare_as_serde_json_writes_them() {
    let numbers = [
        "0",
        "-0",
        "1",
        "1.0",
        "1.50",
        "100",
        "1E2",
        "-12",
        "0.1",
        "1e16",
        "1e15",
        "123456789012345678",
        "18446744073709551615",
        "18446744073709551616",
        "-9223372036854775808",
        "-9223372036854775809",
        "1e-5",
        "1e-6",
        "0.00001234",
        "1.5e-7",
        "5e-324",
        "1.7976931348623157e308",
        "9007199254740993",
        "0.30000000000000004",
        "123456.789",
        "6.62607015e-34",
        "2.5e+20",
        "-3.25e-9",
        "1e22",
        "4.35",
    ];
    // Across the decimal exponents and the edges of the layouts.
    let generated: Vec<String> = (-324..=308)
        .step_by(3)
        .map(|e| format!("1.2345678901234567e{e}"))
        .chain((-20..=25).map(|e| format!("-7e{e}")))
        .collect();
    let numbers: Vec<&str> = numbers.into_iter().chain(generated.iter().map(String::as_str)).collect();
    let mut doc = format!("{{\"numbers\": [{}], ", numbers.join(", "));
    doc.push_str(r#""b": true, "n": null, "s": {"z": "t\u00e9\n\"q\"\u0001", "a": [1, {"y": [], "x": {}}], "\u00e9": 0}}"#);
    let value: Value = serde_json::from_str(&doc).unwrap();
    let mut pointers: Vec<String> = (0..numbers.len()).map(|i| format!("/numbers/{i}")).collect();
    pointers.extend(["/b", "/n", "/s", "/s/a"].map(String::from));
    let cases: Vec<String> = pointers
        .iter()
        .map(|p| format!("json = \"{p}\"\nequals = {}", toml_string(&value.pointer(p).unwrap().to_string())))
        .collect();
    let cases: Vec<(&str, &[u8])> = cases.iter().map(|c| (c.as_str(), doc.as_bytes())).collect();
    for ((passed, observed), pointer) in judged(&cases, None).into_iter().zip(&pointers) {
        assert!(
            passed,
            "{pointer}: serde_json writes {}, the checker {observed}",
            value.pointer(pointer).unwrap()
        );
    }
}

#[test]
fn equals_is_verbatim() {
    assert_eq!(
        passes(&[
            ("equals = \"abc\\n\"", "abc\n"),
            ("equals = \"abc\"", "abc\n"),
            ("regex = 'v: (.*)'\nequals = \"x\"", "v: x "),
            ("json = \"/label\"\nequals = \"ok\"", r#"{"label": "ok"}"#),
            ("json = \"/label\"\nequals = '\"ok\"'", r#"{"label": "ok"}"#),
            ("equals = \"caf\u{e9}\"", "caf\u{e9}"),
        ]),
        [true, false, false, true, false, true]
    );
}

/// Perl's captures, on the checker's rewrite of each pattern, are the
/// first capture of Rust's first match.
#[test]
fn regexes_select_what_rust_selects() {
    let text = "step 1\nchecksum: 0252ff0a0004de61\nchecksum: ffffffffffffffff\nÉté 42 naïve\r\nend\n";
    let patterns = [
        r"^checksum: ([0-9a-f]{16})$",
        r"err=([0-9.e-]+)|(step) 1",
        r"(?i)(été) (\d+)",
        r"(\w+) 42",
        r"\<(n\w+)\b{end}",
        r"([[:alpha:]]+)\r$",
        r"(?s)(end.)",
        r"(.)$",
        r"^()$",
        r"(?m)(\p{Lu}\pL+)",
        r"([\x{c9}\u00E9]t\u{e9})",
        r"(?P<first>\d)\d",
        r"^(x)?step",
        r"(?i:CHECK)(sum)",
        r"missing: (.*)",
    ];
    let mut cases = Vec::new();
    let mut expected = Vec::new();
    for pattern in patterns {
        let re = regex::RegexBuilder::new(pattern).multi_line(true).build().unwrap();
        let found = re.captures(text).map(|c| c.get(1).map(|m| m.as_str().to_string()));
        let want = match &found {
            Some(Some(value)) => value.clone(),
            _ => "never".to_string(),
        };
        cases.push(format!(
            "file = \"stdout:s\"\nregex = {}\nequals = {}",
            toml_string(pattern),
            toml_string(&want)
        ));
        expected.push(match found {
            Some(Some(_)) => (true, want),
            Some(None) => (false, "no match: the first match did not set group 1".to_string()),
            None => (false, "no match".to_string()),
        });
    }
    let cases: Vec<(&str, &[u8])> = cases.iter().map(|c| (c.as_str(), &b""[..])).collect();
    for ((got, want), pattern) in judged(&cases, Some(text)).into_iter().zip(expected).zip(patterns) {
        assert_eq!(got, want, "{pattern}");
    }
}

const TABLE: &str = "N,error,time\n16,0.5,1\n64, 0.0012 ,2\n\"1,024\",\"0.0001\",3\n";

#[test]
fn csv_cells_are_found_by_row_and_header() {
    let results = judged(
        &[
            ("csv = { row = 0, column = \"error\" }\nexpect = 0.5", TABLE.as_bytes()),
            ("csv = { row = 1, column = \"error\" }\nexpect = 0.0012", TABLE.as_bytes()),
            ("csv = { row = 2, column = \"N\" }\nequals = \"1,024\"", TABLE.as_bytes()),
            ("csv = { row = 3, column = \"error\" }\nexpect = 0.5", TABLE.as_bytes()),
            ("csv = { row = { N = \"64\" }, column = \"error\" }\nrange = [0.0, 0.01]", TABLE.as_bytes()),
            ("csv = { row = { N = \"1,024\" }, column = \"time\" }\nexpect = 3", TABLE.as_bytes()),
            ("csv = { row = { N = \"128\" }, column = \"error\" }\nexpect = 0.5", TABLE.as_bytes()),
            ("csv = { row = 0, column = \"speed\" }\nexpect = 0.5", TABLE.as_bytes()),
            ("csv = { row = 0, column = \"time\" }\nexpect = 0.5", b"N,error,time\n16,0.5\n"),
            (
                "csv = { row = 0, column = \"error\", delimiter = \";\" }\nexpect = 0.25",
                b"N; error\n16;0.25\n",
            ),
            (
                "csv = { row = 1, column = \"b\" }\nequals = \"x\\\"y\\nz w\"",
                b"a,b\r\n\r\n1,2\r\n3,\"x\"\"y\nz\" w\n",
            ),
            ("csv = { row = 0, column = \"b\" }\nequals = \"\"", b"a,b\n1,"),
        ],
        None,
    );
    let passed: Vec<bool> = results.iter().map(|(p, _)| *p).collect();
    assert_eq!(passed, [true, true, true, false, true, true, false, false, false, true, true, true]);
    let quoted = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(&b"a,b\r\n\r\n1,2\r\n3,\"x\"\"y\nz\" w\n"[..])
        .records()
        .nth(1)
        .unwrap()
        .unwrap();
    assert_eq!(&quoted[1], "x\"y\nz w", "as the csv crate reads it");
    assert_eq!(results[3].1, "no match: no data row 3 (the file has 3 data rows)");
    assert_eq!(results[6].1, "no match: no row where N = \"128\"");
    assert_eq!(results[7].1, "no match: no column \"speed\" in the header");
    assert_eq!(results[8].1, "no match: data row 0 has no column \"time\"");
}

#[test]
fn exists_wants_a_regular_file_read_without_links() {
    let link = [LINK_TO, b"f0"].concat();
    let results = judged(
        &[
            ("exists = true", b"PNG"),
            ("file = \"gone\"\nexists = true", b""),
            ("file = \"gone\"\njson = \"/a\"\nexpect = 1", b""),
            ("exists = true", &link),
            ("file = \"stdout:s\"\nregex = '(\\d+) files'\nexpect = 3", b""),
        ],
        Some("3 files\n"),
    );
    assert_eq!(results[0], (true, "a regular file of 3 bytes".to_string()));
    assert_eq!(results[1], (false, "missing".to_string()));
    assert_eq!(results[2], (false, "missing".to_string()));
    assert_eq!(results[3], (false, "symlink in path".to_string()));
    assert_eq!(results[4], (true, "3".to_string()));
}
