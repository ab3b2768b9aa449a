//! Read-only access to SQLite databases found in a state directory.

use std::fmt::Write as _;
use std::io::Read;
use std::path::Path;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};

/// The first 16 bytes of every SQLite 3 database.
const HEADER: &[u8; 16] = b"SQLite format 3\0";

/// Blobs longer than this are rendered as their length and hash, to keep
/// row strings short.
const INLINE_BLOB: usize = 32;

/// Whether the content starting with `reader` is an SQLite database.
pub(crate) fn has_header(mut reader: impl Read) -> std::io::Result<bool> {
    let mut header = [0u8; 16];
    let mut filled = 0;
    while filled < header.len() {
        match reader.read(&mut header[filled..])? {
            0 => return Ok(false),
            n => filled += n,
        }
    }
    Ok(&header == HEADER)
}

/// Whether the file name claims to be an SQLite database.
pub(crate) fn has_db_extension(path: &Path) -> bool {
    path.extension().and_then(|ext| ext.to_str()).is_some_and(|ext| matches!(ext, "db" | "sqlite" | "sqlite3"))
}

/// Opens a database read-only; SQLite still reads its `-wal` file.
pub(crate) fn open(path: &Path) -> rusqlite::Result<Connection> {
    Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
}

/// The user tables, sorted. SQLite's internal `sqlite_*` tables are skipped,
/// and so are virtual tables: their content lives in ordinary shadow tables
/// and their module may not be compiled in.
pub(crate) fn user_tables(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' \
         AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' \
         AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name",
    )?;
    let names = stmt.query_map([], |row| row.get(0))?;
    names.collect()
}

/// Whether `err` means a hot journal, left by a transaction that never
/// finished, must be rolled back before a read-only connection can read.
pub(crate) fn is_hot_journal(err: &rusqlite::Error) -> bool {
    matches!(
        err,
        rusqlite::Error::SqliteFailure(e, _)
            if e.extended_code == rusqlite::ffi::SQLITE_READONLY_ROLLBACK
    )
}

/// The messages of `PRAGMA integrity_check`, empty when the database is ok.
pub(crate) fn integrity_problems(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare("PRAGMA integrity_check")?;
    let messages: Vec<String> = stmt.query_map([], |row| row.get(0))?.collect::<Result<_, _>>()?;
    if messages.len() == 1 && messages[0] == "ok" {
        return Ok(Vec::new());
    }
    Ok(messages)
}

/// Prepares `SELECT *` over `table`; its column names come with it.
pub(crate) fn select_all<'c>(conn: &'c Connection, table: &str) -> rusqlite::Result<rusqlite::Statement<'c>> {
    conn.prepare(&format!("SELECT * FROM \"{}\"", table.replace('"', "\"\"")))
}

/// Appends a stable rendering of a cell value: `NULL`, numbers as is, text
/// single-quoted (after `mask`), blobs as hex or as length and hash.
pub(crate) fn render_value(out: &mut String, value: ValueRef<'_>, mask: impl Fn(&str) -> String) {
    match value {
        ValueRef::Null => out.push_str("NULL"),
        ValueRef::Integer(i) => {
            let _ = write!(out, "{i}");
        }
        ValueRef::Real(f) => {
            let _ = write!(out, "{f:?}");
        }
        ValueRef::Text(bytes) => {
            let text = String::from_utf8_lossy(bytes);
            out.push('\'');
            out.push_str(&mask(&text).replace('\'', "''"));
            out.push('\'');
        }
        ValueRef::Blob(bytes) if bytes.len() <= INLINE_BLOB => {
            out.push_str("x'");
            for b in bytes {
                let _ = write!(out, "{b:02x}");
            }
            out.push('\'');
        }
        ValueRef::Blob(bytes) => {
            let hash = blake3::hash(bytes).to_hex();
            let _ = write!(out, "blob({} bytes, blake3 {})", bytes.len(), &hash[..16]);
        }
    }
}
