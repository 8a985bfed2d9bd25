//! Loading and reading the in-kernel tally of `platscope io pattern`.

use std::collections::HashMap;
use std::mem::MaybeUninit;
use std::os::fd::AsRawFd;
use std::path::PathBuf;

use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags};

use crate::mounts::{KernelDev, MountTable};
use crate::pattern::{Counts, FileInterval};
use crate::skel::iopattern::types::{
    iot_file_id, iot_file_slot, iot_file_state, iot_fs_counts, iot_mount_prefix,
};
use crate::skel::iopattern::{IopatternSkel, IopatternSkelBuilder};
use crate::syscalls;
use crate::{Error, Result};
use bpfkit::{as_bytes, c_string, from_bytes, missing_tracepoints, preflight};

/// Must match iopattern.h.
const MAX_MOUNTS: usize = 64;
const MOUNT_PREFIX_LEN: usize = 128;
/// Slots of the per-CPU per-filesystem counts (MAX_FS in iopattern.h).
const MAX_FS: usize = 1024;
/// Slots of the direct-mapped per-file table (FILE_SLOTS in iopattern.h).
pub const FILE_SLOTS: u32 = 16384;
const TASK_COMM_LEN: usize = 16;
const PAGE_IN_TRACEPOINTS: [&str; 2] = ["mm_filemap_fault", "mm_filemap_map_pages"];
const PAGE_OUT_TRACEPOINT: &str = "writeback_single_inode";

/// What to trace.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Only this process (all its threads).
    pub pid: Option<u32>,
    /// Only tasks with this command name (as in /proc/PID/comm).
    pub comm: Option<String>,
    /// Only tasks in this cgroup v2 directory or below it.
    pub cgroup: Option<PathBuf>,
    /// A forward gap up to this many bytes still counts as sequential.
    pub tolerance: u64,
    /// Attach one empty program at sys_exit instead and count nothing: the floor of tracing's
    /// cost, for the overhead bench.
    pub empty_programs: bool,
    /// Slots of the direct-mapped per-file table (a power of two, at most [`FILE_SLOTS`];
    /// `None`: all of them). A file whose slot another file holds is kept in a hash instead;
    /// fewer slots make that happen, which the tests use to check both places count alike.
    pub file_slots: Option<u32>,
}

impl Options {
    fn validate(&self) -> Result<()> {
        if let Some(pid) = self.pid {
            if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                return Err(Error::NoProcess(pid));
            }
        }
        if let Some(comm) = &self.comm {
            if comm.is_empty() {
                return Err(Error::EmptyComm);
            }
            if comm.len() >= TASK_COMM_LEN {
                return Err(Error::CommTooLong(comm.clone()));
            }
        }
        if let Some(slots) = self.file_slots {
            if !slots.is_power_of_two() || slots > FILE_SLOTS {
                return Err(Error::FileSlots(slots));
            }
        }
        Ok(())
    }

    fn filters_processes(&self) -> bool {
        self.pid.is_some() || self.comm.is_some() || self.cgroup.is_some()
    }
}

/// The cumulative counts at one moment.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub per_fs: HashMap<KernelDev, Counts>,
    /// Per file, when asked for: (device, inode) → name and counts.
    pub files: HashMap<(KernelDev, u64), FileInterval>,
}

impl Snapshot {
    /// Per file, what happened since `earlier` (files first seen now count from zero).
    pub fn files_since(&self, earlier: &Snapshot) -> Vec<FileInterval> {
        self.files
            .iter()
            .map(|(key, now)| {
                let mut delta = now.clone();
                if let Some(then) = earlier.files.get(key) {
                    for c in 0..2 {
                        for d in 0..2 {
                            delta.ops[c][d] = now.ops[c][d].saturating_sub(then.ops[c][d]);
                            delta.bytes[c][d] = now.bytes[c][d].saturating_sub(then.bytes[c][d]);
                        }
                    }
                }
                delta
            })
            .collect()
    }
}

/// The attached programs; dropping it detaches them.
pub struct Tracer<'obj> {
    skel: IopatternSkel<'obj>,
    mounts: MountTable,
    notes: Vec<String>,
    // Held open while the programs use it.
    _cgroup: Option<std::fs::File>,
}

