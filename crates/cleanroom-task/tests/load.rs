mod common;

use std::fs;
use std::path::Path;

use cleanroom_task::{
    load_task, load_tasks, ArtifactSource, CheckFile, Comparison, CsvRow, Difficulty, Domain, GpuDriver,
    Selector, Stage,
};
use common::{assert_error, errors, fixtures, write_task, BASE, CHECK};

#[test]
fn full_task_parses_every_key() {
    let t = load_task(&fixtures().join("heat-2d")).unwrap();
    let s = &t.spec;
    assert_eq!(t.id, "heat-2d");
    assert_eq!(s.schema_version, 1);
    assert_eq!(s.task.id, "heat-2d");
    assert_eq!(s.task.title, "2-D heat equation solver, Table 2");
    assert_eq!(s.task.domain, Domain::Scientific);
    assert_eq!(s.task.difficulty, Difficulty::Hard);
    assert_eq!(s.task.languages, ["fortran", "python"]);
    assert!(s.task.legacy && !s.task.gpu && !s.task.qemu);
    assert_eq!(s.task.tags, ["lapack", "pde"]);
    assert_eq!(s.paper.title.as_deref(), Some("A Fast Solver for the Heat Equation"));
    assert_eq!(s.paper.venue.as_deref(), Some("SC"));
    assert_eq!(s.paper.year, Some(2019));
    assert_eq!(s.paper.url.as_deref(), Some("https://example.org/paper"));
    assert_eq!(s.artifact.source, ArtifactSource::Dir);
    assert_eq!(s.artifact.dest, "/workspace/heat");
    assert_eq!(s.environment.image, "debian-12-minimal");
    assert_eq!(s.environment.cpus, 4);
    assert_eq!(s.environment.memory_mb, 8192);
    assert_eq!(s.environment.disk_mb, 10240);
    assert!(!s.environment.network);
    assert_eq!(s.environment.gpus, 0);
    assert_eq!(s.agent.timeout_sec, 1800);
    let e = s.experiment.as_ref().unwrap();
    assert_eq!(e.command.as_deref(), Some("bash run_table2.sh"));
    assert_eq!(e.outputs, ["results/table2.csv"]);
    assert_eq!(s.oracle.timeout_sec, 600);
    assert_eq!(s.verify.timeout_sec, 300);
    assert!(s.verify.network);
    assert_eq!(s.verify.protected, ["eval/**", "data/*.csv"]);
    assert!(t.instruction.contains("reproduce Table 2"));
    assert_eq!(t.verify_dir(), t.dir.join("verify"));
    assert_eq!(t.solution_dir(), t.dir.join("solution"));
    assert_eq!(t.paper_dir(), Some(t.dir.join("paper")));
    assert_eq!(t.overlay_dir(), Some(t.dir.join("overlay")));
    assert_eq!(t.checks_path(), t.dir.join("verify/checks.toml"));
}

#[test]
fn full_task_steps_and_checks() {
    let t = load_task(&fixtures().join("heat-2d")).unwrap();
    let v = &t.verify;
    let stages: Vec<Stage> = v.steps.iter().map(|s| s.stage).collect();
    assert_eq!(stages, [Stage::Setup, Stage::Build, Stage::Run]);
    assert_eq!(v.steps[0].name, "environment");
    assert_eq!(v.steps[0].run, "python3 -c 'import numpy, scipy'");
    assert_eq!(v.steps[0].timeout_sec, Some(60));
    assert_eq!(v.steps[1].timeout_sec, None);
    assert!(v.steps[1].clean.is_empty());
    assert_eq!(v.steps[2].clean, ["results/**"]);

    let c = &v.checks;
    assert_eq!(c.len(), 5);
    assert_eq!(c[0].file, CheckFile::Path("table2.json".into()));
    assert!(matches!(&c[0].select, Some(Selector::Json(p)) if p == "/n64/max_error"));
    assert_eq!(c[0].compare, Comparison::Number { expect: 1.23e-4, abs_tol: None, rel_tol: Some(0.05) });

    assert_eq!(c[1].file, CheckFile::StepStdout("designated experiment".into()));
    let Some(Selector::Regex(re)) = &c[1].select else { panic!("regex") };
    let caps = re.captures("line one\nchecksum: 0252ff0a0004de61\n").unwrap();
    assert_eq!(&caps[1], "0252ff0a0004de61");
    assert!(re.is_match("x\nchecksum: 0123456789abcdef"), "multi-line mode");
    assert_eq!(c[1].compare, Comparison::Equals("0252ff0a0004de61".into()));

    let Some(Selector::Csv { row, column, delimiter }) = &c[2].select else { panic!("csv") };
    assert_eq!(row, &CsvRow::Match { column: "N".into(), text: "64".into() });
    assert_eq!(column, "error");
    assert_eq!(*delimiter, b',');
    assert_eq!(c[2].compare, Comparison::Range { lo: 0.0, hi: 0.01 });

    let Some(Selector::Csv { row, delimiter, .. }) = &c[3].select else { panic!("csv") };
    assert_eq!(row, &CsvRow::Index(0));
    assert_eq!(*delimiter, b'\t');
    assert_eq!(c[3].compare, Comparison::Number { expect: 3.0, abs_tol: Some(0.5), rel_tol: None });

    assert!(c[4].select.is_none());
    assert_eq!(c[4].compare, Comparison::Exists);
}

#[test]
fn minimal_task_gets_every_default() {
    let t = load_task(&fixtures().join("minimal")).unwrap();
    let s = &t.spec;
    assert_eq!(t.id, "minimal", "id defaults to the directory name");
    assert_eq!(s.task.difficulty, Difficulty::Medium);
    assert_eq!(s.task.domain, Domain::Ai);
    assert!(s.task.languages.is_empty() && s.task.tags.is_empty());
    assert!(!s.task.legacy && !s.task.gpu && !s.task.qemu);
    assert!(
        s.paper.title.is_none() && s.paper.venue.is_none() && s.paper.year.is_none() && s.paper.url.is_none()
    );
    assert_eq!(s.artifact.source, ArtifactSource::Dir);
    assert_eq!(s.artifact.dest, "/workspace/artifact");
    assert_eq!(s.environment.image, "debian-12-minimal");
    assert_eq!(s.environment.cpus, 2);
    assert_eq!(s.environment.memory_mb, 4096);
    assert_eq!(s.environment.disk_mb, 20480);
    assert!(s.environment.network);
    assert_eq!(s.environment.gpus, 0);
    assert_eq!(s.environment.gpu_driver, GpuDriver::Host);
    assert!(s.experiment.is_none());
    assert_eq!(s.oracle.timeout_sec, 600, "oracle timeout defaults to the agent's");
    assert_eq!(s.verify.timeout_sec, 900);
    assert!(!s.verify.network);
    assert!(s.verify.protected.is_empty());
    assert!(t.paper_dir().is_none());
    assert!(t.overlay_dir().is_none());
}

