//! Settings that live in files (`/sys/kernel/mm/transparent_hugepage/enabled`,
//! `/proc/sys/vm/swappiness`, a cpufreq policy's `scaling_governor`): what a file holds now,
//! the choices it offers, and writing a value with a read-back.
//!
//! Many such files list their choices with the current one in brackets (`always [madvise]
//! never`); their value is the bracketed word, and a value outside the list is refused before
//! anything is written.

use std::io::{self, Write as _};
use std::path::Path;

/// The value a settings file holds: the bracketed choice of a file that lists its choices,
/// else its content with every run of blanks made one space (`4\t4\t1\t7` reads `4 4 1 7`).
pub fn value_of(text: &str) -> String {
    match bracketed(text) {
        Some(chosen) => chosen.to_string(),
        None => normalized(text),
    }
}

/// The choices a file lists when it marks the current one in brackets; `None` for a file
/// that holds a plain value.
pub fn choices(text: &str) -> Option<Vec<String>> {
    bracketed(text)?;
    Some(
        text.split_whitespace()
            .map(|w| w.trim_start_matches('[').trim_end_matches(']').to_string())
            .collect(),
    )
}

fn bracketed(text: &str) -> Option<&str> {
    text.split_whitespace().find_map(|w| w.strip_prefix('[')?.strip_suffix(']'))
}

fn normalized(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether two values are the same setting (blanks aside).
pub fn same(a: &str, b: &str) -> bool {
    normalized(a) == normalized(b)
}

/// The value `path` holds now.
pub fn read(path: &Path) -> io::Result<String> {
    std::fs::read_to_string(path).map(|t| value_of(&t))
}

/// Writes `value` to `path` as `echo VALUE > PATH` would (sysfs and procfs ignore the
/// truncation a plain file needs), then reads it back: an error when
/// the kernel refused it or the file reads something else afterwards (a value it rounded or
/// ignored).
pub fn write(path: &Path, value: &str) -> io::Result<()> {
    let mut file = std::fs::OpenOptions::new().write(true).truncate(true).open(path)?;
    file.write_all(format!("{value}\n").as_bytes())?;
    drop(file);
    let now = read(path)?;
    if same(&now, value) {
        Ok(())
    } else {
        Err(io::Error::other(format!("wrote '{value}' but it reads '{now}'")))
    }
}

/// Whether `path` can be written, found by opening it for writing and closing it unwritten:
/// nothing changes, and the kernel answers as it would to a write (a file without a store
/// method, a read-only sysctl, not root).
pub fn writable(path: &Path) -> io::Result<()> {
    std::fs::OpenOptions::new().write(true).open(path).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bracketed_files_read_as_their_choice() {
        // /sys/kernel/mm/transparent_hugepage/enabled and defrag on Debian 12 (Linux 6.1).
        assert_eq!(value_of("always [madvise] never\n"), "madvise");
        assert_eq!(value_of("always defer defer+madvise [madvise] never\n"), "madvise");
        assert_eq!(
            choices("always defer defer+madvise [madvise] never\n").unwrap(),
            ["always", "defer", "defer+madvise", "madvise", "never"]
        );
        // A block device's scheduler.
        assert_eq!(value_of("mq-deadline kyber [none]\n"), "none");
        // Plain files: their content, blanks normalised (kernel.printk).
        assert_eq!(value_of("60\n"), "60");
        assert_eq!(value_of("4\t4\t1\t7\n"), "4 4 1 7");
        assert!(choices("60\n").is_none());
        assert!(same("4 4 1 7", "4\t4  1 7\n"));
        assert!(!same("60", "6 0"));
    }

    #[test]
    fn a_write_is_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("swappiness");
        std::fs::write(&path, "60\n").unwrap();
        write(&path, "10").unwrap();
        assert_eq!(read(&path).unwrap(), "10");
        assert!(writable(&path).is_ok());
        assert!(writable(&dir.path().join("absent")).is_err());
    }
}
