//! `io pattern` against a workload generator, as root, on tmpfs and on ext4 in a loop-mounted
//! image: the in-kernel tally must equal what the generator did (calls exactly, bytes within
//! a page) and classify sequential and random runs.
//!
//! The generator is this test binary run again (the tracer never counts its own process):
//! it waits on stdin until the programs are attached, does its I/O, and prints what it did.

#![allow(clippy::unwrap_used)] // helpers unwrap too; clippy.toml allows it in #[test] fns only

use std::io::{Read, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use test_tier::live;

use iopattern::mounts::kernel_dev_of;
use iopattern::pattern::{Counts, PAGE, RANDOM, READ, SEQUENTIAL, WRITE};
use iopattern::tracer::{Options, Snapshot};

const PAGE_SIZE: u64 = 4096;

/// A scratch filesystem, unmounted and removed on drop.
struct ScratchFs {
    dir: PathBuf,
    image: Option<PathBuf>,
}

impl ScratchFs {
    fn tmpfs(name: &str) -> Self {
        let dir = scratch_dir(name);
        run("mount", &["-t", "tmpfs", "-o", "size=1300m", "platscope-test", dir.to_str().unwrap()]);
        ScratchFs { dir, image: None }
    }

    fn ext4(name: &str) -> Self {
        let dir = scratch_dir(name);
        let image = dir.with_extension("img");
        std::fs::File::create(&image).unwrap().set_len(1400 << 20).unwrap();
        run("mkfs.ext4", &["-q", "-F", image.to_str().unwrap()]);
        run("mount", &["-o", "loop", image.to_str().unwrap(), dir.to_str().unwrap()]);
        ScratchFs { dir, image: Some(image) }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn dev(&self) -> u32 {
        kernel_dev_of(std::fs::metadata(&self.dir).unwrap().dev())
    }
}

impl Drop for ScratchFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).status();
        let _ = std::fs::remove_dir(&self.dir);
        if let Some(image) = &self.image {
            let _ = std::fs::remove_file(image);
        }
    }
}

fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("platscope-iotest-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run(cmd: &str, args: &[&str]) {
    let status = Command::new(cmd).args(args).status().unwrap();
    assert!(status.success(), "{cmd} {args:?}: {status}");
}

/// What a generator run reported doing.
#[derive(Debug, Default)]
struct Done {
    calls: u64,
    bytes: u64,
    other: u64,
}

/// The generator's test name in this binary: `iopattern_live::generator`.
fn generator_test() -> String {
    let module = module_path!().split_once("::").map_or(module_path!(), |(_, m)| m);
    format!("{module}::generator")
}

/// Runs the generator `mode` on `target` under the tracer and returns the filesystem's
/// counts over exactly its run, and what it said it did.
fn traced(mode: &str, target: &Path, dev: u32, options: Options) -> (Counts, Done, Snapshot) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([&generator_test(), "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env("IOTRACE_GENERATOR", mode)
        .env("IOTRACE_TARGET", target)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // By process unless the test filters by command name (read from the task in the kernel).
    let options =
        if options.comm.is_some() { options } else { Options { pid: Some(child.id()), ..options } };
    let (before, after) = iopattern::tracer::trace(&options, |tracer| {
        let before = tracer.snapshot(true).unwrap();
        child.stdin.take().unwrap().write_all(b"go").unwrap();
        let mut out = String::new();
        child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
        assert!(child.wait().unwrap().success(), "generator failed: {out}");
        let after = tracer.snapshot(true).unwrap();
        ((before, out), after)
    })
    .unwrap();
    let ((before, out), after) = (before, after);
    let line = out
        .lines()
        .find_map(|l| l.split_once("DONE ").map(|(_, rest)| rest))
        .unwrap_or_else(|| panic!("{out}"));
    let nums: Vec<u64> = line.split(' ').map(|n| n.parse().unwrap()).collect();
    let done = Done { calls: nums[0], bytes: nums[1], other: nums[2] };
    let zero = Counts::default();
    let counts =
        after.per_fs.get(&dev).unwrap_or(&zero).since(before.per_fs.get(&dev).unwrap_or(&zero));
    (counts, done, after)
}

fn sequential_share(c: &Counts, dir: usize) -> f64 {
    let seq = c.ops[SEQUENTIAL][dir] as f64;
    seq / (seq + c.ops[RANDOM][dir] as f64)
}

fn write_file(path: &Path, bytes: u64) {
    let f = std::fs::File::create(path).unwrap();
    let chunk = vec![7u8; 1 << 20];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        f.write_all_at(&chunk[..n], bytes - left).unwrap();
        left -= n as u64;
    }
    f.sync_all().unwrap();
}

