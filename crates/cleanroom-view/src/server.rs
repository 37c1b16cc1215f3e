//! The HTTP side: routes, each page rendered on a blocking thread (pages
//! read files and SQLite), errors as pages with their status, and headers
//! that keep a browser from running or fetching anything a page holds.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::compare_page::{render_compare, side, CompareQuery};
use crate::file_page::render_file;
use crate::filter::Filter;
use crate::page::{message, trial_href, CSP};
use crate::run_page::render_run;
use crate::runs_page::render_runs;
use crate::source::{read_trial_file, Library, SourceError};
use crate::trial_page::render_trial;

type Shared = Arc<Library>;

/// The viewer's routes over the directory of runs.
pub fn router(library: Library) -> Router {
    Router::new()
        .route("/", get(runs))
        .route("/runs/{run}", get(run))
        .route("/runs/{run}/trials/{task}/{agent}/{n}", get(trial))
        .route("/runs/{run}/trials/{task}/{agent}/{n}/files/{*name}", get(file))
        .route("/compare", get(compare))
        .fallback(|| async { html(StatusCode::NOT_FOUND, message("not found", "No such page.")) })
        .with_state(Arc::new(library))
}

/// Serves until the process ends. `ready` is told the address bound (the
/// port the system chose, for `--port 0`).
pub fn serve(library: Library, addr: SocketAddr, ready: impl FnOnce(SocketAddr)) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_io().build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        ready(listener.local_addr()?);
        axum::serve(listener, router(library)).await
    })
}

fn html(status: StatusCode, body: String) -> Response {
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// Renders on a blocking thread; a source error becomes its page.
async fn render(work: impl FnOnce() -> Result<String, SourceError> + Send + 'static) -> Response {
    match tokio::task::spawn_blocking(work).await {
        Ok(Ok(body)) => html(StatusCode::OK, body),
        Ok(Err(e @ SourceError::NotFound { .. })) => {
            html(StatusCode::NOT_FOUND, message("not found", &e.to_string()))
        }
        Ok(Err(e)) => html(StatusCode::INTERNAL_SERVER_ERROR, message("cannot show this", &e.to_string())),
        Err(_) => {
            html(StatusCode::INTERNAL_SERVER_ERROR, message("cannot show this", "the page failed to render"))
        }
    }
}

async fn runs(State(lib): State<Shared>) -> Response {
    render(move || Ok(render_runs(&lib.dir().display().to_string(), &lib.runs()?))).await
}

async fn run(
    State(lib): State<Shared>,
    Path(run_id): Path<String>,
    Query(filter): Query<Filter>,
) -> Response {
    render(move || Ok(render_run(&lib.run(&run_id)?, &filter))).await
}

async fn trial(
    State(lib): State<Shared>,
    Path((run_id, task, agent, n)): Path<(String, String, String, u32)>,
) -> Response {
    render(move || {
        let record = lib.trial(&run_id, &task, &agent, n)?;
        let dir = lib.trial_dir(&run_id, &task, &agent, n)?;
        Ok(render_trial(&run_id, &record, &dir))
    })
    .await
}

async fn file(
    State(lib): State<Shared>,
    Path((run_id, task, agent, n, name)): Path<(String, String, String, u32, String)>,
) -> Response {
    render(move || {
        let record = lib.trial(&run_id, &task, &agent, n)?;
        let dir = lib.trial_dir(&run_id, &task, &agent, n)?;
        let (text, cut) = read_trial_file(&dir, &name)?;
        let label = format!("{} · {} #{}", record.task, record.agent_id, record.trial);
        Ok(render_file(&run_id, &trial_href(&run_id, &record), &label, &name, &text, cut))
    })
    .await
}

async fn compare(State(lib): State<Shared>, Query(q): Query<CompareQuery>) -> Response {
    render(move || {
        let bad = |v: &str| SourceError::NotFound { what: "agent (RUN/AGENT)", name: v.to_string() };
        let (run_a, agent_a) = side(&q.a).ok_or_else(|| bad(&q.a))?;
        let (run_b, agent_b) = side(&q.b).ok_or_else(|| bad(&q.b))?;
        let a = lib.run(run_a)?;
        let b = if run_b == run_a { a.clone() } else { lib.run(run_b)? };
        for (run, agent, v) in [(&a, agent_a, &q.a), (&b, agent_b, &q.b)] {
            if !run.entry.config.agents.iter().any(|x| x.id == agent) {
                return Err(bad(v));
            }
        }
        Ok(render_compare((&a, agent_a), (&b, agent_b)))
    })
    .await
}