#[test]
fn other_sources_parse() {
    let tmp = tempfile::tempdir().unwrap();
    let sha = "ab".repeat(32);
    let git_rev = "0123456789abcdef0123456789ABCDEF01234567";
    let cases = [
        (
            format!("{BASE}[artifact]\nsource = \"archive\"\nurl = \"https://example.org/a.tar.gz\"\nsha256 = \"{sha}\"\n"),
            ArtifactSource::Archive { path: None, url: Some("https://example.org/a.tar.gz".into()), sha256: Some(sha.clone()) },
        ),
        (
            format!("{BASE}[artifact]\nsource = \"archive\"\npath = \"artifact/main.py\"\n"),
            ArtifactSource::Archive { path: Some("artifact/main.py".into()), url: None, sha256: None },
        ),
        (
            format!("{BASE}[artifact]\nsource = \"git\"\nurl = \"https://example.org/r.git\"\nrev = \"{git_rev}\"\n"),
            ArtifactSource::Git { url: "https://example.org/r.git".into(), rev: git_rev.to_lowercase() },
        ),
        (
            format!("{BASE}[artifact]\nsource = \"pypi-sdist\"\nrequirement = \"six==1.10.0\"\n"),
            ArtifactSource::PypiSdist { requirement: "six==1.10.0".into() },
        ),
        (
            format!("{BASE}[artifact]\nsource = \"crate\"\ncrate = \"itoa\"\nversion = \"0.4.8\"\n"),
            ArtifactSource::Crate { name: "itoa".into(), version: "0.4.8".into(), sha256: None },
        ),
        (
            format!(
                "{BASE}[artifact]\nsource = \"crate\"\ncrate = \"serde_json\"\nversion = \"1.0.0-rc.1\"\nsha256 = \"{}\"\n",
                sha.to_uppercase()
            ),
            ArtifactSource::Crate { name: "serde_json".into(), version: "1.0.0-rc.1".into(), sha256: Some(sha.clone()) },
        ),
        (
            format!("{BASE}[artifact]\nsource = \"debian-source\"\npackage = \"bzip2\"\nversion = \"1.0.8-5\"\n"),
            ArtifactSource::DebianSource { package: "bzip2".into(), version: "1.0.8-5".into(), mirror: None, sha256: None },
        ),
        (
            format!(
                "{BASE}[artifact]\nsource = \"debian-source\"\npackage = \"libpng1.6\"\nversion = \"1:1.6.39-2\"\nmirror = \"https://deb.example.org/debian/\"\nsha256 = \"{sha}\"\n"
            ),
            ArtifactSource::DebianSource {
                package: "libpng1.6".into(),
                version: "1:1.6.39-2".into(),
                mirror: Some("https://deb.example.org/debian".into()),
                sha256: Some(sha.clone()),
            },
        ),
    ];
    for (i, (toml, expected)) in cases.into_iter().enumerate() {
        let dir = write_task(tmp.path(), &format!("s{i}"), &toml, CHECK);
        let t = load_task(&dir).unwrap_or_else(|e| panic!("{toml}\n{e}"));
        assert_eq!(t.spec.artifact.source, expected);
    }
}

#[test]
fn steps_and_checks_as_inline_arrays_and_default_stage() {
    let checks = "step = [{ name = \"a\", run = \"true\" }]\ncheck = [{ name = \"c\", file = \"stdout:a\", regex = '(x)', equals = \"x\" }]\n";
    assert!(errors(BASE, checks).is_empty(), "{:?}", errors(BASE, checks));
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_task(tmp.path(), "t1", BASE, checks);
    let t = load_task(&dir).unwrap();
    assert_eq!(t.verify.steps[0].stage, Stage::Run);
}

// ---- task.toml errors ----

#[test]
fn unknown_keys_name_file_line_and_key() {
    let e = errors(&format!("{BASE}[environment]\ncpuz = 2\n"), CHECK);
    assert_error(&e, "task.toml", 8, "environment.cpuz", "did you mean `cpus`");
    let e = errors(&format!("\nbogus = 1\n{BASE}"), CHECK);
    assert_error(&e, "task.toml", 2, "bogus", "unknown key at the top level");
    let e = errors(&format!("{BASE}[tasks]\nx = 1\n"), CHECK);
    assert_error(&e, "task.toml", 7, "tasks", "did you mean `task`");
}

#[test]
fn harbor_keys_get_harbor_messages() {
    let toml = format!(
        "{BASE}[environment]\nallow_internet = true\nstorage_mb = 10240\ndocker_image = \"ubuntu\"\nbuild_timeout_sec = 600.0\nmemory = \"4G\"\n\
         [verifier]\ntimeout_sec = 120.0\n[metadata]\nauthor_name = \"x\"\n[solution]\nenv = {{}}\n"
    );
    let e = errors(&toml, CHECK);
    assert_error(&e, "task.toml", 8, "environment.allow_internet", "environment.network");
    assert_error(&e, "task.toml", 9, "environment.storage_mb", "environment.disk_mb");
    assert_error(&e, "task.toml", 10, "environment.docker_image", "environment.image");
    assert_error(&e, "task.toml", 11, "environment.build_timeout_sec", "Harbor's task format");
    assert_error(&e, "task.toml", 12, "environment.memory", "environment.memory_mb");
    assert_error(&e, "task.toml", 13, "verifier", "verify/checks.toml");
    assert_error(&e, "task.toml", 15, "metadata", "[task]");
    assert_error(&e, "task.toml", 17, "solution", "solution/setup.sh");
    for line in &e {
        assert!(line.contains("belongs to Harbor's task format"), "{line}");
    }

    let e = errors("schema_version = \"1.3\"\n[task]\nname = \"org/x\"\ntitle = \"t\"\ndomain = \"ai\"\n[agent]\ntimeout_sec = 60\nuser = \"agent\"\n", CHECK);
    assert_error(&e, "task.toml", 1, "schema_version", "Harbor's task format");
    assert_error(&e, "task.toml", 3, "task.name", "task.id");
    assert_error(&e, "task.toml", 8, "agent.user", "root");
    let e = errors(&format!("version = \"1.0\"\n{}", &BASE["schema_version = 1\n".len()..]), CHECK);
    assert_error(&e, "task.toml", 1, "version", "schema_version = 1");
}

