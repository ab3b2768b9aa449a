//! Fingerprints: a normalised, order-insensitive summary of a state
//! directory, small enough to keep and precise enough to diff.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Read, Seek};
use std::path::Path;

pub use super::fingerprint_error::FingerprintError;
use super::normalizer::Normalizer;
use super::{sqlite, walk};

/// The summary of every file in a state directory, keyed by path relative
/// to the directory (`/`-separated).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fingerprint {
    files: BTreeMap<String, Entry>,
}

/// The summary of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A UTF-8 text file without NUL bytes, up to 64 MiB.
    Text(Lines),
    /// An SQLite database, read together with its `-wal` file.
    Sqlite(Database),
    /// Any other file.
    Binary {
        /// The file size in bytes.
        size: u64,
        /// The BLAKE3 hash of the content.
        hash: blake3::Hash,
    },
    /// A symlink, which is recorded but never followed.
    Symlink {
        /// The link target, as stored in the link.
        target: String,
    },
}

/// A multiset of normalised lines: each distinct line with its number of
/// occurrences, so that memory follows distinct content, not file size.
pub type Lines = BTreeMap<Line, u64>;

/// One normalised line of a text file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Line {
    /// The line without its newline, after masking.
    pub text: String,
    /// False for a final line without a trailing newline, which is how a
    /// partial write usually looks.
    pub terminated: bool,
}

/// The content of an SQLite database.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Database {
    /// User tables by name.
    pub tables: BTreeMap<String, Table>,
    /// Problems found by `PRAGMA integrity_check` or while reading tables;
    /// empty when the database is sound.
    pub integrity: Vec<String>,
}

/// The content of one SQLite table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Table {
    /// Column names, ignored columns excluded.
    pub columns: Vec<String>,
    /// Each distinct rendered row with its number of occurrences. A row is
    /// rendered as `(col=value, ...)` with normalised values.
    pub rows: BTreeMap<String, u64>,
}

impl Fingerprint {
    /// Fingerprints the state directory `dir`, masking volatile content
    /// with `norm`. The walk is sorted, so the result is deterministic.
    pub fn of(dir: &Path, norm: &Normalizer) -> Result<Fingerprint, FingerprintError> {
        let mut files = BTreeMap::new();
        for file in walk::walk(dir)? {
            let entry = if file.is_symlink {
                let target = fs::read_link(&file.path)
                    .map_err(|source| FingerprintError::Read { path: file.path.clone(), source })?;
                Entry::Symlink { target: link_target(&target, dir) }
            } else {
                file_entry(&file.path, norm)?
            };
            files.insert(file.rel, entry);
        }
        Ok(Fingerprint { files })
    }

    /// The summary of the file at `path` (relative, `/`-separated).
    pub fn get(&self, path: &str) -> Option<&Entry> {
        self.files.get(path)
    }

    /// Every file with its summary, sorted by path.
    pub fn files(&self) -> impl Iterator<Item = (&str, &Entry)> {
        self.files.iter().map(|(path, entry)| (path.as_str(), entry))
    }

    /// Adds or replaces the summary of one file; mostly useful in tests.
    pub fn insert(&mut self, path: impl Into<String>, entry: Entry) {
        self.files.insert(path.into(), entry);
    }
}

impl Entry {
    /// A short description of the kind of file, for findings.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Entry::Text(_) => "a text file",
            Entry::Sqlite(_) => "an SQLite database",
            Entry::Binary { .. } => "a binary file",
            Entry::Symlink { .. } => "a symlink",
        }
    }

    /// Summarises text content as lines, or `None` when it is not text.
    pub fn text(reader: impl Read, norm: &Normalizer) -> io::Result<Option<Entry>> {
        let mut lines = Lines::new();
        let is_text = walk::read_lines(reader, |text, terminated| {
            let line = Line { text: norm.mask(text).into_owned(), terminated };
            *lines.entry(line).or_insert(0) += 1;
        })?;
        Ok(is_text.then_some(Entry::Text(lines)))
    }
}

/// A link's target as compared: an absolute target into the state directory `dir` is written
/// relative to it (`{state}/d.txt`), since each sandbox lives at its own path and a run that
/// links to `$FLAKEHUNT_STATE/d.txt` made the same link in every one of them.
fn link_target(target: &Path, dir: &Path) -> String {
    // As the run was told (`FLAKEHUNT_STATE`) or as `pwd -P` spells it.
    let spellings = [std::path::absolute(dir).ok(), fs::canonicalize(dir).ok()];
    let inside = spellings.iter().flatten().find_map(|d| target.strip_prefix(d).ok());
    match inside {
        Some(rest) if target.is_absolute() => format!("{{state}}/{}", rest.to_string_lossy()),
        _ => target.to_string_lossy().into_owned(),
    }
}

