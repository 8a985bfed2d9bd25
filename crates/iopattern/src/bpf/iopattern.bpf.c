// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The VFS-level random/sequential tally (platscope io pattern).
 *
 * Only tp_btf programs: sys_exit (one attachment for every system call; the per-architecture
 * table in `sys_ops` says which ones matter; the arguments are still in the saved registers at
 * exit, so nothing runs at entry), the filemap fault
 * tracepoints for page-ins and writeback_single_inode for page-outs. Everything is
 * aggregated here, in per-CPU and per-file maps that user space reads each interval:
 * no per-event traffic, so nothing is lost at any event rate. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "iopattern.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define S_IFMT 00170000
#define S_IFREG 0100000
#define O_CREAT 00000100
#define O_APPEND 00002000
#define AT_FDCWD -100
#define PAGE_BYTES 4096
#define PATH_BUF 256

/* Set by user space before load. */
const volatile __u32 self_tgid = 0;
const volatile __u32 filter_tgid = 0;
const volatile __u8 filter_comm_len = 0;
const volatile char filter_comm[TASK_COMM_LEN_] = {};
const volatile __u8 filter_cgroup = 0;
const volatile __u64 tolerance = 0;
const volatile __u32 mount_count = 0;
const volatile __u32 file_slot_mask = FILE_SLOTS - 1;  /* file_slots' entries - 1 */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_SYSCALLS);
	__type(key, __u32);
	__type(value, struct iot_sys_op);
} sys_ops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_MOUNTS);
	__type(key, __u32);
	__type(value, struct iot_mount_prefix);
} mounts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cgroup_filter SEC(".maps");

/* Per-filesystem counts. User space gives every filesystem mounted at the start a slot of a
 * per-CPU array (`fs_slots`: s_dev -> slot) and each file's state remembers its slot, so a read
 * or write costs an array lookup (inlined) rather than a hash lookup. Filesystems mounted
 * later are counted by s_dev in `fs_stats_late`. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_FS);
	__type(key, __u32);
	__type(value, __u32);
} fs_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MAX_FS);
	__type(key, __u32);
	__type(value, struct iot_fs_counts);
} fs_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, MAX_FS);
	__type(key, __u32);
	__type(value, struct iot_fs_counts);
} fs_stats_late SEC(".maps");

/* One all-zero iot_fs_counts (never written): what a late filesystem's entry starts from. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct iot_fs_counts);
} fs_zero SEC(".maps");

/* Per-file state. Every read and write looks its file up, so the first place is a plain array
 * indexed by a hash of (dev, ino) that the verifier inlines (no helper call, no bucket walk): a
 * slot belongs to the first file that needs it, for as long as the programs are attached. A
 * file whose slot is taken goes to the LRU hash `files`. A file is in one place or the other,
 * never both: a slot is never given back. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FILE_SLOTS);
	__type(key, __u32);
	__type(value, struct iot_file_slot);
} file_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct iot_file_id);
	__type(value, struct iot_file_state);
} files SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, char[PATH_BUF]);
} path_scratch SEC(".maps");

/* Whether `task` (the current one) is traced. Read from the task itself, not with
 * bpf_get_current_pid_tgid / bpf_get_current_comm: every helper call ends in a return, and on
 * AMD hosts with the SRSO "Safe RET" mitigation each return costs more than the work here. */
static __always_inline bool traced_task(struct task_struct *task)
{
	__u32 tgid = task->tgid;

	if (tgid == self_tgid)
		return false;
	if (filter_tgid && tgid != filter_tgid)
		return false;
	if (filter_comm_len) {
		for (int i = 0; i < TASK_COMM_LEN_; i++) {
			if (i >= filter_comm_len)
				break;
			if (task->comm[i] != filter_comm[i])
				return false;
		}
		if (filter_comm_len < TASK_COMM_LEN_ &&
		    task->comm[filter_comm_len & (TASK_COMM_LEN_ - 1)])
			return false;
	}
	if (filter_cgroup && bpf_current_task_under_cgroup(&cgroup_filter, 0) != 1)
		return false;
	return true;
}

