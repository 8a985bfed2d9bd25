/* Layouts shared by the cpuacct BPF programs and their Rust readers (libbpf-cargo generates
 * the Rust types from them). Only fixed-width fields, no padding holes. */
#ifndef CPUACCT_H
#define CPUACCT_H

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

/* One process's CPU time summed over its threads (procsum.bpf.c, serve's process collector). */
struct iot_proc_rec {
	__u64 start_boottime_ns; /* with the PID, names the process across PID reuse */
	__u64 utime_ns;          /* live threads' tick-sampled split plus exited threads' */
	__u64 stime_ns;
	__u32 tgid;
	__u32 nr_threads;        /* live threads counted */
	char comm[TASK_COMM_LEN_];
};

/* Processes one pass of procsum.bpf.c holds; beyond, it says so and the reader falls back. */
#define IOT_MAX_PROCS 65536

#endif
