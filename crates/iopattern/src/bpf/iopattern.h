/* Layouts shared by the iopattern BPF program and its Rust reader (libbpf-cargo generates the
 * Rust types from them). Only fixed-width fields, no padding holes. */
#ifndef IOPATTERN_H
#define IOPATTERN_H

/* What a system call is to iopattern; filled per architecture from Rust (syscalls.rs). */
#define OP_NONE 0
#define OP_READ 1
#define OP_WRITE 2
#define OP_META 3

/* Right-column classes, as bits: one call may count in two (stat by path is a lookup
 * and a getattr). */
#define META_LOOKUP (1 << 0)
#define META_READDIR (1 << 1)
#define META_ATTR (1 << 2)
#define META_CREATE_REMOVE (1 << 3)
#define META_OTHER (1 << 4)
#define META_CLASSES 5

/* sys_op.flags */
#define SYSOP_CREATE_IF_O_CREAT (1 << 0) /* flags_arg holds open flags: O_CREAT adds a create */
#define SYSOP_FLAGS_IN_OPEN_HOW (1 << 1) /* flags_arg points to struct open_how (openat2) */
#define SYSOP_NULL_PATH_IS_FD (1 << 2)   /* a NULL or "" path means the dirfd itself */

#define ARG_NONE (-1)
#define MAX_SYSCALLS 512

struct iot_sys_op {
	__u8 kind;
	__u8 meta;
	__s8 fd_arg;
	__s8 dirfd_arg;
	__s8 path_arg;
	__s8 flags_arg;
	__s8 offset_arg; /* pread/pwrite offset; -1 in the argument itself means f_pos */
	__u8 flags;
};

/* Row indexes of the table: classification of a read or write. */
#define CLASS_SEQUENTIAL 0
#define CLASS_RANDOM 1
#define CLASS_PAGE 2
#define CLASSES 3
#define DIR_READ 0
#define DIR_WRITE 1

/* Filesystems with counts of their own; more are not counted (user space says so). */
#define MAX_FS 1024

/* Read and write sizes as a log2 histogram: slot s counts calls of 2^s to 2^(s+1)-1 bytes
 * (slot 0 also 0 bytes); the last slot takes everything larger. */
#define SIZE_SLOTS 32

/* Per filesystem (a slot per s_dev), per CPU, cumulative since attach. */
struct iot_fs_counts {
	__u64 ops[CLASSES][2];
	__u64 bytes[CLASSES][2];
	__u64 meta[META_CLASSES];
	__u64 _reserved;
	__u64 size_log2[2][SIZE_SLOTS];
};

struct iot_file_id {
	__u64 ino;
	__u32 dev;
	__u32 _pad;
};

#define FILE_NAME_LEN 48

/* Per file, shared by all CPUs, cumulative since attach: in the file's slot of the
 * direct-mapped table, or (when another file holds that slot) in an LRU hash, whose least
 * recently used files are forgotten first when it is full. */
struct iot_file_state {
	__u64 next_offset;   /* where the last read or write on this file ended */
	__u64 ops[2][2];     /* [sequential, random][read, write] */
	__u64 bytes[2][2];
	char name[FILE_NAME_LEN]; /* the file's name (last path component) when first seen */
	__u32 fs_slot;            /* its filesystem's slot in fs_stats */
	__u32 _pad;
};

/* Slots of the direct-mapped per-file table (a power of two; user space may set fewer). */
#define FILE_SLOTS 16384

/* A slot of that table: the state of the first file whose identity hashed to it. */
struct iot_file_slot {
	__u64 token;              /* file_token(dev, ino) | 1 of its file; 0 while free */
	struct iot_file_id id;    /* dev 0 until the claim is complete */
	struct iot_file_state state;
};

#define MAX_MOUNTS 64
#define MOUNT_PREFIX_LEN 128

/* Mount points for paths given as absolute names; longest first. */
struct iot_mount_prefix {
	__u32 dev;
	__u32 len;
	char prefix[MOUNT_PREFIX_LEN];
};

#define TASK_COMM_LEN_ 16

#endif
