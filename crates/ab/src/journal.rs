//! Nothing left changed: before the first write, every file an A/B will touch is recorded with
//! its original value in a journal (JSON, fsynced, beside the default results database), and
//! [`Changes`] puts every value back on every way out — the normal end, an error, Ctrl-C or
//! SIGTERM (the run stops at the stop flag and restores), a panic (unwinding drops the guard).
//! After a `kill -9`, a crash or a power cut the journal stays behind: every `platscope` run
//! then says so ([`pending_notice`]) and `platscope ab --restore` finishes the job
//! ([`restore_pending`]).
//!
//! The journal is created exclusively, so it is also the lock: one A/B changes a machine at a
//! time. It names the process that wrote it (pid and start time, so a reused pid is not taken
//! for it); while that process lives, it is not pending but in use.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::files;
use crate::setting::Write;
use crate::AbError;

/// The journal's file name, beside the default results database.
pub const FILE_NAME: &str = "ab-journal.json";

/// Set in the environment of the workloads an A/B runs: their own `platscope` run is part of
/// it and says nothing about the journal.
pub const CHILD_VARIABLE: &str = "PLATSCOPE_AB_CHILD";

/// Where the journal is: beside the default results database
/// (`$XDG_DATA_HOME/platscope/ab-journal.json`), whatever `--db` a run names, so every
/// `platscope` run finds it.
pub fn default_path() -> Option<PathBuf> {
    Some(results::default_path()?.parent()?.join(FILE_NAME))
}

/// One file's original value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Original {
    /// The setting that writes it (`thp`, `sysctl:vm.swappiness`).
    pub setting: String,
    pub path: PathBuf,
    pub value: String,
}

/// What the journal holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Journal {
    /// The `platscope ab` process that wrote it.
    pub pid: u32,
    /// Its start time in clock ticks since boot (`/proc/PID/stat`), so a reused pid is told
    /// apart.
    pub start_ticks: Option<u64>,
    pub started: String,
    pub argv: Vec<String>,
    pub originals: Vec<Original>,
}

/// A setting put back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Restored {
    pub setting: String,
    pub path: PathBuf,
    pub value: String,
}

/// The start time of process `pid` in ticks since boot.
fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    measure::procstat::parse_stat(&stat).ok().map(|s| s.start_ticks)
}

impl Journal {
    /// A journal for this process of `originals`.
    pub fn of_this_process(originals: Vec<Original>) -> Self {
        let pid = std::process::id();
        Journal {
            pid,
            start_ticks: start_ticks(pid),
            started: measure::time::utc_now_rfc3339(),
            // A workload's connection string may hold a password: never on disk.
            argv: results::redact_argv(&std::env::args().collect::<Vec<_>>()),
            originals,
        }
    }

    /// Whether the process that wrote it is still running.
    pub fn owner_alive(&self) -> bool {
        match (self.start_ticks, start_ticks(self.pid)) {
            (Some(written), Some(now)) => written == now,
            // No start time recorded: the pid alone.
            (None, now) => now.is_some(),
            (Some(_), None) => false,
        }
    }

    /// The settings it holds, in a few words: `thp, sysctl:vm.swappiness`.
    pub fn settings(&self) -> String {
        let mut names: Vec<&str> = self.originals.iter().map(|o| o.setting.as_str()).collect();
        names.dedup();
        names.join(", ")
    }

    /// Writes it at `path`, only if no journal is there (the lock), then flushes it and its
    /// directory to disk: after this returns, a crash leaves it readable.
    pub fn create(&self, path: &Path) -> Result<(), AbError> {
        let failed =
            |e: std::io::Error| AbError::Journal { path: path.to_path_buf(), why: e.to_string() };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(failed)?;
        }
        let text = serde_json::to_string_pretty(self)
            .map_err(|e| AbError::Journal { path: path.to_path_buf(), why: e.to_string() })?;
        let mut file = match std::fs::OpenOptions::new().write(true).create_new(true).open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(match read(path)? {
                    Some(other) => busy(&other),
                    None => failed(e),
                })
            }
            Err(e) => return Err(failed(e)),
        };
        file.write_all(text.as_bytes()).and_then(|()| file.sync_all()).map_err(failed)?;
        sync_dir(path);
        Ok(())
    }
}

