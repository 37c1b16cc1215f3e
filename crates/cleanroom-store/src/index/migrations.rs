//! Schema migrations by version. `schema_migrations` holds one row per
//! applied migration; the index's version is the highest. An index newer
//! than this cleanroom is refused rather than guessed at.

use std::path::Path;

use rusqlite::Connection;

use super::schema::MIGRATIONS;
use super::{At, IndexError};
use cleanroom_env::time::rfc3339_utc_now;

/// The version this cleanroom writes and the newest it reads.
pub const INDEX_SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

const CREATE_MIGRATIONS: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (
    version     INTEGER PRIMARY KEY NOT NULL,
    applied_at  TEXT NOT NULL
)";

/// The index's schema version: 0 for an empty database.
pub(crate) fn current_version(conn: &Connection, path: &Path) -> Result<u32, IndexError> {
    let has_table: bool = conn
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations')",
            [],
            |r| r.get(0),
        )
        .at(path)?;
    if !has_table {
        return Ok(0);
    }
    conn.query_row("SELECT COALESCE(MAX(version), 0) FROM schema_migrations", [], |r| r.get(0)).at(path)
}

/// Applies the migrations the index lacks, in order. The caller holds a
/// write transaction, so two processes opening a new index at once apply
/// each migration once.
pub(crate) fn apply(conn: &Connection, path: &Path) -> Result<u32, IndexError> {
    let current = current_version(conn, path)?;
    if current > INDEX_SCHEMA_VERSION {
        return Err(IndexError::NewerSchema {
            path: path.to_path_buf(),
            found: current,
            supported: INDEX_SCHEMA_VERSION,
        });
    }
    conn.execute_batch(CREATE_MIGRATIONS).at(path)?;
    for (k, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        let version = k as u32 + 1;
        conn.execute_batch(sql).map_err(|source| IndexError::Migration {
            path: path.to_path_buf(),
            version,
            source,
        })?;
        conn.execute(
            "INSERT INTO schema_migrations (version, applied_at) VALUES (?1, ?2)",
            rusqlite::params![version, rfc3339_utc_now()],
        )
        .at(path)?;
    }
    Ok(INDEX_SCHEMA_VERSION)
}