#[test]
fn missing_required_keys() {
    let e = errors("[task]\ntitle = \"t\"\ndomain = \"ai\"\n[agent]\ntimeout_sec = 60\n", CHECK);
    assert_error(&e, "task.toml", 1, "schema_version", "missing");
    let e = errors("schema_version = 1\n[task]\n[agent]\ntimeout_sec = 60\n", CHECK);
    assert_error(&e, "task.toml", 2, "task.title", "missing");
    assert_error(&e, "task.toml", 2, "task.domain", "missing");
    let e = errors("schema_version = 1\n[task]\ntitle = \"t\"\ndomain = \"ai\"\n", CHECK);
    assert_error(&e, "task.toml", 1, "agent.timeout_sec", "missing");
    let e = errors("schema_version = 1\n[agent]\ntimeout_sec = 60\n", CHECK);
    assert_error(&e, "task.toml", 1, "task", "missing");
    let e = errors(&format!("{BASE}[oracle]\n"), CHECK);
    assert!(e.is_empty(), "{e:?}");
}

#[test]
fn wrong_types_and_values() {
    let toml = "schema_version = 2\n[task]\ntitle = 5\ndomain = \"biology\"\ndifficulty = \"extreme\"\nlanguages = [\"c\", 1]\nlegacy = \"yes\"\n\
                [environment]\ncpus = 0\nmemory_mb = \"4G\"\nnetwork = 1\n[agent]\ntimeout_sec = 120.0\n[paper]\nyear = \"2019\"\n";
    let e = errors(toml, CHECK);
    assert_error(&e, "task.toml", 1, "schema_version", "unsupported version 2");
    assert_error(&e, "task.toml", 3, "task.title", "expected a string, found the integer 5");
    assert_error(&e, "task.toml", 4, "task.domain", "expected one of \"ai\", \"systems\", \"scientific\"");
    assert_error(&e, "task.toml", 5, "task.difficulty", "\"easy\", \"medium\", \"hard\"");
    assert_error(&e, "task.toml", 6, "task.languages", "found an element that is the integer 1");
    assert_error(&e, "task.toml", 7, "task.legacy", "expected true or false");
    assert_error(&e, "task.toml", 9, "environment.cpus", "at least 1");
    assert_error(&e, "task.toml", 10, "environment.memory_mb", "expected an integer");
    assert_error(&e, "task.toml", 11, "environment.network", "true or false");
    assert_error(&e, "task.toml", 13, "agent.timeout_sec", "integer number of seconds");
    assert_error(&e, "task.toml", 15, "paper.year", "expected an integer");
    let e = errors(&format!("{BASE}[verify]\ntimeout_sec = 0\nprotected = \"eval/**\"\n"), CHECK);
    assert_error(&e, "task.toml", 8, "verify.timeout_sec", "at least 1");
    assert_error(&e, "task.toml", 9, "verify.protected", "expected a list of strings");
    let e = errors("schema_version = 1\ntask = 5\n[agent]\ntimeout_sec = 1\n", CHECK);
    assert_error(&e, "task.toml", 2, "task", "expected a table");
    let e = errors(&format!("{BASE}[environment]\ngpus = 1\ngpu_driver = \"cuda\"\n"), CHECK);
    assert_error(
        &e,
        "task.toml",
        9,
        "environment.gpu_driver",
        "unknown value \"cuda\"; expected one of \"host\", \"agent\"",
    );
}

#[test]
fn the_gpu_driver_can_be_left_to_the_agent() {
    let tmp = tempfile::tempdir().unwrap();
    let toml = format!("{BASE}[environment]\ngpus = 2\ngpu_driver = \"agent\"\n");
    let dir = write_task(tmp.path(), "fresh-vm", &toml, CHECK);
    let t = load_task(&dir).unwrap();
    assert_eq!((t.spec.environment.gpus, t.spec.environment.gpu_driver), (2, GpuDriver::Agent));
}

#[test]
fn task_ids() {
    let e = errors("schema_version = 1\n[task]\nid = \"Bad Id\"\ntitle = \"t\"\ndomain = \"ai\"\n[agent]\ntimeout_sec = 60\n", CHECK);
    assert_error(&e, "task.toml", 3, "task.id", "not a valid task id");
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_task(tmp.path(), "Bad_Dir", BASE, CHECK);
    let err = load_task(&dir).unwrap_err().to_string();
    assert!(err.contains("Bad_Dir/task.toml:2: task.id: the directory name \"Bad_Dir\""), "{err}");
    let ok =
        write_task(tmp.path(), "Also_Bad", &BASE.replace("[task]\n", "[task]\nid = \"fine-id\"\n"), CHECK);
    assert_eq!(load_task(&ok).unwrap().id, "fine-id");
    // A path that ends in `..`, as `.` does from inside the task, still
    // names the directory.
    let named = write_task(tmp.path(), "named-by-dir", BASE, CHECK);
    assert_eq!(load_task(&named.join("artifact/..")).unwrap().id, "named-by-dir");
}