/// Attaches the programs, runs `f` with them, and detaches (also when `f` panics or returns
/// early). Nothing stays attached after this returns.
pub fn trace<T>(options: &Options, f: impl FnOnce(&mut Tracer<'_>) -> T) -> Result<T> {
    options.validate()?;
    let mounts = MountTable::live().map_err(Error::Mounts)?;
    let cgroup = match &options.cgroup {
        Some(path) => Some(open_cgroup(path, &mounts)?),
        None => None,
    };
    preflight()?;
    let mut storage = MaybeUninit::uninit();
    let mut open = IopatternSkelBuilder::default()
        .open(&mut storage)
        .map_err(|e| Error::bpf("opening the io pattern BPF object", e))?;

    let mut notes = Vec::new();
    if let Some(ro) = open.maps.rodata_data.as_deref_mut() {
        ro.self_tgid = std::process::id();
        ro.filter_tgid = options.pid.unwrap_or(0);
        if let Some(comm) = &options.comm {
            for (dst, src) in ro.filter_comm.iter_mut().zip(comm.bytes()) {
                *dst = src as i8;
            }
            ro.filter_comm_len = comm.len() as u8;
        }
        ro.filter_cgroup = u8::from(cgroup.is_some());
        ro.tolerance = options.tolerance;
    }
    let file_slots = options.file_slots.unwrap_or(FILE_SLOTS);
    if let Some(ro) = open.maps.rodata_data.as_deref_mut() {
        ro.file_slot_mask = file_slots - 1;
    }
    open.maps
        .file_slots
        .set_max_entries(file_slots)
        .map_err(|e| Error::bpf("sizing the per-file table", e))?;
    let (prefixes, left_out) = mounts.prefixes(MAX_MOUNTS, MOUNT_PREFIX_LEN);
    if let Some(ro) = open.maps.rodata_data.as_deref_mut() {
        ro.mount_count = prefixes.len() as u32;
    }
    if left_out > 0 {
        notes.push(format!(
            "{left_out} mount points are too deep or too many to match absolute paths; their \
             metadata calls count on the filesystem above them"
        ));
    }
    let missing =
        missing_tracepoints(&[PAGE_IN_TRACEPOINTS[0], PAGE_IN_TRACEPOINTS[1], PAGE_OUT_TRACEPOINT]);
    if let Some(tp) = PAGE_IN_TRACEPOINTS.iter().find(|tp| missing.contains(tp)) {
        open.progs.iop_filemap_fault.set_autoload(false);
        open.progs.iop_filemap_map_pages.set_autoload(false);
        notes.push(format!("page-ins not counted: this kernel has no {tp} tracepoint"));
    }
    if missing.contains(&PAGE_OUT_TRACEPOINT) {
        open.progs.iop_writeback_inode.set_autoload(false);
        notes.push(format!(
            "page-outs not counted: this kernel has no {PAGE_OUT_TRACEPOINT} tracepoint"
        ));
    } else if options.filters_processes() {
        notes.push(
            "page-outs are written by kernel threads, not by a process: not counted when \
             filtering by process"
                .into(),
        );
    }

    if options.empty_programs {
        for mut prog in libbpf_rs::skel::OpenSkel::open_object_mut(&mut open).progs_mut() {
            prog.set_autoload(false);
        }
        notes.push("empty programs attached: nothing is counted (the overhead floor)".into());
    }
    open.progs.iop_floor_sys_exit.set_autoload(options.empty_programs);
    let mut skel = open.load().map_err(|e| Error::bpf("loading the io pattern BPF programs", e))?;
    for op in syscalls::table() {
        let value = op.to_bpf();
        skel.maps
            .sys_ops
            .update(&op.nr.to_ne_bytes(), as_bytes(&value), MapFlags::ANY)
            .map_err(|e| Error::bpf("filling the syscall table", e))?;
    }
    for (i, (dev, point)) in prefixes.iter().enumerate() {
        let mut entry =
            iot_mount_prefix { dev: *dev, len: point.len() as u32, prefix: [0; MOUNT_PREFIX_LEN] };
        for (dst, src) in entry.prefix.iter_mut().zip(point.bytes()) {
            *dst = src as i8;
        }
        skel.maps
            .mounts
            .update(&(i as u32).to_ne_bytes(), as_bytes(&entry), MapFlags::ANY)
            .map_err(|e| Error::bpf("filling the mount table", e))?;
    }
    // Every filesystem mounted now gets its own slot of the per-CPU counts array.
    let mut devs: Vec<u32> = mounts.devices();
    devs.truncate(MAX_FS);
    for (slot, dev) in devs.iter().enumerate() {
        skel.maps
            .fs_slots
            .update(&dev.to_ne_bytes(), &(slot as u32).to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| Error::bpf("filling the filesystem slots", e))?;
    }
    if let Some(dir) = &cgroup {
        skel.maps
            .cgroup_filter
            .update(&0u32.to_ne_bytes(), &dir.as_raw_fd().to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| Error::bpf("setting the cgroup filter", e))?;
    }
    skel.attach().map_err(|e| Error::bpf("attaching the io pattern BPF programs", e))?;
    let mut tracer = Tracer { skel, mounts, notes, _cgroup: cgroup };
    Ok(f(&mut tracer))
}

/// Opens a cgroup v2 directory: absolute, or relative to where cgroup2 is mounted (found in
/// the mount table: /sys/fs/cgroup on most systems, /sys/fs/cgroup/unified on hybrid ones).
fn open_cgroup(path: &std::path::Path, mounts: &MountTable) -> Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;
    let root = mounts.cgroup2_root();
    let full = match (&root, path.is_absolute() && path.exists()) {
        (_, true) | (None, false) => path.to_path_buf(),
        (Some(root), false) => root.join(path.strip_prefix("/").unwrap_or(path)),
    };
    let not_v2 = |full: std::path::PathBuf| Error::Cgroup {
        path: full,
        reason: std::io::Error::other(match &root {
            Some(root) => {
                format!("not a cgroup v2 directory (cgroup2 is mounted at {})", root.display())
            }
            None => "not a cgroup v2 directory, and no cgroup2 filesystem is mounted".to_string(),
        }),
    };
    let dir = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY)
        .open(&full)
        .map_err(|reason| Error::Cgroup { path: full.clone(), reason })?;
    // SAFETY: statfs is plain data, all zeroes valid; fstatfs fills it from a live descriptor.
    let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above; the pointer is to a live local.
    if unsafe { libc::fstatfs(dir.as_raw_fd(), &mut fs) } != 0
        || fs.f_type as i64 != CGROUP2_SUPER_MAGIC
    {
        return Err(not_v2(full));
    }
    Ok(dir)
}