/* floor(log2(bytes)), at most SIZE_SLOTS - 1; 0 for 0 and 1. Branches, no loop. */
static __always_inline __u32 size_slot(__u64 bytes)
{
	__u32 slot = 0;

	if (bytes >> 32) { bytes >>= 32; slot += 32; }
	if (bytes >> 16) { bytes >>= 16; slot += 16; }
	if (bytes >> 8) { bytes >>= 8; slot += 8; }
	if (bytes >> 4) { bytes >>= 4; slot += 4; }
	if (bytes >> 2) { bytes >>= 2; slot += 2; }
	if (bytes >> 1) { slot += 1; }
	return slot < SIZE_SLOTS ? slot : SIZE_SLOTS - 1;
}

/* The filesystem's slot in fs_stats; MAX_FS for one mounted after the start. */
static __always_inline __u32 fs_slot_for(__u32 dev)
{
	__u32 *slot = bpf_map_lookup_elem(&fs_slots, &dev);

	return slot ? *slot : MAX_FS;
}

/* The counts of filesystem `dev`, whose slot is `slot` (MAX_FS: counted by dev). */
static __always_inline struct iot_fs_counts *fs_counts_at(__u32 slot, __u32 dev)
{
	if (slot < MAX_FS)
		return bpf_map_lookup_elem(&fs_stats, &slot);
	struct iot_fs_counts *counts = bpf_map_lookup_elem(&fs_stats_late, &dev);

	if (counts)
		return counts;
	/* The zero value comes from a map: it is too big for the 512-byte BPF stack. */
	__u32 first = 0;
	struct iot_fs_counts *zero = bpf_map_lookup_elem(&fs_zero, &first);

	if (!zero)
		return NULL;
	bpf_map_update_elem(&fs_stats_late, &dev, zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&fs_stats_late, &dev);
}

static __always_inline struct iot_fs_counts *fs_counts_for(__u32 dev)
{
	return fs_counts_at(fs_slot_for(dev), dev);
}

/* A system call's argument from the saved registers. On x86-64 the tracepoint's pt_regs is a
 * BTF pointer the program may load from directly: no helper call per argument (the CO-RE
 * macros below are bpf_probe_read_kernel calls, which cost tens of nanoseconds each on a path
 * that runs for every read and write). */
static __always_inline unsigned long syscall_arg(struct pt_regs *regs, int n)
{
#if defined(__TARGET_ARCH_x86)
	switch (n) {
	case 0: return regs->di;
	case 1: return regs->si;
	case 2: return regs->dx;
	case 3: return regs->r10;
	case 4: return regs->r8;
	default: return 0;
	}
#endif
	switch (n) {
	case 0: return PT_REGS_PARM1_CORE_SYSCALL(regs);
	case 1: return PT_REGS_PARM2_CORE_SYSCALL(regs);
	case 2: return PT_REGS_PARM3_CORE_SYSCALL(regs);
	case 3: return PT_REGS_PARM4_CORE_SYSCALL(regs);
	case 4: return PT_REGS_PARM5_CORE_SYSCALL(regs);
	default: return 0;
	}
}

/* The open file behind a descriptor, with loads only: the table is walked through the task's
 * BTF pointers, and the array slot is read through a cast to a struct whose first member is a
 * struct file * (kiocb's ki_filp, there since 2.6), which the verifier turns into a
 * fault-handled load instead of a bpf_probe_read_kernel call. */
static __always_inline struct file *fd_file(struct task_struct *task, long fd)
{
	struct fdtable *fdt = task->files->fdt;

	if (!fdt || fd < 0 || fd >= fdt->max_fds)
		return NULL;
	struct kiocb *slot = bpf_core_cast((void *)fdt->fd + fd * sizeof(struct file *), struct kiocb);
	struct file *file = slot->ki_filp;

	return file ? bpf_core_cast(file, struct file) : NULL;
}