/// A journal that is there already: in use by a live A/B, or pending.
fn busy(other: &Journal) -> AbError {
    if other.owner_alive() {
        AbError::Usage(format!(
            "another `platscope ab` (pid {}) is changing {}; wait for it to end",
            other.pid,
            other.settings()
        ))
    } else {
        AbError::Usage(format!(
            "a settings journal is pending from an A/B that did not finish (pid {}, {}): run \
             `platscope ab --restore` first",
            other.pid,
            other.settings()
        ))
    }
}

/// The journal at `path`, if there is one.
pub fn read(path: &Path) -> Result<Option<Journal>, AbError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(AbError::Journal { path: path.to_path_buf(), why: e.to_string() }),
    };
    serde_json::from_str(&text).map(Some).map_err(|e| AbError::Journal {
        path: path.to_path_buf(),
        why: format!("it does not read as a journal ({e}); put the settings it names back by hand and remove it"),
    })
}

/// Removes the journal and flushes its directory.
fn remove(path: &Path) -> Result<(), AbError> {
    match std::fs::remove_file(path) {
        Ok(()) => {
            sync_dir(path);
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(AbError::Journal { path: path.to_path_buf(), why: e.to_string() }),
    }
}

/// Flushes the directory holding `path`, so a file made or removed there stays so after a
/// crash (best effort: a filesystem that cannot has nothing to flush).
fn sync_dir(path: &Path) {
    if let Some(dir) = path.parent() {
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
}

/// Puts every original back, each read back after: what was restored, and what could not be
/// (with why), each file tried whatever happened to the others.
pub fn put_back(originals: &[Original]) -> (Vec<Restored>, Vec<String>) {
    let mut restored = Vec::new();
    let mut failed = Vec::new();
    for o in originals {
        // A file already holding its original is not written again.
        let done = match files::read(&o.path) {
            Ok(now) if files::same(&now, &o.value) => Ok(()),
            _ => files::write(&o.path, &o.value),
        };
        match done {
            Ok(()) => restored.push(Restored {
                setting: o.setting.clone(),
                path: o.path.clone(),
                value: o.value.clone(),
            }),
            Err(e) => failed.push(format!("{} ({}): {e}", o.setting, o.path.display())),
        }
    }
    (restored, failed)
}

/// The changes one A/B makes, with the journal that lets them be undone: created before the
/// first write, removed once every original is back.
#[derive(Debug)]
pub struct Changes {
    journal: Option<PathBuf>,
    originals: Vec<Original>,
    done: bool,
}

impl Changes {
    /// Records the original values of every file in `writes` (of both sides) in a journal at
    /// `journal`, before anything is written. No files: no journal.
    pub fn begin(writes: &[&Write], journal: Option<&Path>) -> Result<Self, AbError> {
        let mut originals: Vec<Original> = Vec::new();
        for w in writes {
            if originals.iter().any(|o| o.path == w.path) {
                continue;
            }
            let value = files::read(&w.path).map_err(|e| {
                AbError::Usage(format!("{}: {} cannot be read ({e})", w.setting, w.path.display()))
            })?;
            originals.push(Original { setting: w.setting.clone(), path: w.path.clone(), value });
        }
        let journal = if originals.is_empty() {
            None
        } else {
            let path = journal.ok_or_else(|| {
                AbError::Usage(
                    "no place for the settings journal (neither XDG_DATA_HOME nor HOME is set)"
                        .into(),
                )
            })?;
            Journal::of_this_process(originals.clone()).create(path)?;
            Some(path.to_path_buf())
        };
        Ok(Changes { journal, originals, done: false })
    }

    /// The originals recorded.
    pub fn originals(&self) -> &[Original] {
        &self.originals
    }

    /// Sets one side: every recorded file to that side's value, or to its original when the
    /// side does not set it. Files already holding the value are left alone.
    pub fn apply(&self, writes: &[Write]) -> Result<(), AbError> {
        for o in &self.originals {
            let (setting, value) = match writes.iter().find(|w| w.path == o.path) {
                Some(w) => (&w.setting, &w.value),
                None => (&o.setting, &o.value),
            };
            let now = files::read(&o.path).unwrap_or_default();
            if files::same(&now, value) {
                continue;
            }
            files::write(&o.path, value).map_err(|e| AbError::Setting {
                setting: setting.clone(),
                path: o.path.clone(),
                why: e.to_string(),
            })?;
        }
        Ok(())
    }

    /// Puts every original back and removes the journal: what was restored. When a file
    /// cannot be put back, the journal stays (for `ab --restore`) and the error names it.
    pub fn restore(&mut self) -> Result<Vec<Restored>, AbError> {
        self.done = true;
        let (restored, failed) = put_back(&self.originals);
        if !failed.is_empty() {
            return Err(AbError::Restore {
                failed: failed.join("; "),
                journal: self.journal.clone(),
            });
        }
        if let Some(path) = &self.journal {
            remove(path)?;
        }
        Ok(restored)
    }
}

impl Drop for Changes {
    /// The way out that did not restore (an error returned early, a panic): restore now.
    fn drop(&mut self) {
        if !self.done {
            if let Err(e) = self.restore() {
                measure::say!("platscope: ab: {e}");
            }
        }
    }
}

/// `platscope ab --restore`: puts back what the pending journal at `path` records and removes
/// it. `Ok(None)` when nothing is pending; an error when the A/B that wrote it still runs.
pub fn restore_pending(path: &Path) -> Result<Option<(Journal, Vec<Restored>)>, AbError> {
    let Some(journal) = read(path)? else { return Ok(None) };
    if journal.owner_alive() && journal.pid != std::process::id() {
        return Err(AbError::Usage(format!(
            "`platscope ab` (pid {}) is still running and restores {} when it ends (Ctrl-C \
             stops it)",
            journal.pid,
            journal.settings()
        )));
    }
    let (restored, failed) = put_back(&journal.originals);
    if !failed.is_empty() {
        return Err(AbError::Restore { failed: failed.join("; "), journal: Some(path.into()) });
    }
    remove(path)?;
    Ok(Some((journal, restored)))
}

/// The line every `platscope` run prints while a journal is there: pending (run `ab
/// --restore`), or in use by a running A/B. `None` when there is none, or in a workload the
/// A/B itself runs.
pub fn pending_notice() -> Option<String> {
    if std::env::var_os(CHILD_VARIABLE).is_some() {
        return None;
    }
    notice_at(&default_path()?)
}

/// [`pending_notice`] for the journal at `path`.
pub fn notice_at(path: &Path) -> Option<String> {
    if !path.exists() {
        return None;
    }
    Some(match read(path) {
        Ok(Some(j)) if j.owner_alive() => format!(
            "note: `platscope ab` (pid {}) has changed {} for its A/B; figures taken now run \
             under its settings",
            j.pid,
            j.settings()
        ),
        Ok(Some(j)) => format!(
            "a settings journal is pending ({}: {} changed by an A/B that did not finish): run \
             `platscope ab --restore`",
            path.display(),
            j.settings()
        ),
        Ok(None) => return None,
        Err(e) => e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn write(setting: &str, path: &Path, value: &str) -> Write {
        Write { setting: setting.into(), path: path.into(), value: value.into() }
    }

    #[test]
    fn changes_are_journalled_first_and_restored_with_the_journal_removed() {
        let dir = tempfile::tempdir().unwrap();
        // Plain files stand in for sysfs (a bracketed list needs the kernel to move its brackets).
        let thp = file(dir.path(), "enabled", "madvise\n");
        let swappiness = file(dir.path(), "swappiness", "60\n");
        let journal = dir.path().join("state/ab-journal.json");
        let a = vec![write("thp", &thp, "never")];
        let b =
            vec![write("thp", &thp, "always"), write("sysctl:vm.swappiness", &swappiness, "10")];
        let all: Vec<&Write> = a.iter().chain(&b).collect();
        let mut changes = Changes::begin(&all, Some(&journal)).unwrap();
        // The journal holds both originals before anything is written.
        let j = read(&journal).unwrap().unwrap();
        assert_eq!(j.pid, std::process::id());
        assert!(j.owner_alive());
        let originals: Vec<(&str, &str)> =
            j.originals.iter().map(|o| (o.setting.as_str(), o.value.as_str())).collect();
        assert_eq!(originals, [("thp", "madvise"), ("sysctl:vm.swappiness", "60")]);
        // A second A/B is refused while this one holds it.
        let e = Changes::begin(&all, Some(&journal)).unwrap_err().to_string();
        assert!(e.contains("is changing thp, sysctl:vm.swappiness"), "{e}");
        // B sets both; A sets THP and puts swappiness back, as it does not set it.
        changes.apply(&b).unwrap();
        assert_eq!(std::fs::read_to_string(&swappiness).unwrap(), "10\n");
        changes.apply(&a).unwrap();
        assert_eq!(files::read(&thp).unwrap(), "never");
        assert_eq!(files::read(&swappiness).unwrap(), "60");
        changes.apply(&b).unwrap();
        let restored = changes.restore().unwrap();
        assert_eq!(restored.len(), 2);
        assert_eq!(files::read(&thp).unwrap(), "madvise");
        assert_eq!(files::read(&swappiness).unwrap(), "60");
        assert!(!journal.exists());
    }

    #[test]
    fn dropping_the_guard_restores() {
        let dir = tempfile::tempdir().unwrap();
        let knob = file(dir.path(), "knob", "1\n");
        let journal = dir.path().join("ab-journal.json");
        let w = vec![write("sysfs:/sys/knob", &knob, "0")];
        let result = std::panic::catch_unwind(|| {
            let changes = Changes::begin(&w.iter().collect::<Vec<_>>(), Some(&journal)).unwrap();
            changes.apply(&w).unwrap();
            panic!("a bug mid-run");
        });
        assert!(result.is_err());
        assert_eq!(files::read(&knob).unwrap(), "1");
        assert!(!journal.exists());
    }

    #[test]
    fn a_journal_left_by_a_dead_run_is_pending_and_restores() {
        let dir = tempfile::tempdir().unwrap();
        let knob = file(dir.path(), "knob", "changed\n");
        let path = dir.path().join("ab-journal.json");
        // Written by a process that is gone (pid 1's start time is not this one's).
        let journal = Journal {
            pid: 1,
            start_ticks: Some(u64::MAX),
            started: "2026-01-01T00:00:00Z".into(),
            argv: vec!["platscope".into(), "ab".into()],
            originals: vec![Original {
                setting: "sysctl:vm.knob".into(),
                path: knob.clone(),
                value: "original".into(),
            }],
        };
        journal.create(&path).unwrap();
        assert!(!journal.owner_alive());
        let notice = notice_at(&path).unwrap();
        assert!(
            notice.contains("pending") && notice.contains("platscope ab --restore"),
            "{notice}"
        );
        assert!(!notice.contains('\n'));
        // A new A/B will not start over it.
        let e = Changes::begin(&[&write("x", &knob, "y")], Some(&path)).unwrap_err().to_string();
        assert!(e.contains("run `platscope ab --restore` first"), "{e}");
        let (read_back, restored) = restore_pending(&path).unwrap().unwrap();
        assert_eq!(read_back, journal);
        assert_eq!(restored[0].value, "original");
        assert_eq!(files::read(&knob).unwrap(), "original");
        assert!(notice_at(&path).is_none());
        assert!(restore_pending(&path).unwrap().is_none());
    }

    #[test]
    fn a_file_that_cannot_be_put_back_keeps_the_journal() {
        let dir = tempfile::tempdir().unwrap();
        let knob = file(dir.path(), "knob", "1\n");
        let path = dir.path().join("ab-journal.json");
        let w = vec![write("sysfs:/sys/knob", &knob, "0")];
        let mut changes = Changes::begin(&w.iter().collect::<Vec<_>>(), Some(&path)).unwrap();
        changes.apply(&w).unwrap();
        // The file goes away (a device unplugged): the journal stays for a later restore.
        std::fs::remove_file(&knob).unwrap();
        let e = changes.restore().unwrap_err().to_string();
        assert!(e.contains("sysfs:/sys/knob") && e.contains("ab --restore"), "{e}");
        assert!(path.exists());
    }
}