fn file_entry(path: &Path, norm: &Normalizer) -> Result<Entry, FingerprintError> {
    let read_error = |source| FingerprintError::Read { path: path.to_owned(), source };
    let mut file = walk::open(path)?;
    let size = file.metadata().map_err(read_error)?.len();
    if sqlite::has_header(&mut file).map_err(read_error)? {
        return database(path, norm);
    }
    if sqlite::has_db_extension(path) {
        // SQLite itself treats an empty file as an empty database, which is
        // what an application leaves after opening without writing.
        if size == 0 {
            return Ok(Entry::Sqlite(Database::default()));
        }
        return Err(FingerprintError::NotSqlite { path: path.to_owned() });
    }
    file.rewind().map_err(read_error)?;
    if size <= walk::TEXT_LIMIT {
        if let Some(entry) = Entry::text(&mut file, norm).map_err(read_error)? {
            return Ok(entry);
        }
        file.rewind().map_err(read_error)?;
    }
    let mut hasher = blake3::Hasher::new();
    hasher.update_reader(&mut file).map_err(read_error)?;
    Ok(Entry::Binary { size, hash: hasher.finalize() })
}

/// Reads every user table of a database. Failures after opening are
/// recorded as integrity problems rather than errors: a database that a
/// concurrent run corrupted is a finding, not a reason to stop.
fn database(path: &Path, norm: &Normalizer) -> Result<Entry, FingerprintError> {
    let conn = sqlite::open(path).map_err(|source| FingerprintError::Sqlite { path: path.to_owned(), source })?;
    let mut db = Database::default();
    match sqlite::integrity_problems(&conn) {
        Ok(problems) => db.integrity = problems,
        Err(err) if sqlite::is_hot_journal(&err) => {
            // Only a writer may roll the interrupted transaction back, and
            // fingerprinting never writes, so nothing else is readable.
            db.integrity.push(
                "interrupted transaction: the hot journal needs a rollback before the \
                 database can be read"
                    .to_owned(),
            );
            return Ok(Entry::Sqlite(db));
        }
        Err(err) => db.integrity.push(format!("integrity check failed: {err}")),
    }
    let names = match sqlite::user_tables(&conn) {
        Ok(names) => names,
        Err(err) => {
            db.integrity.push(format!("cannot list tables: {err}"));
            return Ok(Entry::Sqlite(db));
        }
    };
    for name in names {
        match table(&conn, &name, norm) {
            Ok(table) => {
                db.tables.insert(name, table);
            }
            Err(err) => db.integrity.push(format!("cannot read table {name}: {err}")),
        }
    }
    Ok(Entry::Sqlite(db))
}

