// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Every process's CPU time, summed over its threads in the kernel, in one pass (serve's process
 * collector). Run on demand (BPF_PROG_RUN), the program walks the process list and each
 * process's threads with the kernel's open-coded task iterators (Linux 6.7+) and writes one
 * record per process into an array user space has mapped: no seq_file, no per-thread record,
 * no per-task PID lookup as the task iterator program does. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "cpuacct.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct iot_proc_rec procs[IOT_MAX_PROCS];
/* Records written by the last run, and whether processes were left out (more than the array
 * holds). Globals rather than locals: a counter in memory keeps the verifier's loop states
 * equal from one iteration to the next. */
__u32 nr_procs;
__u32 truncated;

#ifdef __TARGET_ARCH_x86
/* The vendored x86-64 header comes from Linux 6.18, which has the iterators; the arm64 one
 * from 6.1, which has not: there the program only reports that it cannot run. */
extern int bpf_iter_task_new(struct bpf_iter_task *it, struct task_struct *task,
			     unsigned int flags) __weak __ksym;
extern struct task_struct *bpf_iter_task_next(struct bpf_iter_task *it) __weak __ksym;
extern void bpf_iter_task_destroy(struct bpf_iter_task *it) __weak __ksym;
extern void bpf_rcu_read_lock(void) __ksym;
extern void bpf_rcu_read_unlock(void) __ksym;

SEC("syscall")
int sum_processes(void *ctx)
{
	struct task_struct *thread;

	nr_procs = 0;
	truncated = 0;
	bpf_rcu_read_lock();
	/* Every thread of every process, a process's threads one after another: a record is
	 * started at each process's first thread and its threads are added to it. */
	bpf_for_each(task, thread, NULL, BPF_TASK_ITER_ALL_THREADS) {
		__u32 n = nr_procs;
		__u32 tgid = thread->tgid;
		struct iot_proc_rec *r;

		if (n > 0 && n <= IOT_MAX_PROCS && procs[n - 1].tgid == tgid) {
			r = &procs[n - 1];
		} else if (n >= IOT_MAX_PROCS) {
			truncated = 1;
			break;
		} else {
			struct task_struct *leader = thread->group_leader;
			struct signal_struct *sig = thread->signal;

			r = &procs[n];
			r->tgid = tgid;
			r->start_boottime_ns = leader->start_boottime;
			/* Exited threads' time is kept in the signal struct. */
			r->utime_ns = sig->utime;
			r->stime_ns = sig->stime;
			r->nr_threads = 0;
			bpf_probe_read_kernel(r->comm, sizeof(r->comm), leader->comm);
			nr_procs = n + 1;
		}
		r->utime_ns += thread->utime;
		r->stime_ns += thread->stime;
		r->nr_threads++;
	}
	bpf_rcu_read_unlock();
	return 0;
}
#else
SEC("syscall")
int sum_processes(void *ctx)
{
	return 1; /* no open-coded task iterators in this architecture's header */
}
#endif