fn check_sequential(fs: &ScratchFs) {
    let target = fs.path("seq.dat");
    let (c, done, _) = traced("seq-write", &target, fs.dev(), Options::default());
    assert_eq!(c.ops[SEQUENTIAL][WRITE] + c.ops[RANDOM][WRITE], done.calls, "{c:?}");
    assert_eq!(c.bytes[SEQUENTIAL][WRITE] + c.bytes[RANDOM][WRITE], done.bytes, "{c:?}");
    assert!(sequential_share(&c, WRITE) >= 0.999, "{c:?}");

    let (c, done, _) = traced("seq-read", &target, fs.dev(), Options::default());
    assert_eq!(c.ops[SEQUENTIAL][READ] + c.ops[RANDOM][READ], done.calls, "{c:?}");
    assert_eq!(c.bytes[SEQUENTIAL][READ] + c.bytes[RANDOM][READ], done.bytes, "{c:?}");
    assert!(sequential_share(&c, READ) >= 0.999, "{c:?}");
    assert_eq!(c.ops[SEQUENTIAL][WRITE] + c.ops[RANDOM][WRITE], 0);
}

/// Filtered by command name instead of process: the generator's name counts all its calls, a
/// name one letter off none of them (the scratch filesystem is only the generator's).
fn check_comm_filter(fs: &ScratchFs) {
    let target = fs.path("comm.dat");
    // The generator's I/O runs on libtest's thread for the test, named after it: the kernel
    // keeps the first 15 bytes of a thread's name.
    let name: String = generator_test().chars().take(15).collect();
    let by_name = Options { comm: Some(name.clone()), ..Options::default() };
    let (c, done, _) = traced("seq-write", &target, fs.dev(), by_name);
    assert!(done.calls > 0);
    assert_eq!(c.ops[SEQUENTIAL][WRITE] + c.ops[RANDOM][WRITE], done.calls, "{name}: {c:?}");
    let mut other = name.clone();
    let last = other.pop().unwrap();
    other.push(if last == 'x' { 'y' } else { 'x' });
    let (c, done, _) =
        traced("seq-read", &target, fs.dev(), Options { comm: Some(other), ..Options::default() });
    assert!(done.calls > 0);
    assert_eq!(c, Counts::default(), "another name counts nothing");
    std::fs::remove_file(&target).unwrap();
}

fn check_random(fs: &ScratchFs) {
    let target = fs.path("random.dat");
    write_file(&target, 1 << 30);
    let (c, done, snap) = traced("random-pread", &target, fs.dev(), Options::default());
    assert_eq!(c.ops[SEQUENTIAL][READ] + c.ops[RANDOM][READ], done.calls, "{c:?}");
    assert_eq!(c.bytes[SEQUENTIAL][READ] + c.bytes[RANDOM][READ], done.bytes, "{c:?}");
    assert!(sequential_share(&c, READ) <= 0.01, "{c:?}");
    let ino = std::fs::metadata(&target).unwrap().ino();
    let file = snap.files.get(&(fs.dev(), ino)).expect("the file is in the per-file map");
    assert_eq!(file.name, "random.dat");
    std::fs::remove_file(&target).unwrap();
}

/// `exact`: the touched pages show up as paged in, to within 0.1%. The tracepoint reports
/// the fault-around window the kernel tried, not what it mapped: on tmpfs that is the touched
/// pages, except that a window retried after a partly failed attempt counts again (seen: 7
/// pages of 16,384). ext4 on 6.18 maps whole large folios past the window, so there the bytes
/// are a lower bound (docs/io.md).
fn check_mmap(fs: &ScratchFs, exact: bool) {
    let target = fs.path("mapped.dat");
    write_file(&target, 64 << 20);
    let (c, done, _) = traced("mmap-read", &target, fs.dev(), Options::default());
    let paged = c.bytes[PAGE][READ];
    if exact {
        assert!(
            paged.abs_diff(done.bytes) <= done.bytes / 1000,
            "page-ins {paged} for {} bytes touched: {c:?}",
            done.bytes
        );
    } else {
        assert!(
            c.ops[PAGE][READ] > 0 && paged <= done.bytes,
            "page-ins {paged} for {} bytes touched: {c:?}",
            done.bytes
        );
    }
    assert_eq!(c.ops[SEQUENTIAL][READ] + c.ops[RANDOM][READ], 0, "mmap is not read calls");
    std::fs::remove_file(&target).unwrap();
}