#[test]
fn artifact_errors() {
    let sha = "ab".repeat(32);
    let e = errors(&format!("{BASE}[artifact]\nsource = \"svn\"\n"), CHECK);
    assert_error(&e, "task.toml", 8, "artifact.source", "unknown source \"svn\"");
    let e = errors(&format!("{BASE}[artifact]\ndest = \"workspace/a\"\n"), CHECK);
    assert_error(&e, "task.toml", 8, "artifact.dest", "absolute path");
    let e = errors(&format!("{BASE}[artifact]\nsource = \"archive\"\n"), CHECK);
    assert_error(&e, "task.toml", 7, "artifact.path", "missing");
    let e = errors(&format!("{BASE}[artifact]\nsource = \"archive\"\nurl = \"https://x/a.tgz\"\n"), CHECK);
    assert_error(&e, "task.toml", 7, "artifact.sha256", "missing");
    let e = errors(
        &format!("{BASE}[artifact]\nsource = \"archive\"\nurl = \"https://x/a.tgz\"\nsha256 = \"abc\"\n"),
        CHECK,
    );
    assert_error(&e, "task.toml", 10, "artifact.sha256", "64 hexadecimal digits");
    let e = errors(&format!("{BASE}[artifact]\nsource = \"archive\"\npath = \"a.tar.gz\"\n"), CHECK);
    assert_error(&e, "task.toml", 9, "artifact.path", "not a file in the task directory");
    let e = errors(&format!("{BASE}[artifact]\nsource = \"archive\"\npath = \"../a.tar.gz\"\n"), CHECK);
    assert_error(&e, "task.toml", 9, "artifact.path", "`..`");
    let e = errors(
        &format!(
            "{BASE}[artifact]\nsource = \"archive\"\npath = \"a\"\nurl = \"https://x\"\nsha256 = \"{sha}\"\n"
        ),
        CHECK,
    );
    assert_error(&e, "task.toml", 10, "artifact.url", "not both");
    let e = errors(
        &format!("{BASE}[artifact]\nsource = \"archive\"\nurl = \"ftp://x/a.tgz\"\nsha256 = \"{sha}\"\n"),
        CHECK,
    );
    assert_error(&e, "task.toml", 9, "artifact.url", "not an http, https or file url");
    let e = errors(
        &format!("{BASE}[artifact]\nsource = \"git\"\nurl = \"https://x/r.git\"\nrev = \"main\"\n"),
        CHECK,
    );
    assert_error(&e, "task.toml", 10, "artifact.rev", "not a full commit id");
    let e = errors(&format!("{BASE}[artifact]\nsource = \"git\"\n"), CHECK);
    assert_error(&e, "task.toml", 7, "artifact.url", "missing");
    assert_error(&e, "task.toml", 7, "artifact.rev", "missing");
    let e = errors(&format!("{BASE}[artifact]\nrev = \"{}\"\n", "a".repeat(40)), CHECK);
    assert_error(&e, "task.toml", 8, "artifact.rev", "applies to source = \"git\"");
    let e =
        errors(&format!("{BASE}[artifact]\nsource = \"pypi-sdist\"\nrequirement = \"numpy>=1.0\"\n"), CHECK);
    assert_error(&e, "task.toml", 9, "artifact.requirement", "name==version");
    let e = errors(&format!("{BASE}[artifact]\nsource = \"pypi-sdist\"\n"), CHECK);
    assert_error(&e, "task.toml", 7, "artifact.requirement", "missing");

    // source = "dir" needs artifact/.
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_task(tmp.path(), "t1", BASE, CHECK);
    fs::remove_dir_all(dir.join("artifact")).unwrap();
    let err = load_task(&dir).unwrap_err().to_string();
    assert!(err.contains("t1/task.toml:1: artifact.source: source = \"dir\""), "{err}");
}

#[test]
fn crate_and_debian_source_errors() {
    let e = errors(&format!("{BASE}[artifact]\nsource = \"svn\"\n"), CHECK);
    assert_error(&e, "task.toml", 8, "artifact.source", "\"crate\", \"debian-source\"");

    // crate
    let e = errors(&format!("{BASE}[artifact]\nsource = \"crate\"\n"), CHECK);
    assert_error(
        &e,
        "task.toml",
        7,
        "artifact.crate",
        "missing; source = \"crate\" needs `crate = \"name\"`",
    );
    assert_error(&e, "task.toml", 7, "artifact.version", "missing");
    let e = errors(&format!("{BASE}[artifact]\nsource = \"crate\"\ncrate = 5\nversion = \"1.0.0\"\n"), CHECK);
    assert_error(&e, "task.toml", 9, "artifact.crate", "expected a string, found the integer 5");
    let e = errors(
        &format!("{BASE}[artifact]\nsource = \"crate\"\ncrate = \"1bad\"\nversion = \"^1.0\"\n"),
        CHECK,
    );
    assert_error(&e, "task.toml", 9, "artifact.crate", "is not a crate name");
    assert_error(&e, "task.toml", 10, "artifact.version", "is not an exact version");
    let e = errors(
        &format!("{BASE}[artifact]\nsource = \"crate\"\ncrate = \"itoa\"\nversion = \"0.4.8\"\nsha256 = \"xyz\"\nyanked_ok = true\n"),
        CHECK,
    );
    assert_error(&e, "task.toml", 11, "artifact.sha256", "64 hexadecimal digits");
    assert_error(&e, "task.toml", 12, "artifact.yanked_ok", "unknown key in [artifact]");
    let e = errors(
        &format!("{BASE}[artifact]\nsource = \"crate\"\ncrate = \"itoa\"\nversion = \"0.4.8\"\npackage = \"x\"\nmirror = \"http://m/debian\"\n"),
        CHECK,
    );
    assert_error(
        &e,
        "task.toml",
        11,
        "artifact.package",
        "applies to source = \"debian-source\", but this artifact's source is \"crate\"",
    );
    assert_error(&e, "task.toml", 12, "artifact.mirror", "applies to source = \"debian-source\"");
    let rev = "a".repeat(40);
    let e = errors(
        &format!("{BASE}[artifact]\nsource = \"git\"\nurl = \"https://x/r.git\"\nrev = \"{rev}\"\nversion = \"1\"\nsha256 = \"{}\"\ncrate = \"c\"\n", "b".repeat(64)),
        CHECK,
    );
    assert_error(
        &e,
        "task.toml",
        11,
        "artifact.version",
        "applies to source = \"crate\" or \"debian-source\"",
    );
    assert_error(
        &e,
        "task.toml",
        12,
        "artifact.sha256",
        "applies to source = \"archive\", \"crate\" or \"debian-source\"",
    );
    assert_error(&e, "task.toml", 13, "artifact.crate", "applies to source = \"crate\", but");

    // debian-source
    let e = errors(&format!("{BASE}[artifact]\nsource = \"debian-source\"\n"), CHECK);
    assert_error(
        &e,
        "task.toml",
        7,
        "artifact.package",
        "missing; source = \"debian-source\" needs `package",
    );
    assert_error(
        &e,
        "task.toml",
        7,
        "artifact.version",
        "missing; source = \"debian-source\" needs `version`",
    );
    let e = errors(
        &format!("{BASE}[artifact]\nsource = \"debian-source\"\npackage = \"Bzip2\"\nversion = \"latest\"\nmirror = \"ftp://m/debian\"\nrequirement = \"a==1\"\n"),
        CHECK,
    );
    assert_error(&e, "task.toml", 9, "artifact.package", "is not a Debian source package name");
    assert_error(&e, "task.toml", 10, "artifact.version", "is not a Debian version");
    assert_error(&e, "task.toml", 11, "artifact.mirror", "not an http, https or file url");
    assert_error(&e, "task.toml", 12, "artifact.requirement", "applies to source = \"pypi-sdist\"");
    let e = errors(
        &format!(
            "{BASE}[artifact]\nsource = \"debian-source\"\npackage = \"sl\"\nversion = 5\nmirror = true\n"
        ),
        CHECK,
    );
    assert_error(&e, "task.toml", 10, "artifact.version", "expected a string, found the integer 5");
    assert_error(&e, "task.toml", 11, "artifact.mirror", "expected a string, found the boolean true");
}

