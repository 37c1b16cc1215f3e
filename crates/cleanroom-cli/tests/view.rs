//! `cleanroom view` over real runs in real sandboxes: every page type
//! answers, every link on every page leads to a page that answers, a
//! failed trial's page names its first failure, and nothing an agent wrote
//! renders as markup; then a real browser (Debian's Chromium through
//! ChromeDriver) clicks links, filters the trials, watches a running run
//! finish on its own page, and takes a screenshot of each page type
//! (left in target/view-screenshots/ to be looked at). Needs root.

mod common;

use std::collections::{BTreeSet, VecDeque};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use common::webdriver::Browser;
use common::*;

const EVIL_TITLE: &str = "counter <script>alert('title')</script>";

/// A task that counts lines, with a title that tries to inject a script.
fn make_task(root: &Path, id: &str, agent_timeout: u32) -> PathBuf {
    let dir = root.join(id);
    std::fs::create_dir_all(dir.join("artifact")).unwrap();
    std::fs::create_dir_all(dir.join("solution")).unwrap();
    std::fs::create_dir_all(dir.join("verify")).unwrap();
    std::fs::write(
        dir.join("task.toml"),
        format!(
            "schema_version = 1\n[task]\ntitle = {EVIL_TITLE:?}\ndomain = \"systems\"\n[environment]\ndisk_mb = 64\n\
             [agent]\ntimeout_sec = {agent_timeout}\n"
        ),
    )
    .unwrap();
    std::fs::write(dir.join("instruction.md"), "Deploy the line counter.\n").unwrap();
    std::fs::write(dir.join("artifact/input.txt"), "a\nb\nc\n").unwrap();
    std::fs::write(dir.join("solution/setup.sh"), "touch /opt/deployed\n").unwrap();
    std::fs::write(
        dir.join("verify/checks.toml"),
        "[[step]]\nname = \"count\"\nrun = \"test -f /opt/deployed && wc -l < input.txt > $CLEANROOM_OUT/n.txt\"\n\n\
         [[check]]\nname = \"lines\"\nfile = \"n.txt\"\nregex = '(\\d+)'\nexpect = 3\n",
    )
    .unwrap();
    dir
}

/// An agent that fails and fills its log and the environment with markup.
fn evil_agent(dir: &Path) -> String {
    let path = dir.join("evil.sh");
    std::fs::write(
        &path,
        "#!/bin/bash\necho \"<script>alert('log')</script>\"\n\
         echo 'ERROR: No matching distribution found for numpy==1.16.4 <img src=x onerror=alert(1)>'\n\
         mkdir -p '/opt/<b>bold</b>' && touch \"/opt/<b>bold</b>/<img src=x onerror=alert(2)>\"\nexit 3\n",
    )
    .unwrap();
    format!("script:{}", path.display())
}

/// `cleanroom view OUT --port 0`, killed on drop.
struct Viewer {
    child: Child,
    base: String,
}

impl Viewer {
    fn start(out: &Path) -> Viewer {
        let mut child = cleanroom()
            .args(["view", "--port", "0"])
            .arg(out)
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stderr.take().unwrap()).read_line(&mut line).unwrap();
        let start = line.find("http://").unwrap_or_else(|| panic!("no address in {line:?}"));
        let base = line[start..].split_whitespace().next().unwrap().trim_end_matches('/').to_string();
        Viewer { child, base }
    }

    fn get(&self, path: &str) -> (u16, String) {
        let agent: ureq::Agent =
            ureq::Agent::config_builder().http_status_as_error(false).build().new_agent();
        let mut response = agent.get(format!("{}{path}", self.base)).call().unwrap();
        (response.status().as_u16(), response.body_mut().read_to_string().unwrap())
    }
}