static __always_inline __u32 file_dev(struct file *file)
{
	return file ? file->f_inode->i_sb->s_dev : 0;
}

static __always_inline bool is_regular(struct inode *inode)
{
	return (inode->i_mode & S_IFMT) == S_IFREG;
}

/* The filesystem an absolute path names: the longest mount prefix it starts with. */
static __always_inline __u32 dev_of_absolute(const char *path)
{
	for (__u32 i = 0; i < MAX_MOUNTS; i++) {
		if (i >= mount_count)
			break;
		__u32 idx = i;
		struct iot_mount_prefix *m = bpf_map_lookup_elem(&mounts, &idx);

		if (!m)
			break;
		__u32 len = m->len;
		bool match = len > 0 && len < MOUNT_PREFIX_LEN;

		for (__u32 j = 0; j < MOUNT_PREFIX_LEN && match; j++) {
			if (j >= len)
				break;
			if (path[j & (PATH_BUF - 1)] != m->prefix[j])
				match = false;
		}
		if (!match)
			continue;
		/* "/" matches everything; "/mnt" matches "/mnt" and "/mnt/x", not "/mnt2". */
		char next = path[len & (PATH_BUF - 1)];

		if (len == 1 || next == '/' || next == 0)
			return m->dev;
	}
	return 0;
}

/* The filesystem a path-taking call works on: the path's mount when absolute, otherwise
 * the directory it is relative to (dirfd or the working directory). By the name as given:
 * ".." or symlinks that cross a mount are attributed to where the name starts. */
static __always_inline __u32 dev_of_path(struct task_struct *task, const struct iot_sys_op *op,
					 struct pt_regs *regs)
{
	long dirfd = op->dirfd_arg >= 0 ? (long)(int)syscall_arg(regs, op->dirfd_arg) : AT_FDCWD;
	const char *upath = op->path_arg >= 0 ? (const char *)syscall_arg(regs, op->path_arg) : NULL;
	__u32 zero = 0;
	char *path = bpf_map_lookup_elem(&path_scratch, &zero);

	if (!path)
		return 0;
	path[0] = 0;
	if (upath)
		bpf_probe_read_user_str(path, PATH_BUF, upath);
	if (path[0] == '/')
		return dev_of_absolute(path);
	if (path[0] == 0 && !(op->flags & SYSOP_NULL_PATH_IS_FD) && upath)
		return 0; /* "" without AT_EMPTY_PATH semantics: the call fails */
	if (dirfd == AT_FDCWD)
		return task->fs->pwd.dentry->d_sb->s_dev;
	return file_dev(fd_file(task, dirfd));
}

static __always_inline int count_meta(struct task_struct *task, const struct iot_sys_op *op,
				      struct pt_regs *regs)
{
	__u32 dev;
	__u8 meta = op->meta;

	if (op->fd_arg >= 0)
		dev = file_dev(fd_file(task, (int)syscall_arg(regs, op->fd_arg)));
	else
		dev = dev_of_path(task, op, regs);
	if (!dev)
		return 0;

	if (op->flags & SYSOP_CREATE_IF_O_CREAT) {
		__u64 flags = syscall_arg(regs, op->flags_arg);

		if (op->flags & SYSOP_FLAGS_IN_OPEN_HOW) {
			__u64 how_flags = 0;

			bpf_probe_read_user(&how_flags, sizeof(how_flags), (void *)flags);
			flags = how_flags;
		}
		if (flags & O_CREAT)
			meta |= META_CREATE_REMOVE;
	}

	struct iot_fs_counts *c = fs_counts_for(dev);

	if (!c)
		return 0;
	for (int i = 0; i < META_CLASSES; i++)
		if (meta & (1 << i))
			c->meta[i]++;
	return 0;
}

/* A file's identity mixed into 64 bits, never 0: one-to-one for the files of one filesystem
 * (multiplying by an odd constant is), and its high half picks the slot. */