#[test]
fn experiment_and_glob_errors() {
    let e = errors(&format!("{BASE}[experiment]\ncommand = 1\noutputs = [\"../x\", \"/abs\"]\n"), CHECK);
    assert_error(&e, "task.toml", 8, "experiment.command", "expected a string");
    assert_error(&e, "task.toml", 9, "experiment.outputs", "`..`");
    assert_error(&e, "task.toml", 9, "experiment.outputs", "relative path");
    let e = errors(&format!("{BASE}[verify]\nprotected = [\n  \"eval/**\",\n  \"data/[x\",\n]\n"), CHECK);
    assert_error(&e, "task.toml", 10, "verify.protected", "invalid glob");
}

#[test]
fn syntax_errors_have_lines() {
    let e = errors(&format!("{BASE}[environment]\ncpus = = 2\n"), CHECK);
    assert!(e.iter().any(|l| l.starts_with("t1/task.toml:8: invalid toml:")), "{e:?}");
    let e = errors(BASE, "[[check]]\nname = \"a\"\nname = \"b\"\n");
    assert!(e.iter().any(|l| l.starts_with("t1/verify/checks.toml:3: invalid toml:")), "{e:?}");
}

#[test]
fn required_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_task(tmp.path(), "t1", BASE, CHECK);
    fs::remove_file(dir.join("instruction.md")).unwrap();
    fs::remove_file(dir.join("verify/checks.toml")).unwrap();
    fs::create_dir_all(dir.join("tests")).unwrap();
    fs::write(dir.join("tests/test.sh"), "#!/bin/sh\n").unwrap();
    let err = load_task(&dir).unwrap_err().to_string();
    assert!(err.contains("t1/instruction.md: missing"), "{err}");
    assert!(err.contains("t1/verify/checks.toml: missing"), "{err}");
    assert!(err.contains("tests/test.sh belongs to Harbor's task format"), "{err}");
    fs::write(dir.join("instruction.md"), " \n").unwrap();
    let err = load_task(&dir).unwrap_err().to_string();
    assert!(err.contains("t1/instruction.md: is empty"), "{err}");
    fs::remove_file(dir.join("task.toml")).unwrap();
    let err = load_task(&dir).unwrap_err().to_string();
    assert!(err.contains("t1/task.toml: missing"), "{err}");
}

// ---- checks.toml errors ----

const STEP: &str = "[[step]]\nname = \"run\"\nstage = \"run\"\nrun = \"true\"\n";

#[test]
fn comparisons_exactly_one() {
    let e = errors(BASE, "[[check]]\nname = \"a\"\nfile = \"o\"\n");
    assert_error(&e, "verify/checks.toml", 1, "check", "has no comparison");
    let e = errors(BASE, "[[check]]\nname = \"a\"\nfile = \"o\"\nexpect = 1\nequals = \"1\"\n");
    assert_error(
        &e,
        "verify/checks.toml",
        5,
        "check.equals",
        "exactly one comparison, found `expect` and `equals`",
    );
    let e = errors(BASE, "[[check]]\nname = \"a\"\nfile = \"o\"\nrange = [0, 1]\nexists = true\n");
    assert_error(&e, "verify/checks.toml", 5, "check.exists", "exactly one comparison");
}

#[test]
fn comparison_values() {
    let c = |body: &str| errors(BASE, &format!("[[check]]\nname = \"a\"\nfile = \"o\"\n{body}"));
    assert_error(&c("expect = \"x\"\n"), "verify/checks.toml", 4, "check.expect", "expected a number");
    assert_error(&c("expect = nan\n"), "verify/checks.toml", 4, "check.expect", "finite");
    assert_error(
        &c("expect = 1\nrel_tol = -0.1\n"),
        "verify/checks.toml",
        5,
        "check.rel_tol",
        "must not be negative",
    );
    assert_error(
        &c("equals = \"x\"\nabs_tol = 1\n"),
        "verify/checks.toml",
        5,
        "check.abs_tol",
        "applies only to `expect`",
    );
    assert_error(&c("range = [1]\n"), "verify/checks.toml", 4, "check.range", "two finite numbers");
    assert_error(&c("range = [2, 1]\n"), "verify/checks.toml", 4, "check.range", "above upper bound");
    assert_error(&c("range = [\"a\", 1]\n"), "verify/checks.toml", 4, "check.range", "two finite numbers");
    assert_error(&c("equals = 5\n"), "verify/checks.toml", 4, "check.equals", "expected a string");
    assert_error(&c("exists = false\n"), "verify/checks.toml", 4, "check.exists", "only `exists = true`");
    assert_error(
        &c("exists = true\njson = \"/a\"\n"),
        "verify/checks.toml",
        4,
        "check.exists",
        "takes no selector",
    );
    assert!(c("expect = 3\n").is_empty());
    assert!(c("range = [0, 1.5]\n").is_empty());
}