impl Drop for Viewer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every `href` of a page that stays on the viewer, unescaped, without
/// its fragment.
fn links(page: &str) -> Vec<String> {
    page.split("href=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(|href| href.replace("&amp;", "&"))
        .filter(|href| href.starts_with('/'))
        .map(|href| href.split('#').next().unwrap().to_string())
        .collect()
}

fn assert_no_markup_from_the_environment(path: &str, page: &str) {
    for raw in ["<script", "<img", "<b>bold"] {
        assert!(!page.contains(raw), "{path} renders {raw} from the environment as markup");
    }
}

#[test]
fn every_page_answers_every_link_leads_somewhere_and_nothing_renders_as_markup() {
    let out = temp_out("view");
    let tasks = out.join("tasks");
    make_task(&tasks, "count", 30);
    let evil = evil_agent(&out);
    let runs = out.join("runs");
    let ran = cleanroom()
        .args(["run", "--tasks"])
        .arg(&tasks)
        .args([
            "--agent", "oracle", "--agent", "nop", "--agent", &evil, "--trials", "2", "--jobs", "2", "--out",
        ])
        .arg(&runs)
        .output()
        .unwrap();
    assert!(ran.status.success(), "{}", text(&ran));
    let viewer = Viewer::start(&runs);

    let mut seen = BTreeSet::from(["/".to_string()]);
    let mut queue = VecDeque::from(["/".to_string()]);
    let mut kinds = BTreeSet::new();
    while let Some(path) = queue.pop_front() {
        let (status, page) = viewer.get(&path);
        assert_eq!(status, 200, "{path}: {page}");
        assert!(page.starts_with("<!DOCTYPE html>"), "{path}");
        assert_no_markup_from_the_environment(&path, &page);
        kinds.insert(match () {
            _ if path.contains("/files/") => "file",
            _ if path.contains("/trials/") => "trial",
            _ if path.starts_with("/compare") => "compare",
            _ if path.starts_with("/runs/") => "run",
            _ => "runs",
        });
        for link in links(&page) {
            if seen.len() < 400 && seen.insert(link.clone()) {
                queue.push_back(link);
            }
        }
    }
    assert_eq!(
        kinds,
        BTreeSet::from(["compare", "file", "run", "runs", "trial"]),
        "every page type is linked"
    );

    let run_id = std::fs::read_dir(&runs)
        .unwrap()
        .flatten()
        .find(|e| e.path().is_dir())
        .unwrap()
        .file_name()
        .into_string()
        .unwrap();
    // The slug of `script:.../evil.sh`.
    let agent_id = "script-evil-sh";
    let (_, failed) = viewer.get(&format!("/runs/{run_id}/trials/count/{agent_id}/1"));
    assert!(failed.contains("Why it failed:"), "{failed}");
    assert!(failed.contains("step count exited 1"), "the first failed step and its exit code: {failed}");
    // The tag's evidence links to its line of the agent's log, which shows
    // what the agent printed, escaped.
    assert!(failed.contains("dependency_repair"), "{failed}");
    let evidence = format!("/runs/{run_id}/trials/count/{agent_id}/1/files/agent.log#L2");
    assert!(failed.contains(&evidence), "{failed}");
    let (_, log) = viewer.get(evidence.split('#').next().unwrap());
    assert!(log.contains("id=\"L2\"") && log.contains("&lt;script&gt;alert("), "{log}");
    let (_, title) = viewer.get(&format!("/runs/{run_id}"));
    assert!(title.contains("&lt;script&gt;alert"), "the evil title shows, escaped");

    for bad in [
        "/runs/nope".to_string(),
        format!("/runs/{run_id}/trials/count/oracle/9"),
        format!("/runs/{run_id}/trials/count/oracle/1/files/..%2Frun.toml"),
        format!("/runs/{run_id}/trials/count/oracle/1/files/.lock"),
        format!("/runs/{run_id}/trials/count/oracle/1/files/outputs/..%2F..%2F..%2Frun.toml"),
        format!("/runs/{run_id}/trials/count/oracle/1/files/result.json/x"),
        "/compare?a=x/y&b=z/w".to_string(),
    ] {
        assert_eq!(viewer.get(&bad).0, 404, "{bad}");
    }
    let _ = std::fs::remove_dir_all(&out);
}

fn screenshot(browser: &Browser, name: &str) {
    let png = browser.screenshot();
    assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000, "{name}: a real picture");
    let dir = repo().join("target/view-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
}

#[test]
fn a_browser_follows_links_filters_and_watches_a_run_finish() {
    let out = temp_out("view-browser");
    let tasks = out.join("tasks");
    make_task(&tasks, "count", 60);
    let runs = out.join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    // A slow agent keeps the run going while the browser looks at it.
    let slow = out.join("slow.sh");
    std::fs::write(&slow, "#!/bin/bash\nsleep 6\ntouch /opt/deployed\n").unwrap();
    let mut running = cleanroom()
        .args(["run", "--tasks"])
        .arg(&tasks)
        .args(["--agent", &format!("script:{}", slow.display()), "--agent", "nop", "--jobs", "1", "--out"])
        .arg(&runs)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !std::fs::read_dir(&runs).unwrap().flatten().any(|e| e.path().join("run.toml").exists()) {
        assert!(std::time::Instant::now() < deadline, "the run made no run directory");
        std::thread::sleep(Duration::from_millis(100));
    }
    let viewer = Viewer::start(&runs);
    let browser = Browser::start();

    browser.goto(&format!("{}/", viewer.base));
    let run_link = browser.find("td a[href^='/runs/']");
    let run_href = browser.attribute(&run_link, "href").unwrap();
    browser.follow(&run_link, &run_href);
    let live = browser.text();
    assert!(live.contains("Running:") && live.contains(" of 2 trials done"), "live progress: {live}");
    screenshot(&browser, "run-live");
    // The page reloads itself; the test only reads it.
    assert!(
        browser.wait_for_text("Finished: 2 of 2 trials", Duration::from_secs(120)),
        "the running page updated to the end: {}",
        browser.text()
    );
    assert!(running.wait().unwrap().success());

    // A filter narrows the trials to the failed one.
    browser.click(&browser.find("select[name=outcome] option[value=failed]"));
    browser.follow(&browser.find("form.filters button"), "outcome=failed");
    assert!(browser.text().contains("1 of 2 trials match the filters"), "{}", browser.text());
    screenshot(&browser, "run");

    // A matrix cell leads to its trial, whose page says why it failed.
    let cells = browser.find_all("td.m a");
    assert_eq!(cells.len(), 2, "one linked cell per task and agent");
    let nop_cell = cells
        .iter()
        .find(|c| browser.attribute(c, "href").is_some_and(|h| h.contains("/nop/")))
        .expect("the nop cell")
        .clone();
    browser.follow(&nop_cell, "/trials/count/nop/1");
    assert!(browser.text().contains("Why it failed: failed, self_stop"), "{}", browser.text());
    screenshot(&browser, "trial");

    // The log link shows the file with line anchors.
    browser.follow(&browser.find("#why a"), "/files/verify.log");
    assert!(!browser.find_all("pre.log span[id='L1']").is_empty());
    screenshot(&browser, "file");

    browser.goto(&format!("{}/", viewer.base));
    screenshot(&browser, "runs");
    browser.follow(&browser.find("form[action='/compare'] button"), "/compare?a=");
    assert!(browser.text().contains("Tasks where they differ"), "{}", browser.text());
    screenshot(&browser, "compare");
    drop(browser);
    drop(viewer);
    let _ = std::fs::remove_dir_all(&out);
}