static __always_inline __u64 file_token(const struct iot_file_id *id)
{
	return (id->ino * 0x9E3779B97F4A7C15ULL ^ (__u64)id->dev * 0xC2B2AE3D27D4EB4FULL) | 1;
}

/* The state of file `id` if it has one: in its slot (`slot` is where it would be), else in
 * the hash. A slot whose token matches but whose identity is not written yet is being
 * claimed by this same file on another CPU. */
static __always_inline struct iot_file_state *file_state(const struct iot_file_id *id,
							  __u64 token, struct iot_file_slot *slot)
{
	if (slot && slot->token == token &&
	    (slot->id.dev == 0 || (slot->id.dev == id->dev && slot->id.ino == id->ino)))
		return &slot->state;
	return bpf_map_lookup_elem(&files, id);
}

/* The state of a file seen for the first time (named `name`, on filesystem slot `fs_slot`):
 * its slot if free, else a new entry of the hash. */
static __always_inline struct iot_file_state *new_file_state(const struct iot_file_id *id,
							      __u64 token,
							      struct iot_file_slot *slot,
							      const unsigned char *name,
							      __u32 fs_slot)
{
	if (slot && slot->token == 0 && __sync_val_compare_and_swap(&slot->token, 0, token) == 0) {
		/* A slot is claimed once, so its state is still all zero. */
		bpf_probe_read_kernel_str(slot->state.name, sizeof(slot->state.name), name);
		slot->state.fs_slot = fs_slot;
		slot->id.ino = id->ino;
		slot->id.dev = id->dev; /* last: the identity is complete */
		return &slot->state;
	}
	struct iot_file_state fresh = {};

	bpf_probe_read_kernel_str(fresh.name, sizeof(fresh.name), name);
	fresh.fs_slot = fs_slot;
	bpf_map_update_elem(&files, id, &fresh, BPF_NOEXIST);
	return bpf_map_lookup_elem(&files, id);
}

/* The system call number at exit. */
static __always_inline long syscall_nr(struct pt_regs *regs)
{
#if defined(__TARGET_ARCH_x86)
	return regs->orig_ax;
#elif defined(__TARGET_ARCH_arm64)
	return ((struct user_pt_regs *)regs)->regs[8];
#else
	return -1;
#endif
}

SEC("tp_btf/sys_exit")
int BPF_PROG(iop_sys_exit, struct pt_regs *regs, long ret)
{
	/* Most system calls are not reads or writes: leave at once. */
	__u32 nr = syscall_nr(regs);
	struct iot_sys_op *op = bpf_map_lookup_elem(&sys_ops, &nr);

	if (!op || op->kind == OP_NONE)
		return 0;
	/* Failed reads and writes move nothing and are not counted (checked before any helper
	 * call: a server's non-blocking socket reads fail with EAGAIN often). Metadata calls count
	 * whether or not they succeed (a failed lookup still looked). */
	if (ret < 0 && op->kind != OP_META)
		return 0;
	struct task_struct *task = bpf_get_current_task_btf();

	if (op->kind == OP_META)
		return traced_task(task) ? count_meta(task, op, regs) : 0;
	if (!traced_task(task))
		return 0;
	/* The arguments are still in the saved registers at exit (arm64 keeps the first one
	 * in orig_x0), and the descriptor still names the file the call used: no state is
	 * needed from the entry. */
	struct file *file = fd_file(task, (int)syscall_arg(regs, op->fd_arg));

	if (!file || !is_regular(file->f_inode))
		return 0;
	__s64 offset = op->offset_arg >= 0 ? (__s64)syscall_arg(regs, op->offset_arg) : -1;
	__u32 dir = op->kind == OP_READ ? DIR_READ : DIR_WRITE;

	/* Where the I/O started: the call's offset, or (read/write/readv/writev, and the v2
	 * calls with offset -1) the file position it advanced, which also gives the true
	 * start of O_APPEND writes. pwrite on an O_APPEND file appends too. */
	struct inode *inode = file->f_inode;
	__u64 start;

	if (dir == DIR_WRITE && (file->f_flags & O_APPEND))
		start = inode->i_size - ret;
	else if (offset < 0)
		start = file->f_pos - ret;
	else
		start = offset;

	struct iot_file_id id = {
		.ino = inode->i_ino,
		.dev = inode->i_sb->s_dev,
	};
	__u64 token = file_token(&id);
	__u32 slot_index = (token >> 32) & file_slot_mask;
	struct iot_file_slot *slot = bpf_map_lookup_elem(&file_slots, &slot_index);
	struct iot_file_state *state = file_state(&id, token, slot);
	__u32 class;

	if (state) {
		__u64 expected = state->next_offset;

		class = (start >= expected && start - expected <= tolerance) ? CLASS_SEQUENTIAL
									      : CLASS_RANDOM;
	} else {
		/* First I/O seen on this file: sequential when it starts at the beginning. */
		class = start == 0 ? CLASS_SEQUENTIAL : CLASS_RANDOM;
		state = new_file_state(&id, token, slot, file->f_path.dentry->d_name.name,
				       fs_slot_for(id.dev));
	}
	class &= 1;
	if (state) {
		state->next_offset = start + ret;
		__sync_fetch_and_add(&state->ops[class][dir], 1);
		__sync_fetch_and_add(&state->bytes[class][dir], ret);
	}

	struct iot_fs_counts *c =
		state ? fs_counts_at(state->fs_slot, id.dev) : fs_counts_for(id.dev);

	if (c) {
		c->ops[class][dir]++;
		c->bytes[class][dir] += ret;
		c->size_log2[dir & 1][size_slot(ret)]++;
	}
	return 0;
}

