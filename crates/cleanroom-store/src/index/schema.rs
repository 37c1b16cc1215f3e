//! The index's tables, one migration per schema version. A migration is
//! applied once, in order, and never edited after it has shipped: a change
//! to the tables is a new migration at the end of `MIGRATIONS`.
//!
//! Every table but `runs` is keyed by the trial (run_id, task, agent_id,
//! trial) and goes with it: deleting a trial or a run deletes its rows.

/// The migrations by version: `MIGRATIONS[k]` takes the index from version
/// k to k + 1.
pub(crate) const MIGRATIONS: &[&str] = &[MIGRATION_1, MIGRATION_2, MIGRATION_3];

/// Version 1: runs, trials, and the trials' checks, steps and tags.
const MIGRATION_1: &str = r#"
CREATE TABLE runs (
    run_id        TEXT PRIMARY KEY NOT NULL,
    -- The run directory, relative to the index's directory when it is
    -- directly inside it (the usual case), absolute otherwise.
    path          TEXT NOT NULL,
    created       TEXT NOT NULL,
    tool_version  TEXT NOT NULL,
    backend       TEXT NOT NULL,
    -- run.toml as JSON.
    config_json   TEXT NOT NULL
);

CREATE TABLE trials (
    run_id             TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    task               TEXT NOT NULL,
    agent              TEXT NOT NULL,
    agent_id           TEXT NOT NULL,
    model              TEXT,
    trial              INTEGER NOT NULL,
    attempt            INTEGER NOT NULL,
    outcome            TEXT NOT NULL,
    class              TEXT,
    stage              TEXT NOT NULL,
    stop_reason        TEXT,
    exit_code          INTEGER,
    skip_reason        TEXT,
    error              TEXT,
    gate               TEXT NOT NULL,
    started_at         TEXT NOT NULL,
    finished_at        TEXT NOT NULL,
    env_seconds        REAL NOT NULL,
    agent_seconds      REAL NOT NULL,
    verify_seconds     REAL NOT NULL,
    prompt_tokens      INTEGER NOT NULL,
    completion_tokens  INTEGER NOT NULL,
    cached_tokens      INTEGER NOT NULL,
    cost_usd           REAL NOT NULL,
    -- result.json as it was recorded (compact), the whole record.
    record_json        TEXT NOT NULL,
    PRIMARY KEY (run_id, task, agent_id, trial)
);
CREATE INDEX trials_by_task ON trials (task);
CREATE INDEX trials_by_agent ON trials (agent);

CREATE TABLE checks (
    run_id    TEXT NOT NULL,
    task      TEXT NOT NULL,
    agent_id  TEXT NOT NULL,
    trial     INTEGER NOT NULL,
    -- The check's place in the verdict, from 0.
    seq       INTEGER NOT NULL,
    name      TEXT NOT NULL,
    passed    INTEGER NOT NULL,
    expected  TEXT NOT NULL,
    observed  TEXT NOT NULL,
    PRIMARY KEY (run_id, task, agent_id, trial, seq),
    FOREIGN KEY (run_id, task, agent_id, trial)
        REFERENCES trials (run_id, task, agent_id, trial) ON DELETE CASCADE
);

CREATE TABLE steps (
    run_id     TEXT NOT NULL,
    task       TEXT NOT NULL,
    agent_id   TEXT NOT NULL,
    trial      INTEGER NOT NULL,
    seq        INTEGER NOT NULL,
    name       TEXT NOT NULL,
    stage      TEXT NOT NULL,
    status     TEXT NOT NULL,
    exit_code  INTEGER,
    seconds    REAL NOT NULL,
    PRIMARY KEY (run_id, task, agent_id, trial, seq),
    FOREIGN KEY (run_id, task, agent_id, trial)
        REFERENCES trials (run_id, task, agent_id, trial) ON DELETE CASCADE
);

CREATE TABLE tags (
    run_id         TEXT NOT NULL,
    task           TEXT NOT NULL,
    agent_id       TEXT NOT NULL,
    trial          INTEGER NOT NULL,
    seq            INTEGER NOT NULL,
    name           TEXT NOT NULL,
    -- The tag's evidence lines: [{"file", "line", "text"}].
    evidence_json  TEXT NOT NULL,
    PRIMARY KEY (run_id, task, agent_id, trial, seq),
    FOREIGN KEY (run_id, task, agent_id, trial)
        REFERENCES trials (run_id, task, agent_id, trial) ON DELETE CASCADE
);
CREATE INDEX tags_by_name ON tags (name);
"#;

/// Version 2: whether a trial's task is a negative control (its passes are
/// suspected forgeries or broken verifiers, kept out of every pass rate).
const MIGRATION_2: &str = r#"
ALTER TABLE trials ADD COLUMN negative_control INTEGER NOT NULL DEFAULT 0;
"#;

/// Version 3: each run's tasks with their metadata (from run.toml), so
/// that a pass rate per domain, difficulty or language is one join.
const MIGRATION_3: &str = r#"
CREATE TABLE tasks (
    run_id          TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    task            TEXT NOT NULL,
    title           TEXT NOT NULL,
    domain          TEXT NOT NULL,
    difficulty      TEXT NOT NULL,
    -- The main language (the first of languages), and all of them as JSON.
    language        TEXT,
    languages_json  TEXT NOT NULL,
    legacy          INTEGER NOT NULL,
    gpu             INTEGER NOT NULL,
    qemu            INTEGER NOT NULL,
    year            INTEGER,
    tags_json       TEXT NOT NULL,
    PRIMARY KEY (run_id, task)
);
CREATE INDEX tasks_by_domain ON tasks (domain);
"#;

/// The tables, children first: the order to drop them in.
pub(crate) const TABLES: &[&str] =
    &["tags", "steps", "checks", "trials", "tasks", "runs", "schema_migrations"];
