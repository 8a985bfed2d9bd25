//! Shared by the .deb and Ansible tests: the .deb of this test build's binary.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds the .deb of the binary this test suite was built with into `out` (scripts/deb.sh
/// --binary: no release build) and returns its path.
pub fn build(out: &Path) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/deb.sh");
    let made = Command::new(&script)
        .args(["--binary", env!("CARGO_BIN_EXE_platscope"), "--out"])
        .arg(out)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", script.display()));
    let text = String::from_utf8_lossy(&made.stdout);
    assert!(
        made.status.success(),
        "scripts/deb.sh: exit {:?}\n{text}{}",
        made.status,
        String::from_utf8_lossy(&made.stderr)
    );
    let path = PathBuf::from(text.trim());
    assert!(path.is_file(), "scripts/deb.sh printed {path:?}");
    path
}
