/* The record tasks.bpf.c writes and pstime::tasks reads (libbpf-cargo generates the Rust type
 * from it). Only fixed-width fields, no padding holes. */
#ifndef PSTIME_TASKS_H
#define PSTIME_TASKS_H

#define TASK_COMM_LEN_ 16

/* One record per thread from the task iterator (pstime's sample in one pass). */
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