fn check_metadata(fs: &ScratchFs) {
    let (c, done, _) = traced("metadata", &fs.path("meta"), fs.dev(), Options::default());
    let files = done.calls;
    // Per file: an O_CREAT open (lookup + create), a stat by absolute path (lookup + getattr),
    // a relative stat, an unlink; plus one mkdir, the directory's open, the getdents64 calls
    // and one rmdir.
    assert_eq!(c.meta[0], 3 * files + 1, "acc/look {c:?}");
    assert_eq!(c.meta[1], done.other, "readdir {c:?}");
    assert_eq!(c.meta[2], 2 * files, "geta/seta {c:?}");
    assert_eq!(c.meta[3], 2 * files + 2, "cr/rm {c:?}");
    assert_eq!(c.meta[4], files, "other (fsync) {c:?}");
}

#[live]
fn tmpfs_tally_matches_the_generator() {
    let fs = ScratchFs::tmpfs("tmpfs");
    check_sequential(&fs);
    check_comm_filter(&fs);
    check_random(&fs);
    check_mmap(&fs, true);
    check_metadata(&fs);
    // The overhead bench's floor: the empty program attaches at the same point and counts
    // nothing of the same workload.
    let target = fs.path("floor.dat");
    let floor = Options { empty_programs: true, ..Options::default() };
    let (c, done, _) = traced("seq-write", &target, fs.dev(), floor);
    assert!(done.calls > 0);
    assert_eq!(c, Counts::default(), "the floor counts nothing");
}

/// The per-file table with one slot: the first file read takes it, the other is kept in the
/// hash; reads alternating between them are still sequential per file, and both files' own
/// counts are right. (A file taken for the slot's would make every read random.) Takes ~1 s.
#[live]
fn files_sharing_a_slot_count_alike() {
    let fs = ScratchFs::tmpfs("slots");
    let (a, b) = (fs.path("a.dat"), fs.path("b.dat"));
    write_file(&a, 8 << 20);
    write_file(&b, 4 << 20);
    for slots in [None, Some(1)] {
        let options = Options { file_slots: slots, ..Options::default() };
        let (c, done, snap) = traced("interleaved-read", &fs.dir, fs.dev(), options);
        assert_eq!(c.ops[SEQUENTIAL][READ] + c.ops[RANDOM][READ], done.calls, "{slots:?}: {c:?}");
        assert_eq!(c.bytes[SEQUENTIAL][READ], done.bytes, "{slots:?}: {c:?}");
        for (path, bytes) in [(&a, 8u64 << 20), (&b, 4 << 20)] {
            let ino = std::fs::metadata(path).unwrap().ino();
            let file = snap.files.get(&(fs.dev(), ino)).expect("each file is in the per-file map");
            assert_eq!(file.bytes[SEQUENTIAL][READ], bytes, "{slots:?}: {file:?}");
            // 64 KiB reads, and the one that finds the end.
            assert_eq!(file.ops[SEQUENTIAL][READ], bytes / (64 << 10) + 1, "{slots:?}: {file:?}");
            assert_eq!(file.ops[RANDOM][READ], 0, "{slots:?}: {file:?}");
        }
    }
    let too_many = Options { file_slots: Some(3), ..Options::default() };
    assert!(matches!(
        iopattern::tracer::trace(&too_many, |_| ()),
        Err(iopattern::Error::FileSlots(3))
    ));
}

#[live]
fn ext4_tally_matches_the_generator() {
    let fs = ScratchFs::ext4("ext4");
    check_sequential(&fs);
    check_random(&fs);
    check_mmap(&fs, false);
    check_metadata(&fs);
}

/// The workload, when run by `traced` (ignored in normal runs: it does nothing without the
/// environment the parent sets).
#[test]
#[ignore = "the workload generator, run by the other tests"]
fn generator() {
    let Ok(mode) = std::env::var("IOTRACE_GENERATOR") else { return };
    let target = PathBuf::from(std::env::var("IOTRACE_TARGET").unwrap());
    let mut go = [0u8; 2];
    std::io::stdin().read_exact(&mut go).unwrap();
    let done = match mode.as_str() {
        "seq-write" => seq_write(&target),
        "seq-read" => seq_read(&target),
        "random-pread" => random_pread(&target),
        "mmap-read" => mmap_read(&target),
        "interleaved-read" => interleaved_read(&target),
        "metadata" => metadata(&target),
        other => panic!("unknown generator mode {other}"),
    };
    println!("DONE {} {} {}", done.calls, done.bytes, done.other);
}