static __always_inline int count_page_in(struct address_space *mapping, __u64 pages)
{
	struct inode *host = mapping->host;

	if (!host || !is_regular(host) || !traced_task(bpf_get_current_task_btf()))
		return 0;
	struct iot_fs_counts *c = fs_counts_for(host->i_sb->s_dev);

	if (c) {
		c->ops[CLASS_PAGE][DIR_READ]++;
		c->bytes[CLASS_PAGE][DIR_READ] += pages * PAGE_BYTES;
	}
	return 0;
}

/* A page fault that the page cache serves (or reads in) for a file mapping. */
SEC("tp_btf/mm_filemap_fault")
int BPF_PROG(iop_filemap_fault, struct address_space *mapping, unsigned long index)
{
	return count_page_in(mapping, 1);
}

/* Fault-around: the range of cached pages the kernel tried to map with one fault. */
SEC("tp_btf/mm_filemap_map_pages")
int BPF_PROG(iop_filemap_map_pages, struct address_space *mapping, unsigned long start,
	     unsigned long last)
{
	return count_page_in(mapping, last >= start ? last - start + 1 : 0);
}

/* The flusher wrote an inode's dirty pages: page-outs, whoever dirtied them. Done by
 * kernel threads, so not attributable to a process: skipped under process filters. */
SEC("tp_btf/writeback_single_inode")
int BPF_PROG(iop_writeback_inode, struct inode *inode, struct writeback_control *wbc,
	     unsigned long nr_to_write)
{
	if (filter_tgid || filter_comm_len || filter_cgroup || !is_regular(inode))
		return 0;
	long left = wbc->nr_to_write;
	long wrote = (long)nr_to_write - left;

	if (wrote <= 0)
		return 0;
	struct iot_fs_counts *c = fs_counts_for(inode->i_sb->s_dev);

	if (c) {
		c->ops[CLASS_PAGE][DIR_WRITE]++;
		c->bytes[CLASS_PAGE][DIR_WRITE] += (__u64)wrote * PAGE_BYTES;
	}
	return 0;
}

/* The floor, for the overhead bench (--empty-programs): an empty program at the same point
 * as iop_sys_exit, attached instead of every program above. */
SEC("tp_btf/sys_exit")
int BPF_PROG(iop_floor_sys_exit)
{
	return 0;
}
