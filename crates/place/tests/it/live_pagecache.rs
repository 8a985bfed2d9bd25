//! Page-cache residency on this machine's real kernel and filesystem (the target directory, a
//! disk filesystem here). Multi-node placement is checked in the guest suite
//! (crates/platscope/tests/it/guest_pagecache.rs).

use std::io::Write;
use std::path::PathBuf;
use test_tier::live;

use place::pagecache::{Backing, CacheFile, PageCacheError};
use place::MemPolicy;

const MIB: usize = 1 << 20;

/// A scratch file under target/ (a disk filesystem, unlike a tmpfs /tmp), removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str, bytes: usize) -> Self {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
        let path = dir.join(format!("pagecache-{name}-{}", std::process::id()));
        let mut f = std::fs::File::create(&path).expect("create scratch file");
        let chunk: Vec<u8> = (0..MIB).map(|i| (i % 251) as u8).collect();
        for _ in 0..bytes / MIB {
            f.write_all(&chunk).expect("write");
        }
        f.write_all(&chunk[..bytes % MIB]).expect("write");
        f.sync_all().expect("sync");
        Scratch(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[live]
fn written_file_is_cached_then_evicted_then_loaded() {
    let s = Scratch::new("cycle", 16 * MIB + 123);
    let f = CacheFile::open(&s.0).expect("open");
    assert_eq!(f.pages(), (16 * MIB as u64 + 123).div_ceil(4096));
    let r = f.residency().expect("residency");
    println!("after write: {r:?}");
    if r.backing != Backing::PageCache {
        println!("{} is on {}: skipping the eviction half", s.0.display(), r.filesystem);
        return;
    }
    // Just written: (nearly) all cached, and every cached page has a node.
    assert!(r.percent_cached > 95.0, "{r:?}");
    assert_eq!(r.nodes.iter().map(|n| n.pages).sum::<u64>() + r.unlocated, r.resident);

    let e = f.evict().expect("evict");
    println!("evict: {e:?}");
    assert!(e.synced);
    assert!(e.resident_after * 20 < f.pages(), "more than 5% still cached: {e:?}");

    let l = f.load(&MemPolicy::Inherit, &measure::progress::hidden()).expect("load");
    println!("load: {l:?}");
    assert_eq!(l.bytes_read, f.bytes());
    assert!(l.resident_after * 100 >= f.pages() * 95, "{l:?}");

    let read = f.read_from(place::pin::affinity(0).expect("affinity")[0], 3).expect("read");
    println!("read: {read:?}");
    assert_eq!(read.passes.len(), 3);
    assert!(read.gbps > 0.05 && read.gbps < 500.0, "{read:?}");
}

#[live]
fn empty_file_has_no_pages() {
    let s = Scratch::new("empty", 0);
    let f = CacheFile::open(&s.0).expect("open");
    let r = f.residency().expect("residency");
    assert_eq!((r.pages, r.resident, r.percent_cached), (0, 0, 0.0));
    assert!(r.nodes.is_empty());
    assert!(matches!(f.read_from(0, 1), Err(PageCacheError::Empty(_))));
    assert_eq!(f.evict().expect("evict").dropped(), 0);
}

#[live]
fn special_files_are_refused_before_opening() {
    let missing = CacheFile::open("/nonexistent/platscope".as_ref()).expect_err("missing");
    assert!(matches!(missing, PageCacheError::NotFound(_)), "{missing}");
    let dir = CacheFile::open(env!("CARGO_TARGET_TMPDIR").as_ref()).expect_err("directory");
    assert!(matches!(dir, PageCacheError::Directory(_)), "{dir}");
    let zero = CacheFile::open("/dev/zero".as_ref()).expect_err("device");
    assert!(zero.to_string().contains("character device"), "{zero}");

    let fifo =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("fifo-{}", std::process::id()));
    let c = std::ffi::CString::new(fifo.to_str().expect("utf-8")).expect("path");
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    // Opening a FIFO for reading would block without a writer; this must return at once.
    let err = CacheFile::open(&fifo).expect_err("fifo");
    let _ = std::fs::remove_file(&fifo);
    assert!(err.to_string().contains("FIFO"), "{err}");
}
