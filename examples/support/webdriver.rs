//! A small W3C WebDriver client for a real headless Chromium, driven
//! through its ChromeDriver: enough to load a page, run a script in it,
//! click, read an alert and take a screenshot. The dashboard's browser test
//! and its benchmark share it.
//!
//! The browser and the driver are found as `$LOOPX_CHROMIUM` /
//! `$LOOPX_CHROMEDRIVER`, else `chromium` (or `chromium-browser`,
//! `google-chrome`) and `chromedriver` on `PATH`. [`Browser::start`] says
//! why when either is missing, so a caller can skip with the reason.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    _profile: tempfile::TempDir,
}

fn on_path(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| names.iter().map(move |n| dir.join(n)))
        .find(|p| p.is_file())
}

fn find(var: &str, names: &[&str]) -> Option<PathBuf> {
    match std::env::var_os(var) {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ => on_path(names),
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A WebDriver error answer: `{"value": {"error", "message"}}`.
#[derive(Debug)]
pub struct DriverError {
    pub error: String,
    pub message: String,
}

impl Browser {
    /// Starts ChromeDriver and a headless Chromium session with a fresh
    /// profile, `width` × `height` pixels. `Err` says what is missing.
    pub fn start(width: u32, height: u32) -> Result<Browser, String> {
        Browser::start_as(width, height, false)
    }

    /// As [`Browser::start`], as a phone's browser: a touch screen
    /// `width` × `height` CSS pixels that lays a page out by its viewport
    /// `<meta>` (without one, 980 pixels wide), as Chromium's device mode.
    pub fn start_phone(width: u32, height: u32) -> Result<Browser, String> {
        Browser::start_as(width, height, true)
    }

    fn start_as(width: u32, height: u32, phone: bool) -> Result<Browser, String> {
        let chromium = find(
            "LOOPX_CHROMIUM",
            &["chromium", "chromium-browser", "google-chrome"],
        )
        .ok_or("no Chromium: install Debian's `chromium` or set LOOPX_CHROMIUM")?;
        let driver_bin = find("LOOPX_CHROMEDRIVER", &["chromedriver"]).ok_or(
            "no ChromeDriver: install Debian's `chromium-driver` or set LOOPX_CHROMEDRIVER",
        )?;
        let port = free_port();
        let driver = Command::new(&driver_bin)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", driver_bin.display()))?;
        let base = format!("http://127.0.0.1:{port}");
        let profile = tempfile::tempdir().map_err(|e| e.to_string())?;
        let mut browser = Browser {
            driver,
            base,
            session: String::new(),
            _profile: profile,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let ready = ureq::get(&format!("{}/status", browser.base))
                .call()
                .ok()
                .and_then(|r| r.into_json::<Value>().ok())
                .is_some_and(|v| v["value"]["ready"] == true);
            if ready {
                break;
            }
            if Instant::now() > deadline {
                return Err("ChromeDriver did not become ready in 20 s".into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let args = vec![
            "--headless".to_owned(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-quic".into(),
            "--no-first-run".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            "--disable-dev-shm-usage".into(),
            format!("--window-size={width},{height}"),
            format!("--user-data-dir={}", browser._profile.path().display()),
        ];
        let mut options = json!({ "binary": chromium.to_string_lossy(), "args": args });
        if phone {
            options["mobileEmulation"] = json!({ "deviceMetrics": {
                "width": width, "height": height, "pixelRatio": 1.0, "touch": true, "mobile": true,
            }});
        }
        let caps = json!({ "capabilities": { "alwaysMatch": {
            "browserName": "chrome",
            // An alert stays open, so that a test can see it.
            "unhandledPromptBehavior": "ignore",
            "goog:chromeOptions": options,
        }}});
        let created = browser
            .call("POST", "/session", Some(caps))
            .map_err(|e| format!("no browser session: {}: {}", e.error, e.message))?;
        browser.session = created["sessionId"]
            .as_str()
            .ok_or("no session id")?
            .to_owned();
        Ok(browser)
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, DriverError> {
        let url = format!("{}{path}", self.base);
        let request = ureq::request(method, &url).timeout(Duration::from_secs(60));
        let answer = match body {
            Some(body) => request.send_json(body),
            None => request.call(),
        };
        let value: Value = match answer {
            Ok(r) => r.into_json().unwrap_or(Value::Null),
            Err(ureq::Error::Status(_, r)) => r.into_json().unwrap_or(Value::Null),
            Err(e) => {
                return Err(DriverError {
                    error: "transport".into(),
                    message: e.to_string(),
                })
            }
        };
        let value = value.get("value").cloned().unwrap_or(Value::Null);
        match value.get("error").and_then(Value::as_str) {
            Some(error) => Err(DriverError {
                error: error.to_owned(),
                message: value["message"].as_str().unwrap_or_default().to_owned(),
            }),
            None => Ok(value),
        }
    }

    fn session_call(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, DriverError> {
        self.call(method, &format!("/session/{}{path}", self.session), body)
    }

    pub fn goto(&self, url: &str) {
        self.session_call("POST", "/url", Some(json!({ "url": url })))
            .unwrap_or_else(|e| panic!("navigating to {url}: {e:?}"));
    }

    /// Runs `script` (a function body; `arguments` holds `args`) in the page.
    pub fn run(&self, script: &str, args: Value) -> Result<Value, DriverError> {
        self.session_call(
            "POST",
            "/execute/sync",
            Some(json!({ "script": script, "args": args })),
        )
    }

    /// Polls the JavaScript expression `expr` until it is truthy, for at
    /// most `limit`. Returns its value and how long it took; `None` on
    /// timeout.
    pub fn wait_for(&self, expr: &str, limit: Duration) -> Option<(Value, Duration)> {
        let start = Instant::now();
        let script = format!("return ({expr});");
        loop {
            if let Ok(v) = self.run(&script, json!([])) {
                let truthy = !matches!(&v, Value::Null | Value::Bool(false))
                    && v != json!(0)
                    && v != json!("");
                if truthy {
                    return Some((v, start.elapsed()));
                }
            }
            if start.elapsed() > limit {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The text of an open alert, confirm or prompt; `None` when there is none.
    pub fn alert_text(&self) -> Option<String> {
        match self.session_call("GET", "/alert/text", None) {
            Ok(v) => Some(v.as_str().unwrap_or_default().to_owned()),
            Err(e) if e.error == "no such alert" => None,
            Err(e) => panic!("asking for an alert: {e:?}"),
        }
    }

    /// Clicks the first element matching the CSS `selector`.
    pub fn click(&self, selector: &str) {
        let found = self
            .session_call(
                "POST",
                "/element",
                Some(json!({ "using": "css selector", "value": selector })),
            )
            .unwrap_or_else(|e| panic!("finding {selector}: {e:?}"));
        let id = found
            .as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_str)
            .expect("an element reference")
            .to_owned();
        self.session_call("POST", &format!("/element/{id}/click"), Some(json!({})))
            .unwrap_or_else(|e| panic!("clicking {selector}: {e:?}"));
    }

    /// A PNG of the viewport, saved at `path`.
    pub fn screenshot(&self, path: &Path) {
        use base64::Engine as _;
        let data = self
            .session_call("GET", "/screenshot", None)
            .expect("a screenshot");
        let png = base64::engine::general_purpose::STANDARD
            .decode(data.as_str().expect("base64 text"))
            .expect("base64 PNG");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("screenshot directory");
        }
        std::fs::write(path, png).expect("screenshot written");
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = self.call("DELETE", &format!("/session/{}", self.session), None);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
