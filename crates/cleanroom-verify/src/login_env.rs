//! The deployment's login environment: the variables its login shell
//! exports (a virtual environment on `PATH`), which every step of the
//! verification gets.
//!
//! The login shell runs the deployment's own code (its bash, profile
//! scripts, rc files), so it runs at the end of the agent's phase, while
//! the agent's processes are still there and before the tamper check: what
//! it does to the environment is the agent's doing and is judged as such,
//! and the phase's end kills whatever it started. Nothing of the
//! deployment's runs between the tamper check and the verifier's seals.

use std::time::Duration;

use cleanroom_env::{CancelToken, Environment, ExecRequest, ExitStatus};

use crate::pipeline::{base_env, how_it_ended};

/// How long the login shell may take.
const TIMEOUT: Duration = Duration::from_secs(60);

/// Prints every exported variable, NUL-separated, after a marker, with
/// bash builtins only.
pub(crate) const SCRIPT: &str =
    r#"printf '\0cleanroom-login-env\0'; for n in $(compgen -e); do printf '%s=%s\0' "$n" "${!n}"; done"#;
pub(crate) const MARKER: &[u8] = b"\0cleanroom-login-env\0";

/// Variables of the login environment that a step does not get: they make
/// a shell or an interpreter run code at start-up, or turn the shell's
/// behaviour. Exported bash functions (`BASH_FUNC_*`) neither.
const UNTRUSTED_VARIABLES: &[&str] = &[
    "BASH_ENV",
    "ENV",
    "PROMPT_COMMAND",
    "PS0",
    "PS4",
    "SHELLOPTS",
    "BASHOPTS",
    "CDPATH",
    "GLOBIGNORE",
    "IFS",
    "LD_PRELOAD",
    "LD_AUDIT",
    "PYTHONSTARTUP",
    "PYTHONINSPECT",
    "PYTHONUSERBASE",
    "PERL5OPT",
    "PERL5DB",
    "RUBYOPT",
    "NODE_OPTIONS",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
];

/// What the login shell reported.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoginEnv {
    /// The trusted variables; None when the shell reported none (steps
    /// then get the default environment).
    pub vars: Option<Vec<(String, String)>>,
    /// For verify.log: how many variables, or why there are none.
    pub report: String,
}

/// Runs a login shell in `env`'s current phase (the agent's, before it
/// ends) and reads the variables it exports. Whatever goes wrong is the
/// deployment's (the agent may have replaced bash, filled the process
/// table, broken the machine): the steps then get the default environment,
/// and verify.log says why.
pub fn read_login_env(env: &dyn Environment, cancel: &CancelToken) -> LoginEnv {
    let mut req = ExecRequest::login_shell(SCRIPT, "/", base_env());
    req.timeout = Some(TIMEOUT);
    let outcome = match env.exec(&req, cancel) {
        Ok(outcome) => outcome,
        Err(e) => return LoginEnv { vars: None, report: format!("not reported ({e})") },
    };
    let found = outcome.status.success().then(|| parse(&outcome.stdout.to_bytes())).flatten();
    let report = match (&found, outcome.status) {
        (Some(vars), _) => format!("{} variables", vars.len()),
        (None, ExitStatus::Exited(0)) => "not reported (no variables printed)".to_string(),
        (None, status) => format!("not reported ({})", how_it_ended(&status, TIMEOUT)),
    };
    LoginEnv { vars: found, report }
}

/// The variables a login shell printed after [`MARKER`], less the
/// untrusted ones; None without the marker or without `PATH`.
fn parse(stdout: &[u8]) -> Option<Vec<(String, String)>> {
    let at = stdout.windows(MARKER.len()).rposition(|w| w == MARKER)?;
    let vars: Vec<(String, String)> = stdout[at + MARKER.len()..]
        .split(|b| *b == 0)
        .filter_map(|item| {
            let item = std::str::from_utf8(item).ok()?;
            let (name, value) = item.split_once('=')?;
            let plain = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            let trusted = plain && !name.starts_with("BASH_FUNC_") && !UNTRUSTED_VARIABLES.contains(&name);
            trusted.then(|| (name.to_string(), value.to_string()))
        })
        .collect();
    vars.iter().any(|(k, _)| k == "PATH").then_some(vars)
}
