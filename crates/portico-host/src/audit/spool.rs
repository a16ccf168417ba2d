//! The spool: records the store could not take yet, in order, one JSON line each, synced to
//! disk before the writer moves on. Replayed in order, before any newer record, when the store
//! is back; a record the store already has (a commit whose answer was lost) is skipped.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead as _, BufReader, Seek as _, SeekFrom, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::AuditError;
use super::chain::{hex, unhex32};
use super::record::Columns;
use super::store::StoredRecord;

#[derive(Serialize, Deserialize)]
struct Line {
    seq: u64,
    columns: Columns,
    text: String,
    hash: String,
}

fn to_line(r: &StoredRecord) -> Line {
    Line { seq: r.seq, columns: r.columns.clone(), text: r.text.clone(), hash: hex(&r.hash) }
}

fn from_line(text: &str) -> Option<StoredRecord> {
    let line: Line = serde_json::from_str(text).ok()?;
    Some(StoredRecord { seq: line.seq, columns: line.columns, text: line.text, hash: unhex32(&line.hash)? })
}

/// A file of records waiting for the store.
#[derive(Debug)]
pub(crate) struct Spool {
    path: PathBuf,
    /// Records in the file not yet in the store.
    records: u64,
    /// Where the first of them starts.
    read_pos: u64,
    /// The file's length.
    len: u64,
    last: Option<(u64, [u8; 32])>,
}

impl Spool {
    /// The spool at `path`, with what a previous run left in it.
    pub fn open(path: &Path) -> Result<Spool, AuditError> {
        let io_err = |e: io::Error| AuditError::Io { path: path.to_path_buf(), message: e.to_string() };
        let mut spool = Spool { path: path.to_path_buf(), records: 0, read_pos: 0, len: 0, last: None };
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(spool),
            Err(e) => return Err(io_err(e)),
        };
        let mut reader = BufReader::new(file);
        let mut good_len = 0u64;
        let mut line = String::new();
        loop {
            line.clear();
            let n = reader.read_line(&mut line).map_err(io_err)?;
            if n == 0 {
                break;
            }
            let complete = line.ends_with('\n');
            match from_line(line.trim_end()).filter(|_| complete) {
                Some(r) => {
                    spool.records += 1;
                    spool.last = Some((r.seq, r.hash));
                    good_len += n as u64;
                }
                None => {
                    let rest = reader.fill_buf().map(|b| b.is_empty()).unwrap_or(false);
                    if !rest {
                        return Err(AuditError::Io {
                            path: path.to_path_buf(),
                            message: format!("line {} of the spool is not a record", spool.records + 1),
                        });
                    }
                    tracing::warn!(path = %path.display(), "the spool's last line was cut short (a crash while writing it); dropped");
                    let f = OpenOptions::new().write(true).open(path).map_err(io_err)?;
                    f.set_len(good_len).map_err(io_err)?;
                    break;
                }
            }
        }
        spool.len = good_len;
        Ok(spool)
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records waiting.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Whether none are.
    pub fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// The `seq` and hash of the last record in it.
    pub fn last(&self) -> Option<(u64, [u8; 32])> {
        self.last
    }

    /// Adds records after the others, synced; on failure the file is as it was.
    pub fn append(&mut self, records: &[StoredRecord]) -> io::Result<()> {
        let mut buf = String::new();
        for r in records {
            buf.push_str(&serde_json::to_string(&to_line(r)).map_err(io::Error::other)?);
            buf.push('\n');
        }
        let mut file = OpenOptions::new().create(true).append(true).mode(0o600).open(&self.path)?;
        if let Err(e) = file.write_all(buf.as_bytes()).and_then(|()| file.sync_data()) {
            let _ = file.set_len(self.len);
            return Err(e);
        }
        self.len += buf.len() as u64;
        self.records += records.len() as u64;
        if let Some(r) = records.last() {
            self.last = Some((r.seq, r.hash));
        }
        Ok(())
    }

    /// Up to `max` of the waiting records, oldest first, and where the next would start.
    pub fn peek(&self, max: usize) -> io::Result<(Vec<StoredRecord>, u64)> {
        let mut file = File::open(&self.path)?;
        file.seek(SeekFrom::Start(self.read_pos))?;
        let mut reader = BufReader::new(file);
        let mut out = Vec::new();
        let mut pos = self.read_pos;
        let mut line = String::new();
        while out.len() < max && pos < self.len {
            line.clear();
            let n = reader.read_line(&mut line)?;
            if n == 0 {
                break;
            }
            pos += n as u64;
            out.push(
                from_line(line.trim_end())
                    .ok_or_else(|| io::Error::other(format!("{}: a line is not a record", self.path.display())))?,
            );
        }
        Ok((out, pos))
    }

    /// The records [`Spool::peek`] gave are in the store now.
    pub fn consumed(&mut self, records: usize, pos: u64) -> io::Result<()> {
        self.records = self.records.saturating_sub(records as u64);
        self.read_pos = pos;
        if self.records == 0 {
            self.clear()?;
        }
        Ok(())
    }

    /// Empties the file.
    fn clear(&mut self) -> io::Result<()> {
        match fs::remove_file(&self.path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        self.records = 0;
        self.read_pos = 0;
        self.len = 0;
        Ok(())
    }
}
