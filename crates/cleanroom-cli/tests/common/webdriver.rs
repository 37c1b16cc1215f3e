//! A real browser for the viewer's tests: Debian's Chromium, headless,
//! driven by its ChromeDriver over the W3C WebDriver protocol (plain JSON
//! over HTTP on loopback). The driver and its browser end with the value.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    http: ureq::Agent,
    _profile: tempfile::TempDir,
}

/// Where Debian's packages put them (`apt-get install chromium chromium-driver`).
pub const CHROMIUM: &str = "/usr/bin/chromium";
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl Browser {
    pub fn start() -> Browser {
        assert!(
            Path::new(CHROMIUM).exists() && Path::new(CHROMEDRIVER).exists(),
            "the viewer's browser tests need Debian's chromium and chromium-driver (scripts/setup.sh --test installs them)"
        );
        let port = free_port();
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let http: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .new_agent();
        let base = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(30);
        while http.get(format!("{base}/status")).call().is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not answer on port {port}");
            std::thread::sleep(Duration::from_millis(100));
        }
        let profile = tempfile::tempdir().unwrap();
        let capabilities = json!({"capabilities": {"alwaysMatch": {"browserName": "chrome",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--window-size=1280,1600", format!("--user-data-dir={}", profile.path().display())]}}}});
        let mut browser = Browser { driver, base, session: String::new(), http, _profile: profile };
        let created = browser.send("POST", "/session", Some(capabilities));
        browser.session = created["sessionId"].as_str().expect("a session id").to_string();
        browser
    }

    fn send(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        self.try_send(method, path, body).unwrap_or_else(|(_, message)| panic!("{message}"))
    }

    /// The command's value, or the WebDriver error's code with a message
    /// naming the command.
    fn try_send(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, (String, String)> {
        let url = format!("{}{path}", self.base);
        let mut response = match (method, body) {
            ("POST", body) => self
                .http
                .post(&url)
                .header("content-type", "application/json")
                .send(body.unwrap_or(json!({})).to_string()),
            ("DELETE", _) => self.http.delete(&url).call(),
            _ => self.http.get(&url).call(),
        }
        .expect("chromedriver answers");
        let text = response.body_mut().read_to_string().unwrap();
        let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if let Some(error) = value["value"]["error"].as_str() {
            return Err((error.to_string(), format!("webdriver {method} {path}: {text}")));
        }
        Ok(value.get("value").cloned().unwrap_or(value))
    }

    fn session_path(&self, rest: &str) -> String {
        format!("/session/{}{rest}", self.session)
    }

    pub fn goto(&self, url: &str) {
        self.send("POST", &self.session_path("/url"), Some(json!({ "url": url })));
    }

    pub fn url(&self) -> String {
        self.send("GET", &self.session_path("/url"), None).as_str().unwrap_or_default().to_string()
    }

    /// The page's visible text. A page that reloads itself can replace its
    /// body between finding it and reading it: then the new body is read.
    pub fn text(&self) -> String {
        const RELOADS_TOLERATED: usize = 10;
        for _ in 0..RELOADS_TOLERATED {
            let body = self.find("body");
            match self.try_send("GET", &self.session_path(&format!("/element/{body}/text")), None) {
                Ok(text) => return text.as_str().unwrap_or_default().to_string(),
                // WebDriver's own answer for an element the page replaced.
                Err((code, _)) if code == "stale element reference" => {
                    eprintln!(
                        "webdriver: the page replaced its body before it was read: reading the new one"
                    );
                    continue;
                }
                Err((_, message)) => panic!("{message}"),
            }
        }
        panic!("the page's body went stale {RELOADS_TOLERATED} times in a row");
    }

    /// The first element that matches the CSS selector.
    pub fn find(&self, css: &str) -> String {
        let found = self.send(
            "POST",
            &self.session_path("/element"),
            Some(json!({"using": "css selector", "value": css})),
        );
        element_id(&found)
    }

    pub fn find_all(&self, css: &str) -> Vec<String> {
        let found = self.send(
            "POST",
            &self.session_path("/elements"),
            Some(json!({"using": "css selector", "value": css})),
        );
        found.as_array().into_iter().flatten().map(element_id).collect()
    }

    pub fn click(&self, element: &str) {
        self.send("POST", &self.session_path(&format!("/element/{element}/click")), None);
    }

    /// Clicks a link or button and waits until the page it leads to is the
    /// current one: a click starts the navigation but need not wait for it.
    pub fn follow(&self, element: &str, url_part: &str) {
        self.click(element);
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.url().contains(url_part) {
            assert!(Instant::now() < deadline, "the click led to {}, not to {url_part}", self.url());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn attribute(&self, element: &str, name: &str) -> Option<String> {
        self.send("GET", &self.session_path(&format!("/element/{element}/attribute/{name}")), None)
            .as_str()
            .map(String::from)
    }

    /// A PNG of the window.
    pub fn screenshot(&self) -> Vec<u8> {
        let encoded = self.send("GET", &self.session_path("/screenshot"), None);
        base64_decode(encoded.as_str().expect("a base64 screenshot"))
    }

    /// Waits until the page's text contains `needle`, the browser alone
    /// reloading it; false past `limit`.
    pub fn wait_for_text(&self, needle: &str, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            if self.text().contains(needle) {
                return true;
            }
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

fn element_id(found: &Value) -> String {
    found
        .as_object()
        .and_then(|o| o.values().next())
        .and_then(Value::as_str)
        .expect("an element reference")
        .to_string()
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = self.http.delete(format!("{}/session/{}", self.base, self.session)).call();
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// Standard base64, as WebDriver sends screenshots.
fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a' + 26) as u32,
            b'0'..=b'9' => (c - b'0' + 52) as u32,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    };
    let clean: Vec<u8> = text.bytes().filter(|c| !c.is_ascii_whitespace() && *c != b'=').collect();
    let mut out = Vec::with_capacity(clean.len() * 3 / 4);
    for chunk in clean.chunks(4) {
        let n = chunk.iter().enumerate().fold(0u32, |acc, (i, &c)| acc | value(c) << (18 - 6 * i));
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..chunk.len() - 1]);
    }
    out
}