#[test]
fn selectors() {
    let c = |body: &str| errors(BASE, &format!("{STEP}[[check]]\nname = \"a\"\nfile = \"o\"\n{body}"));
    assert_error(
        &c("json = \"/a\"\nregex = '(x)'\nexpect = 1\n"),
        "verify/checks.toml",
        9,
        "check.regex",
        "at most one selector",
    );
    assert_error(
        &c("regex = '(x'\nequals = \"x\"\n"),
        "verify/checks.toml",
        8,
        "check.regex",
        "invalid regex",
    );
    assert_error(
        &c("regex = 'x'\nequals = \"x\"\n"),
        "verify/checks.toml",
        8,
        "check.regex",
        "no capture group",
    );
    assert_error(&c("json = \"a/b\"\nexpect = 1\n"), "verify/checks.toml", 8, "check.json", "rfc 6901");
    assert_error(&c("json = \"/a~2\"\nexpect = 1\n"), "verify/checks.toml", 8, "check.json", "'~'");
    assert_error(
        &c("csv = { column = \"e\" }\nexpect = 1\n"),
        "verify/checks.toml",
        8,
        "check.csv.row",
        "missing",
    );
    assert_error(
        &c("csv = { row = 0 }\nexpect = 1\n"),
        "verify/checks.toml",
        8,
        "check.csv.column",
        "missing",
    );
    assert_error(
        &c("csv = { row = 0, column = \"e\", delimiter = \";;\" }\nexpect = 1\n"),
        "verify/checks.toml",
        8,
        "check.csv.delimiter",
        "one ascii character",
    );
    assert_error(
        &c("csv = { row = { N = 64 }, column = \"e\" }\nexpect = 1\n"),
        "verify/checks.toml",
        8,
        "check.csv.row",
        "must be a string",
    );
    assert_error(
        &c("csv = { row = { N = \"1\", M = \"2\" }, column = \"e\" }\nexpect = 1\n"),
        "verify/checks.toml",
        8,
        "check.csv.row",
        "exactly one",
    );
    assert_error(
        &c("csv = { row = -1, column = \"e\" }\nexpect = 1\n"),
        "verify/checks.toml",
        8,
        "check.csv.row",
        "at least 0",
    );
    assert_error(
        &c("csv = { row = 0, column = \"e\", sep = \",\" }\nexpect = 1\n"),
        "verify/checks.toml",
        8,
        "check.csv.sep",
        "unknown key in [check.csv]",
    );
    // A sub-table works like an inline one.
    assert!(c("expect = 1\n[check.csv]\nrow = 2\ncolumn = \"e\"\n").is_empty());
}

#[test]
fn check_files() {
    let c = |file: &str| {
        errors(BASE, &format!("{STEP}[[check]]\nname = \"a\"\nfile = \"{file}\"\nexists = true\n"))
    };
    assert_error(&c("/etc/passwd"), "verify/checks.toml", 7, "check.file", "relative path");
    assert_error(&c("a/../../b"), "verify/checks.toml", 7, "check.file", "`..`");
    assert_error(
        &c("stdout:nope"),
        "verify/checks.toml",
        7,
        "check.file",
        "no step is named \"nope\"; the steps are \"run\"",
    );
    assert!(c("stdout:run").is_empty());
    assert!(c("sub/out.json").is_empty());
    let e = errors(BASE, "[[check]]\nname = \"a\"\nexists = true\n");
    assert_error(&e, "verify/checks.toml", 1, "check.file", "missing");
}

#[test]
fn access_checks() {
    let c = |body: &str| errors(BASE, &format!("{STEP}[[check]]\nname = \"a\"\n{body}"));
    assert!(c("executed = \"bin/*\"\nstep = \"run\"\n").is_empty());
    assert!(c("opened = \"data/input.txt\"\nstep = \"run\"\n").is_empty());
    assert_error(
        &c("opened = \"x\"\nstep = \"nope\"\n"),
        "verify/checks.toml",
        8,
        "check.step",
        "no step is named \"nope\"",
    );
    assert_error(&c("opened = \"x\"\n"), "verify/checks.toml", 5, "check.step", "missing");
    assert_error(
        &c("opened = \"x\"\nexecuted = \"y\"\nstep = \"run\"\n"),
        "verify/checks.toml",
        8,
        "check.executed",
        "one of `opened` and `executed`",
    );
    assert_error(
        &c("opened = \"../x\"\nstep = \"run\"\n"),
        "verify/checks.toml",
        7,
        "check.opened",
        "must not contain `..`",
    );
    assert_error(
        &c("opened = \"x\"\nstep = \"run\"\nexists = true\n"),
        "verify/checks.toml",
        9,
        "check.exists",
        "takes only `name` and `step`",
    );
    assert_error(
        &c("file = \"o\"\nexists = true\nstep = \"run\"\n"),
        "verify/checks.toml",
        9,
        "check.step",
        "applies only to",
    );
}

#[test]
fn steps() {
    let e = errors(BASE, "[[step]]\nname = \"a\"\nstage = \"run\"\nrun = \"x\"\n[[step]]\nname = \"b\"\nstage = \"build\"\nrun = \"y\"\n");
    assert_error(&e, "verify/checks.toml", 7, "step.stage", "must not decrease");
    let e = errors(BASE, "[[step]]\nname = \"a\"\nrun = \"x\"\n[[step]]\nname = \"a\"\nrun = \"y\"\n");
    assert_error(&e, "verify/checks.toml", 5, "step.name", "duplicate step name \"a\" (first at line 1)");
    let e = errors(BASE, "[[step]]\nname = \"a\"\nstage = \"test\"\nrun = \"x\"\n");
    assert_error(&e, "verify/checks.toml", 3, "step.stage", "expected \"setup\", \"build\" or \"run\"");
    let e = errors(BASE, "[[step]]\nname = \"a\"\n");
    assert_error(&e, "verify/checks.toml", 1, "step.run", "missing");
    let e =
        errors(BASE, "[[step]]\nname = \"a\"\nrun = \"x\"\ntimeout_sec = -5\nclean = [\"[\"]\nenv = {}\n");
    assert_error(&e, "verify/checks.toml", 4, "step.timeout_sec", "at least 1");
    assert_error(&e, "verify/checks.toml", 5, "step.clean", "invalid glob");
    assert_error(&e, "verify/checks.toml", 6, "step.env", "unknown key in [step]");
    let e = errors(BASE, "[[check]]\nname = \"a\"\nfile = \"o\"\nexists = true\n[[check]]\nname = \"a\"\nfile = \"p\"\nexists = true\n");
    assert_error(&e, "verify/checks.toml", 6, "check.name", "duplicate check name");
    let e = errors(BASE, "[[check]]\nname = \"a\"\nfile = \"o\"\nexpect = 1\ntolerance = 0.1\n");
    assert_error(&e, "verify/checks.toml", 5, "check.tolerance", "abs_tol");
    let e = errors(BASE, "");
    assert_error(&e, "verify/checks.toml", 1, "check", "no [[step]] and no [[check]]");
    let e = errors(BASE, "step = 3\n[verifier]\n");
    assert_error(&e, "verify/checks.toml", 1, "step", "expected [[step]] tables");
    assert_error(&e, "verify/checks.toml", 2, "verifier", "Harbor");
}

