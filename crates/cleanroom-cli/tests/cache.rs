//! The package cache for real: real trials download a Debian package set
//! and a wheel through it from the real registries, an agent attacks it,
//! and what the next trials receive is checked. Needs root and the
//! registries (deb.debian.org, pypi.org).

mod common;

use std::path::Path;

use common::*;
use serde_json::Value;

/// six 1.16.0's wheel, as PyPI's index names it (what the task installs).
const SIX_WHEEL: &str = "8abb2f1d86890a2dfb989f9a77cfcfd3e47c2a354b01111771326f8aa26e0254";

#[test]
fn trials_share_downloads_and_an_agent_cannot_poison_them() {
    let out = temp_out("cache");
    let cache = out.join("packages");
    let tasks = fixtures("tests/fixtures/tasks-cache");
    let run_in = |name: &str, args: &[&str]| {
        let mut all = vec!["--tasks", tasks.as_str(), "--cache-dir", cache.to_str().unwrap(), "--jobs", "1"];
        all.extend(args);
        let (output, run_dir) = run(&out.join(name), &all);
        assert!(output.status.success() || output.status.code() == Some(1), "{}", text(&output));
        let records = results(&run_dir);
        (run_dir, records)
    };

    // The attacker comes first, to an empty cache.
    let attacker = format!("script:{}", fixtures("tests/fixtures/agents/poison-downloads.sh"));
    let (run_dir, attacked) = run_in("attack", &["--agent", &attacker]);
    let log = std::fs::read_to_string(trial_dir(&run_dir, &attacked[0]).join("agent.log")).unwrap();
    let probe = |name: &str| {
        let prefix = format!("poison: {name}");
        let line = log.lines().find_map(|l| l.strip_prefix(&prefix));
        line.unwrap_or_else(|| panic!("no {name} probe in {log}")).trim()
    };
    assert_eq!(probe("bind"), "refused 98", "the cache's address is the harness's");
    // Served (pip would refuse it for its hash), but never stored.
    assert_eq!(probe("wrong-hash"), "HTTP/1.1 200 OK");
    assert_eq!(
        probe("foreign-host"),
        "HTTP/1.1 403 Forbidden",
        "the cache is no way to the host's own addresses"
    );
    assert_eq!(probe("climbing-path"), "HTTP/1.1 404 Not Found");
    let written: u32 = probe("cache-paths written").parse().unwrap();
    assert!(written > 0, "the attacker found paths to write: {log}");
    assert_eq!(probe("done"), "", "{log}");
    assert_blobs_are_what_they_are_named(&cache);
    assert!(!blob(&cache, SIX_WHEEL).exists(), "six 1.15.0 was not stored as 1.16.0");

    // Then the oracle, twice: the second trial fetches nothing upstream.
    let (run_dir, oracle) = run_in("oracle", &["--agent", "oracle", "--trials", "2"]);
    let by_trial = |n: u64| oracle.iter().find(|r| r["trial"] == n).unwrap();
    for r in &oracle {
        assert_eq!(
            r["outcome"],
            "passed",
            "{}",
            std::fs::read_to_string(trial_dir(&run_dir, r).join("agent.log")).unwrap()
        );
    }
    let (first, second) = (&by_trial(1)["cache"], &by_trial(2)["cache"]);
    assert!(
        first["bytes_upstream"].as_u64().unwrap() > 1_000_000,
        "python3-venv and six came from upstream: {first}"
    );
    assert_eq!(second["bytes_upstream"], 0, "the second trial fetched nothing upstream: {second}");
    assert!(second["bytes_from_cache"].as_u64().unwrap() > 1_000_000, "{second}");
    assert_blobs_are_what_they_are_named(&cache);
    assert!(blob(&cache, SIX_WHEEL).exists());

    let report = cleanroom().arg("report").arg(&run_dir).output().unwrap();
    assert!(text(&report).contains("| packages from the registries |"), "{}", text(&report));
    assert!(text(&report).contains(" from the package cache."), "{}", text(&report));

    // --no-cache: straight from the registries, nothing recorded.
    let (run_dir, direct) = run_in("direct", &["--agent", "oracle", "--no-cache"]);
    assert_eq!(direct[0]["outcome"], "passed");
    assert!(direct[0].get("cache").is_none(), "{}", direct[0]);
    let config = std::fs::read_to_string(run_dir.join("run.toml")).unwrap();
    assert!(config.contains("no_cache = true"), "{config}");
}

fn trial_dir(run_dir: &Path, record: &Value) -> std::path::PathBuf {
    let field =
        |name: &str| record[name].as_str().map(str::to_string).unwrap_or_else(|| record[name].to_string());
    run_dir.join("trials").join(field("task")).join(field("agent_id")).join(field("trial"))
}

fn blob(cache: &Path, sha256: &str) -> std::path::PathBuf {
    cache.join("blobs").join(&sha256[..2]).join(sha256)
}

/// Every stored blob has the sha256 it is named by.
fn assert_blobs_are_what_they_are_named(cache: &Path) {
    let blobs = files_under(&cache.join("blobs"));
    assert!(!blobs.is_empty(), "the trials stored something");
    let out = std::process::Command::new("sha256sum").args(&blobs).output().unwrap();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let (sum, path) = line.split_once("  ").unwrap();
        assert!(path.ends_with(sum), "{path} holds content with sha256 {sum}");
    }
}

/// On a machine the cache is relayed to its loopback, as the forwarder is.
#[test]
fn a_machine_downloads_through_the_cache() {
    downloads_through_the_cache_on("vm");
}

/// And on a host of the ssh backend, through its forward.
#[test]
fn a_host_downloads_through_the_cache() {
    downloads_through_the_cache_on("ssh");
}

fn downloads_through_the_cache_on(backend: &str) {
    let out = temp_out(&format!("cache-{backend}"));
    let cache = out.join("packages");
    let agent = format!("script:{}", fixtures("tests/fixtures/agents/fetch-through-cache.sh"));
    let tasks = fixtures("tests/fixtures/tasks-cache");
    let mut args = vec!["--tasks", &tasks, "--agent", &agent, "--backend", backend];
    args.extend(["--cache-dir", cache.to_str().unwrap()]);
    if backend == "ssh" {
        args.extend(["--config", TEST_HOSTS]);
    }
    let (output, run_dir) = run(&out.join("runs"), &args);
    assert!(output.status.success(), "{}", text(&output));
    let record = &results(&run_dir)[0];
    let log = std::fs::read_to_string(trial_dir(&run_dir, record).join("agent.log")).unwrap();
    let fetched = |what: &str| {
        let prefix = format!("fetched: {what} HTTP/1.1 200 OK ");
        let line = log.lines().find_map(|l| l.strip_prefix(&prefix));
        line.unwrap_or_else(|| panic!("no {what} in {log}")).trim().parse::<u64>().unwrap()
    };
    assert!(fetched("page") > 1000 && fetched("wheel") > 10_000, "{log}");
    assert!(record["cache"]["bytes_upstream"].as_u64().unwrap() > 10_000, "{record}");
    assert!(blob(&cache, SIX_WHEEL).exists());
    assert_blobs_are_what_they_are_named(&cache);
}
