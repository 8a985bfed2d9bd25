// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Every process's CPU time, summed over its threads in the kernel, in one pass (serve's process
 * collector). Run on demand (BPF_PROG_RUN), the program walks the process list, and the
 * threads of each process that has more than one, with the kernel's open-coded task iterators
 * (Linux 6.7+), and writes one record per process into an array user space has mapped: no
 * seq_file, no per-thread record, no per-task PID lookup as the task iterator program does. */
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
extern struct task_struct *bpf_task_acquire(struct task_struct *p) __ksym;
extern void bpf_task_release(struct task_struct *p) __ksym;
extern void bpf_rcu_read_lock(void) __ksym;
extern void bpf_rcu_read_unlock(void) __ksym;

SEC("syscall")
int sum_processes(void *ctx)
{
	struct task_struct *leader;

	nr_procs = 0;
	truncated = 0;
	bpf_rcu_read_lock();
	/* The process list (leaders only), and a process's own thread list only when it has more
	 * than one thread: a walk over every thread steps through each task's thread list too,
	 * which for a single-threaded process (most of them) is one more cache line to miss. */
	bpf_for_each(task, leader, NULL, BPF_TASK_ITER_ALL_PROCS) {
		struct signal_struct *sig = leader->signal;
		__u32 n = nr_procs;
		struct iot_proc_rec *r;
		__u64 *name;

		if (n >= IOT_MAX_PROCS) {
			truncated = 1;
			break;
		}
		r = &procs[n];
		r->tgid = leader->tgid;
		r->start_boottime_ns = leader->start_boottime;
		/* Exited threads' time is kept in the signal struct. */
		r->utime_ns = sig->utime + leader->utime;
		r->stime_ns = sig->stime + leader->stime;
		r->nr_threads = 1;
		/* The name as two plain loads from the task, which the verifier lets the program
		 * read directly under RCU: no helper call. */
		name = (__u64 *)r->comm;
		name[0] = *(__u64 *)&leader->comm[0];
		name[1] = *(__u64 *)&leader->comm[8];
		if (sig->nr_threads > 1) {
			/* A thread walk starts from a task held by reference (the verifier's rule
			 * for bpf_iter_task_new), taken only for these processes. */
			struct task_struct *held = bpf_task_acquire(leader);
			struct task_struct *thread;

			if (held) {
				bpf_for_each(task, thread, held, BPF_TASK_ITER_PROC_THREADS) {
					if (thread == held)
						continue;
					r->utime_ns += thread->utime;
					r->stime_ns += thread->stime;
					r->nr_threads++;
				}
				bpf_task_release(held);
			}
		}
		nr_procs = n + 1;
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
