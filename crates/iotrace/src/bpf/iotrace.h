/* Layouts shared by the BPF programs and their Rust readers (the Rust modules mirror them with
 * #[repr(C)]; a test checks the sizes). Only fixed-width fields, no padding holes. */
#ifndef IOTRACE_H
#define IOTRACE_H

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

/* Per filesystem (keyed by the kernel's s_dev), per CPU, cumulative since attach. */
struct iot_fs_counts {
	__u64 ops[CLASSES][2];
	__u64 bytes[CLASSES][2];
	__u64 meta[META_CLASSES];
	__u64 _reserved;
};

struct iot_file_id {
	__u64 ino;
	__u32 dev;
	__u32 _pad;
};

#define FILE_NAME_LEN 48

/* Per file, shared by all CPUs, cumulative since attach (LRU: the least recently used
 * files are forgotten first when the map is full). */
struct iot_file_state {
	__u64 next_offset;   /* where the last read or write on this file ended */
	__u64 ops[2][2];     /* [sequential, random][read, write] */
	__u64 bytes[2][2];
	char name[FILE_NAME_LEN]; /* the file's name (last path component) when first seen */
};

#define MAX_MOUNTS 64
#define MOUNT_PREFIX_LEN 128

/* Mount points for paths given as absolute names; longest first. */
struct iot_mount_prefix {
	__u32 dev;
	__u32 len;
	char prefix[MOUNT_PREFIX_LEN];
};

/* cputime: per CPU, busy time measured at every context switch. */
struct iot_cpu_busy {
	__u64 busy_ns;     /* wall time a non-idle task was on the CPU, up to last_switch_ns */
	__u64 task_ns;     /* what the scheduler charged those tasks (sum_exec_runtime): leaves
			    * out steal, and irq time with IRQ_TIME_ACCOUNTING */
	__u64 last_switch_ns;
	__u64 next_runtime_ns; /* the incoming task's sum_exec_runtime at the last switch */
	__u64 switches;
	__u32 running_busy; /* a non-idle task is on the CPU since last_switch_ns */
	__u32 next_pid;     /* the task switched in at last_switch_ns */
};

#define TASK_COMM_LEN_ 16

/* cputime: a thread that exited, with its final CPU time. */
struct iot_exited_task {
	__u64 runtime_ns;  /* se.sum_exec_runtime: exact on-CPU time */
	__u64 group_runtime_ns; /* last thread of its process: the whole process's, else 0 */
	__u64 utime_ns;    /* tick-sampled split, as the kernel keeps it */
	__u64 stime_ns;
	__u64 start_boottime_ns;
	__u64 group_start_boottime_ns;
	__u64 exit_boottime_ns;
	__u32 pid;
	__u32 tgid;
	__u32 ppid;
	__u32 uid;
	char comm[TASK_COMM_LEN_];
};

/* tasks: one record per thread from the task iterator (pstime's sample in one pass). */
struct iot_task_rec {
	__u64 runtime_ns;       /* this thread's se.sum_exec_runtime */
	__u64 utime_ns;         /* this thread's tick-sampled split */
	__u64 stime_ns;
	__u64 start_boottime_ns; /* the process leader's */
	__u64 dead_runtime_ns;  /* signal->sum_sched_runtime: threads that exited */
	__u64 dead_utime_ns;    /* signal->utime, stime: same */
	__u64 dead_stime_ns;
	__u64 children_utime_ns; /* signal->cutime, cstime: reaped children */
	__u64 children_stime_ns;
	__u32 tid;
	__u32 tgid;
	__u32 ppid;
	__u32 nr_threads;
	char state;             /* as /proc/PID/stat shows it */
	char comm[TASK_COMM_LEN_];
	char _pad[7];
};

#endif