impl Tracer<'_> {
    /// What the output should say about what is and is not counted.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    pub fn mounts(&self) -> &MountTable {
        &self.mounts
    }

    /// Reads the cumulative counts; `with_files` also walks the per-file map.
    pub fn snapshot(&self, with_files: bool) -> Result<Snapshot> {
        let maps = &self.skel.maps;
        let mut snap = Snapshot::default();
        // Filesystems mounted at the start, by their slot; those mounted later, by dev.
        let slots = maps.fs_slots.keys().filter_map(|key| {
            let dev = u32::from_ne_bytes(key.get(..4)?.try_into().ok()?);
            let slot = maps.fs_slots.lookup(&key, MapFlags::ANY).ok()??;
            Some((dev, &maps.fs_stats, slot))
        });
        let late = maps.fs_stats_late.keys().filter_map(|key| {
            let dev = u32::from_ne_bytes(key.get(..4)?.try_into().ok()?);
            Some((dev, &maps.fs_stats_late, key))
        });
        for (dev, map, key) in slots.chain(late) {
            let Some(per_cpu) = map
                .lookup_percpu(&key, MapFlags::ANY)
                .map_err(|e| Error::bpf("reading per-filesystem counts", e))?
            else {
                continue;
            };
            let mut sum = Counts::default();
            for bytes in per_cpu {
                if let Some(c) = from_bytes::<iot_fs_counts>(&bytes) {
                    sum.add(&Counts {
                        ops: c.ops,
                        bytes: c.bytes,
                        meta: c.meta,
                        size_log2: c.size_log2,
                    });
                }
            }
            if sum != Counts::default() {
                snap.per_fs.entry(dev).or_default().add(&sum);
            }
        }
        if with_files {
            // The direct-mapped table, read in a few batches; a slot whose claim is still
            // being written (dev 0) is left for the next snapshot.
            let slots = maps
                .file_slots
                .lookup_batch(1024, MapFlags::ANY, MapFlags::ANY)
                .map_err(|e| Error::bpf("reading the per-file table", e))?;
            for (_, value) in slots {
                let Some(slot) = from_bytes::<iot_file_slot>(&value) else { continue };
                if slot.token != 0 && slot.id.dev != 0 {
                    snap.files.insert(
                        (slot.id.dev, slot.id.ino),
                        self.file_interval(&slot.id, &slot.state),
                    );
                }
            }
            for key in maps.files.keys() {
                let (Some(id), Ok(Some(value))) =
                    (from_bytes::<iot_file_id>(&key), maps.files.lookup(&key, MapFlags::ANY))
                else {
                    continue; // evicted between the two calls
                };
                let Some(state) = from_bytes::<iot_file_state>(&value) else { continue };
                snap.files.insert((id.dev, id.ino), self.file_interval(&id, &state));
            }
        }
        Ok(snap)
    }

    /// One file's cumulative counts, with its filesystem's mount point.
    fn file_interval(&self, id: &iot_file_id, state: &iot_file_state) -> FileInterval {
        let mount_point = self.mounts.mount_of(id.dev).map_or_else(
            || format!("dev {}:{}", id.dev >> 20, id.dev & 0xf_ffff),
            |m| m.mount_point.clone(),
        );
        FileInterval {
            name: c_string(&state.name),
            mount_point,
            inode: id.ino,
            ops: state.ops,
            bytes: state.bytes,
        }
    }
}

impl std::fmt::Debug for Tracer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracer").finish_non_exhaustive()
    }
}