#[test]
fn no_input_panics() {
    let tomls = [
        "",
        "\0",
        "[",
        "a",
        "x = [",
        "[[task]]\n",
        "task = []\n",
        "schema_version = 1\n[task]\ntitle = []\n",
        "schema_version = 99999999999999999999\n",
        "schema_version = -1\n[task.x.y]\n",
        "[artifact]\nsource = []\n",
        "[environment]\ncpus = 9999999999999\n",
        "[[check]]\n[[check]]\n",
        "check = [1, 2]\n",
        "[[check]]\ncsv = 5\n",
        "[[check]]\ncsv = { row = [] }\n",
        "[[check]]\nrange = [\"a\", \"b\", \"c\"]\n",
        "[[check]]\nregex = '((((((((((a'\n",
        "[[step]]\nstage = 1\n",
        "[[check]]\nfile = \"stdout:\"\n",
        "[[check]]\njson = \"~\"\nexpect = inf\n",
        "a.b.c.d = 1\n",
        "[verify]\nprotected = [[1]]\n",
        "\u{feff}schema_version = 1\n",
        "k = \"\u{202e}\"\n",
    ];
    for t in tomls {
        for (task, checks) in [(t, CHECK), (BASE, t)] {
            let _ = errors(task, checks);
        }
        let both = errors(t, t);
        assert!(!both.is_empty(), "{t:?} must not load");
    }
    // Invalid UTF-8.
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_task(tmp.path(), "t1", BASE, CHECK);
    fs::write(dir.join("task.toml"), b"\xff\xfe").unwrap();
    let err = load_task(&dir).unwrap_err().to_string();
    assert!(err.contains("task.toml: is not valid utf-8"), "{err}");
}

#[test]
fn errors_are_lowercase_fragments() {
    let e = errors(
        "schema_version = 1\n[task]\ntitle = 1\n[environment]\nallow_internet = 1\n",
        "[[check]]\nname = 1\n",
    );
    assert!(e.len() >= 4, "{e:?}");
    for line in &e {
        let msg = line.rsplit(": ").next().unwrap();
        let first = line.split(": ").nth(2).or(line.split(": ").nth(1)).unwrap();
        assert!(!first.starts_with(char::is_uppercase), "{line}");
        assert!(!msg.ends_with('.'), "{line}");
    }
}

// ---- load_tasks ----

#[test]
fn load_tasks_from_a_directory_sorted_by_id() {
    let tasks = load_tasks(&[fixtures()]).unwrap();
    let ids: Vec<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["heat-2d", "minimal"]);
    let one = load_tasks(&[fixtures().join("minimal")]).unwrap();
    assert_eq!(one.len(), 1);

    let tmp = tempfile::tempdir().unwrap();
    write_task(tmp.path(), "b-dir", &BASE.replace("[task]\n", "[task]\nid = \"a-task\"\n"), CHECK);
    write_task(tmp.path(), "a-dir", &BASE.replace("[task]\n", "[task]\nid = \"z-task\"\n"), CHECK);
    fs::create_dir(tmp.path().join("not-a-task")).unwrap();
    let tasks = load_tasks(&[tmp.path().to_path_buf()]).unwrap();
    let ids: Vec<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["a-task", "z-task"]);
}

#[test]
fn load_tasks_collects_errors_of_every_task() {
    let tmp = tempfile::tempdir().unwrap();
    write_task(tmp.path(), "bad1", &format!("{BASE}oops = 1\n"), CHECK);
    write_task(tmp.path(), "bad2", BASE, "");
    write_task(tmp.path(), "good", BASE, CHECK);
    let err = load_tasks(&[tmp.path().to_path_buf(), tmp.path().join("missing")]).unwrap_err();
    let text = err.to_string();
    assert_eq!(err.len(), 3, "{text}");
    assert!(text.contains("bad1/task.toml:"), "{text}");
    assert!(text.contains("bad2/verify/checks.toml:1: check:"), "{text}");
    assert!(text.contains("missing: no such directory"), "{text}");
}

#[test]
fn duplicate_ids_are_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let with_id = BASE.replace("[task]\n", "[task]\nid = \"same\"\n");
    write_task(tmp.path(), "one", &with_id, CHECK);
    write_task(tmp.path(), "two", &with_id, CHECK);
    let err = load_tasks(&[tmp.path().to_path_buf()]).unwrap_err().to_string();
    assert!(err.contains("task.id: duplicate task id \"same\""), "{err}");
    let empty = tempfile::tempdir().unwrap();
    let err = load_tasks(&[empty.path().to_path_buf()]).unwrap_err().to_string();
    assert!(err.contains("holds no task.toml"), "{err}");
}

#[test]
fn mutations_and_mutated_steps_go_together() {
    const MUTATION: &str = "[[mutation]]\nfile = \"main.py\"\nreplace = \"print(1)\"\nwith = \"print(2)\"\n";
    const MUTATED: &str = "[[step]]\nname = \"again\"\nrun = \"true\"\nmutated = true\n";
    let ok = format!("{STEP}{MUTATED}{MUTATION}{CHECK}");
    assert_eq!(errors(BASE, &ok), Vec::<String>::new());
    let e = errors(BASE, &format!("{STEP}{MUTATED}{CHECK}"));
    assert_error(&e, "verify/checks.toml", 1, "step.mutated", "defines no [[mutation]]");
    let e = errors(BASE, &format!("{STEP}{CHECK}{MUTATION}"));
    assert_error(&e, "verify/checks.toml", 10, "mutation.file", "without any `mutated = true` step");
    let e = errors(BASE, &format!("{MUTATED}{STEP}{MUTATION}{CHECK}"));
    assert_error(&e, "verify/checks.toml", 6, "step.name", "mutated steps come last");
    let bad = |body: &str| errors(BASE, &format!("{STEP}{MUTATED}[[mutation]]\n{body}{CHECK}"));
    let e = bad("file = \"../etc/passwd\"\nreplace = \"a\"\nwith = \"b\"\n");
    assert_error(&e, "verify/checks.toml", 10, "mutation.file", "not a plain relative path");
    let e = bad("file = \"main.py\"\nreplace = \"a\"\nwith = \"a\"\n");
    assert_error(&e, "verify/checks.toml", 12, "mutation.with", "would change nothing");
}