fn table(conn: &rusqlite::Connection, name: &str, norm: &Normalizer) -> rusqlite::Result<Table> {
    let mut stmt = sqlite::select_all(conn, name)?;
    let mut table = Table::default();
    // Indexes of the columns that are kept, in table order.
    let mut kept = Vec::new();
    for (i, column) in stmt.column_names().into_iter().enumerate() {
        if !norm.ignores_column(name, column) {
            kept.push(i);
            table.columns.push(column.to_owned());
        }
    }
    let mut rows = stmt.query([])?;
    let mut text = String::new();
    while let Some(row) = rows.next()? {
        text.clear();
        text.push('(');
        for (n, &i) in kept.iter().enumerate() {
            if n > 0 {
                text.push_str(", ");
            }
            text.push_str(&table.columns[n]);
            text.push('=');
            sqlite::render_value(&mut text, row.get_ref(i)?, |value| norm.mask(value).into_owned());
        }
        text.push(')');
        // Look up before inserting so that repeated rows cost no allocation.
        match table.rows.get_mut(&text) {
            Some(count) => *count += 1,
            None => {
                table.rows.insert(text.clone(), 1);
            }
        }
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::Connection;

    fn line(text: &str, terminated: bool) -> Line {
        Line { text: text.to_owned(), terminated }
    }

    #[test]
    fn absolute_links_into_the_state_compare_alike_in_every_sandbox() {
        let tmp = tempfile::tempdir().unwrap();
        let norm = Normalizer::default();
        let mut fingerprints = Vec::new();
        for name in ["reference-1", "level-1-2x1"] {
            let dir = tmp.path().join(name);
            fs::create_dir(&dir).unwrap();
            std::os::unix::fs::symlink(dir.join("d.txt"), dir.join("abs")).unwrap();
            std::os::unix::fs::symlink("/etc/hostname", dir.join("outside")).unwrap();
            fingerprints.push(Fingerprint::of(&dir, &norm).unwrap());
        }
        assert_eq!(fingerprints[0], fingerprints[1]);
        assert_eq!(fingerprints[0].get("abs"), Some(&Entry::Symlink { target: "{state}/d.txt".into() }));
        assert_eq!(fingerprints[0].get("outside"), Some(&Entry::Symlink { target: "/etc/hostname".into() }));
    }

    #[test]
    fn classifies_text_binary_and_symlinks() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("log"), "b\na\nb\nlast").unwrap();
        fs::write(tmp.path().join("bin"), [1u8, 0, 2]).unwrap();
        std::os::unix::fs::symlink("log", tmp.path().join("link")).unwrap();
        let fp = Fingerprint::of(tmp.path(), &Normalizer::default()).unwrap();

        let Some(Entry::Text(lines)) = fp.get("log") else {
            panic!("log is text: {fp:?}");
        };
        let expected = Lines::from([(line("a", true), 1), (line("b", true), 2), (line("last", false), 1)]);
        assert_eq!(lines, &expected);
        assert!(matches!(fp.get("bin"), Some(Entry::Binary { size: 3, .. })));
        assert_eq!(fp.get("link"), Some(&Entry::Symlink { target: "log".into() }));
    }

    #[test]
    fn masks_lines() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(
            tmp.path().join("log"),
            "req 123e4567-e89b-12d3-a456-426614174000\nreq 00000000-0000-0000-0000-000000000000\n",
        )
        .unwrap();
        let fp = Fingerprint::of(tmp.path(), &Normalizer::default()).unwrap();
        assert_eq!(fp.get("log"), Some(&Entry::Text(Lines::from([(line("req <*>", true), 2)]))));
    }

    #[test]
    fn fake_database_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("app.db"), "not a database").unwrap();
        let err = Fingerprint::of(tmp.path(), &Normalizer::default()).unwrap_err();
        assert!(matches!(err, FingerprintError::NotSqlite { .. }));
        assert!(err.to_string().ends_with("app.db is not an SQLite database"));

        // An empty file is what SQLite leaves before the first write.
        fs::write(tmp.path().join("app.db"), "").unwrap();
        let fp = Fingerprint::of(tmp.path(), &Normalizer::default()).unwrap();
        assert_eq!(fp.get("app.db"), Some(&Entry::Sqlite(Database::default())));
    }

    #[test]
    fn reads_sqlite_with_wal_and_ignored_columns() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("state.sqlite");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             PRAGMA wal_autocheckpoint = 0;
             CREATE TABLE events (id INTEGER PRIMARY KEY, name TEXT, at TEXT, data BLOB);
             CREATE INDEX events_name ON events (name);
             INSERT INTO events (name, at, data) VALUES
                ('it''s', '12:00', x'00ff'),
                ('run 123e4567-e89b-12d3-a456-426614174000', '12:01', NULL);",
        )
        .unwrap();
        // The rows only live in the WAL while the writer is open.
        assert!(tmp.path().join("state.sqlite-wal").exists());

        let norm = Normalizer::new(&[], &["events.at"]).unwrap();
        let fp = Fingerprint::of(tmp.path(), &norm).unwrap();
        drop(conn);
        let names: Vec<_> = fp.files().map(|(path, _)| path).collect();
        assert_eq!(names, ["state.sqlite"]);
        let Some(Entry::Sqlite(db)) = fp.get("state.sqlite") else {
            panic!("not a database: {fp:?}");
        };
        assert!(db.integrity.is_empty());
        let events = &db.tables["events"];
        assert_eq!(events.columns, ["id", "name", "data"]);
        assert_eq!(
            events.rows,
            BTreeMap::from([
                ("(id=1, name='it''s', data=x'00ff')".to_owned(), 1),
                ("(id=2, name='run <*>', data=NULL)".to_owned(), 1),
            ])
        );
    }

    #[test]
    fn hot_journal_is_an_integrity_problem() {
        let tmp = tempfile::tempdir().unwrap();
        let (live, copy) = (tmp.path().join("live"), tmp.path().join("copy"));
        fs::create_dir(&live).unwrap();
        fs::create_dir(&copy).unwrap();
        let conn = Connection::open(live.join("a.db")).unwrap();
        // A tiny cache forces the open transaction to spill pages into the
        // database file, so the journal is needed to undo them.
        conn.execute_batch(
            "PRAGMA cache_size = 1;
             CREATE TABLE t (x);
             BEGIN;
             WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 500)
             INSERT INTO t SELECT randomblob(1000) FROM c;",
        )
        .unwrap();
        // Copying mid-transaction is what a run killed at that point leaves.
        for name in ["a.db", "a.db-journal"] {
            fs::copy(live.join(name), copy.join(name)).unwrap();
        }
        drop(conn);
        let fp = Fingerprint::of(&copy, &Normalizer::default()).unwrap();
        let Some(Entry::Sqlite(db)) = fp.get("a.db") else {
            panic!("not a database: {fp:?}");
        };
        assert_eq!(db.integrity.len(), 1);
        assert!(db.integrity[0].starts_with("interrupted transaction"));
    }
}
