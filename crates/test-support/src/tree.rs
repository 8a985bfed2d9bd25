//! A fixture tree: files laid out as under `/` (`proc/…`, `sys/…`) in a temporary directory,
//! read through [`FsRoot::at`] by the code under test, removed on drop. Each test file adds the
//! helpers for its own files (a process's `stat`, an interface's `sysfs` attributes) on top.

use std::path::{Path, PathBuf};

use measure::FsRoot;

/// A fixture root, removed on drop.
#[derive(Debug)]
pub struct Tree {
    dir: PathBuf,
}

impl Tree {
    /// An empty tree named after `tag` and this process (tests running at once get their own).
    pub fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("procmon-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let made = std::fs::create_dir_all(&dir);
        assert!(made.is_ok(), "creating {}: {made:?}", dir.display());
        Self { dir }
    }

    /// Where the tree is.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// `rel` inside the tree.
    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.dir.join(rel)
    }

    /// Makes directory `rel` (and its parents).
    pub fn mkdir(&self, rel: impl AsRef<Path>) -> PathBuf {
        let dir = self.join(rel);
        let made = std::fs::create_dir_all(&dir);
        assert!(made.is_ok(), "creating {}: {made:?}", dir.display());
        dir
    }

    /// Writes file `rel` (making its directory), replacing what was there.
    pub fn write(&self, rel: impl AsRef<Path>, contents: impl AsRef<[u8]>) {
        let path = self.join(rel);
        if let Some(parent) = path.parent() {
            let made = std::fs::create_dir_all(parent);
            assert!(made.is_ok(), "creating {}: {made:?}", parent.display());
        }
        let written = std::fs::write(&path, contents);
        assert!(written.is_ok(), "writing {}: {written:?}", path.display());
    }

    /// Removes `rel` (a file or a directory with what is in it), if it is there.
    pub fn remove(&self, rel: impl AsRef<Path>) {
        let path = self.join(rel);
        let _ = std::fs::remove_dir_all(&path).or_else(|_| std::fs::remove_file(&path));
    }

    /// The tree as the root code under test reads `/proc` and `/sys` from.
    pub fn root(&self) -> FsRoot {
        FsRoot::at(&self.dir)
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_land_under_the_root_and_go_with_it() {
        let t = Tree::new("support-self-test");
        t.write("proc/1/stat", "1 (init) S 0\n");
        assert_eq!(
            std::fs::read_to_string(t.join("proc/1/stat")).ok().as_deref(),
            Some("1 (init) S 0\n")
        );
        t.remove("proc/1");
        assert!(!t.join("proc/1").exists());
        let dir = t.path().to_path_buf();
        drop(t);
        assert!(!dir.exists());
    }
}