fn seq_write(path: &Path) -> Done {
    let mut f = std::fs::File::create(path).unwrap();
    let chunk = vec![1u8; 128 << 10];
    let mut done = Done::default();
    for _ in 0..512 {
        let n = f.write(&chunk).unwrap();
        done.calls += 1;
        done.bytes += n as u64;
    }
    done
}

fn seq_read(path: &Path) -> Done {
    let mut f = std::fs::File::open(path).unwrap();
    let mut buf = vec![0u8; 128 << 10];
    let mut done = Done::default();
    loop {
        let n = f.read(&mut buf).unwrap();
        done.calls += 1;
        done.bytes += n as u64;
        if n == 0 {
            return done;
        }
    }
}

/// Reads `a.dat` and `b.dat` in `dir` to their ends, 64 KiB from each in turn: sequential per
/// file, though the two alternate.
fn interleaved_read(dir: &Path) -> Done {
    let mut files = [dir.join("a.dat"), dir.join("b.dat")].map(|p| std::fs::File::open(p).unwrap());
    let mut buf = vec![0u8; 64 << 10];
    let mut done = Done::default();
    let mut open = [true, true];
    while open.contains(&true) {
        for (f, open) in files.iter_mut().zip(open.iter_mut()).filter(|(_, open)| **open) {
            let n = f.read(&mut buf).unwrap();
            done.calls += 1;
            done.bytes += n as u64;
            *open = n > 0;
        }
    }
    done
}

fn random_pread(path: &Path) -> Done {
    let f = std::fs::File::open(path).unwrap();
    let pages = f.metadata().unwrap().len() / PAGE_SIZE;
    let mut buf = vec![0u8; PAGE_SIZE as usize];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut done = Done::default();
    for _ in 0..20_000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let n = f.read_at(&mut buf, (state % pages) * PAGE_SIZE).unwrap();
        done.calls += 1;
        done.bytes += n as u64;
    }
    done
}

fn mmap_read(path: &Path) -> Done {
    let f = std::fs::File::open(path).unwrap();
    let len = f.metadata().unwrap().len() as usize;
    // SAFETY: a private read-only mapping of a file this process opened, unmapped below.
    let map = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_PRIVATE,
            std::os::fd::AsRawFd::as_raw_fd(&f),
            0,
        )
    };
    assert_ne!(map, libc::MAP_FAILED);
    let mut sum = 0u64;
    for offset in (0..len).step_by(PAGE_SIZE as usize) {
        // SAFETY: offset < len, inside the mapping.
        sum += u64::from(unsafe { std::ptr::read_volatile(map.cast::<u8>().add(offset)) });
    }
    // SAFETY: the mapping made above, not used after.
    unsafe { libc::munmap(map, len) };
    Done { calls: 0, bytes: len as u64, other: sum }
}

fn metadata(dir: &Path) -> Done {
    const FILES: u64 = 200;
    std::fs::create_dir(dir).unwrap();
    std::env::set_current_dir(dir).unwrap();
    for i in 0..FILES {
        let f = std::fs::File::create(dir.join(format!("f{i}"))).unwrap();
        f.sync_all().unwrap();
    }
    for i in 0..FILES {
        std::fs::metadata(dir.join(format!("f{i}"))).unwrap();
    }
    // Raw getdents64, counting the calls.
    let d = std::fs::File::open(dir).unwrap();
    let mut buf = vec![0u8; 4096];
    let mut getdents = 0;
    loop {
        // SAFETY: buf is a live buffer of the length passed.
        let n = unsafe {
            libc::syscall(
                libc::SYS_getdents64,
                std::os::fd::AsRawFd::as_raw_fd(&d),
                buf.as_mut_ptr(),
                buf.len(),
            )
        };
        getdents += 1;
        assert!(n >= 0);
        if n == 0 {
            break;
        }
    }
    drop(d);
    for i in 0..FILES {
        // Relative: counted on the filesystem of the working directory.
        let _ = std::fs::symlink_metadata(format!("f{i}")).unwrap();
        std::fs::remove_file(format!("f{i}")).unwrap();
    }
    std::env::set_current_dir("/").unwrap();
    std::fs::remove_dir(dir).unwrap();
    Done { calls: FILES, bytes: 0, other: getdents }
}