// ---- Harbor's tasks ----

/// A Harbor task loads as it is, from a copy imported once per state of
/// its files: an edit makes a new copy.
#[test]
fn a_harbor_task_loads_as_it_is() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("hello");
    write_harbor_task(&dir);
    let task = load_task(&dir).unwrap();
    assert_eq!(task.id, "hello");
    assert_eq!(task.spec.artifact.dest, "/srv");
    assert_eq!(task.spec.agent.timeout_sec, 91);
    assert_eq!(task.verify.steps.len(), 1);
    assert_eq!(fs::read_to_string(task.dir.join("artifact/a.txt")).unwrap(), "a\n");
    assert_eq!(load_task(&dir).unwrap().dir, task.dir, "the same files, the same copy");
    fs::write(dir.join("tests/test.sh"), "echo 0 > /logs/verifier/reward.txt\n").unwrap();
    let edited = load_task(&dir).unwrap();
    assert_ne!(edited.dir, task.dir);
    assert!(fs::read_to_string(edited.dir.join("verify/test.sh")).unwrap().contains("echo 0"));
}

fn write_harbor_task(dir: &Path) {
    let files = [
        ("task.toml", "version = \"1.0\"\n[agent]\ntimeout_sec = 90.5\n[verifier]\ntimeout_sec = 60.0\n"),
        ("instruction.md", "Say hello.\n"),
        ("environment/Dockerfile", "FROM debian:12\nWORKDIR /srv\nCOPY app /srv\n"),
        ("environment/app/a.txt", "a\n"),
        ("tests/test.sh", "echo 1 > /logs/verifier/reward.txt\n"),
        ("solution/solve.sh", "true\n"),
    ];
    for (rel, text) in files {
        fs::create_dir_all(dir.join(rel).parent().unwrap()).unwrap();
        fs::write(dir.join(rel), text).unwrap();
    }
}

fn ids(tasks: &[cleanroom_task::Task]) -> Vec<&str> {
    tasks.iter().map(|t| t.id.as_str()).collect()
}

/// A Harbor registry.json stands for its datasets' tasks, named as it
/// names them; `#name` or `#name@version` picks one dataset.
#[test]
fn a_harbor_registry_lists_its_datasets_tasks() {
    let tmp = tempfile::tempdir().unwrap();
    write_harbor_task(&tmp.path().join("tasks/hello"));
    write_harbor_task(&tmp.path().join("tasks/bye"));
    let registry = tmp.path().join("registry.json");
    fs::write(
        &registry,
        r#"[
  {"name": "greetings", "version": "1.0", "description": "d", "metrics": [],
   "tasks": [{"name": "hello-1", "path": "tasks/hello"}, {"name": "bye", "path": "tasks/bye"}]},
  {"name": "greetings", "version": "2.0", "description": "d",
   "tasks": [{"name": "hello-1", "path": "tasks/hello"}]}
]"#,
    )
    .unwrap();
    let all = load_tasks(std::slice::from_ref(&registry)).unwrap();
    assert_eq!(ids(&all), ["bye", "hello-1"], "a task in two datasets is listed once");
    let v2 = load_tasks(&[tmp.path().join("registry.json#greetings@2.0")]).unwrap();
    assert_eq!(ids(&v2), ["hello-1"]);
    assert_eq!(v2[0].spec.artifact.dest, "/srv");

    let e = load_tasks(&[tmp.path().join("registry.json#greetings@3.0")]).unwrap_err().to_string();
    assert!(
        e.contains(
            "registry.json: holds no dataset \"greetings@3.0\"; it holds greetings@1.0, greetings@2.0"
        ),
        "{e}"
    );
    fs::write(
        &registry,
        r#"[{"name": "g", "version": "1", "tasks": [{"name": "Hello", "path": "tasks/hello"}]}]"#,
    )
    .unwrap();
    let e = load_tasks(std::slice::from_ref(&registry)).unwrap_err().to_string();
    assert!(e.contains("registry.json: [0].tasks[0].name: \"Hello\" is not a valid task id"), "{e}");
    fs::write(
        &registry,
        r#"[{"name": "g", "version": "1", "tasks": [{"name": "x", "path": "tasks/none"}]}]"#,
    )
    .unwrap();
    let e = load_tasks(std::slice::from_ref(&registry)).unwrap_err().to_string();
    assert!(e.contains("registry.json: [0].tasks[0].path: ") && e.contains("holds no task.toml"), "{e}");
    fs::write(&registry, r#"{"datasets": []}"#).unwrap();
    let e = load_tasks(&[registry]).unwrap_err().to_string();
    assert!(e.contains("registry.json:1: ") && e.contains("expected Harbor's registry.json"), "{e}");
}

/// A registry's task in a git repository is fetched at its commit, which
/// the registry must name.
#[test]
fn a_harbor_registrys_git_tasks_are_fetched_at_their_commit() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    write_harbor_task(&repo.join("tasks/hello"));
    let git = |args: &[&str]| common::git(&repo, args);
    git(&["init", "-q", "-b", "main"]);
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "one"]);
    let commit = git(&["rev-parse", "HEAD"]);
    // A later commit must not change what the registry names.
    fs::write(repo.join("tasks/hello/instruction.md"), "Changed.\n").unwrap();
    git(&["commit", "-q", "-am", "two"]);

    let registry = tmp.path().join("registry.json");
    let url = format!("file://{}", repo.display());
    let entry = |commit: &str| {
        format!(
            r#"[{{"name": "d", "version": "1", "tasks": [{{"name": "hello", "git_url": "{url}", "git_commit_id": "{commit}", "path": "tasks/hello"}}]}}]"#
        )
    };
    fs::write(&registry, entry(&commit)).unwrap();
    let tasks = load_tasks(std::slice::from_ref(&registry)).unwrap();
    assert_eq!(ids(&tasks), ["hello"]);
    assert_eq!(tasks[0].instruction, "Say hello.\n");

    fs::write(&registry, entry("main")).unwrap();
    let e = load_tasks(&[registry]).unwrap_err().to_string();
    assert!(e.contains("[0].tasks[0].git_commit_id: \"main\" is not a commit id"), "{e}");
}
