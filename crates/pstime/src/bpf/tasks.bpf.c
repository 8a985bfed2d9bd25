// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Every thread's CPU figures in one pass (platscope cpu pstime): a task iterator writes one
 * fixed record per thread to the reader, instead of opening /proc/PID/stat per process. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "tasks.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Unused by the program: makes the record's layout part of the skeleton's generated types,
 * so the Rust reader uses the same definition. */
struct iot_task_rec record_layout = {};

#define EXIT_DEAD 16
#define EXIT_ZOMBIE 32

/* The letter /proc/PID/stat gives for a task's state. */
static __always_inline char state_letter(struct task_struct *task)
{
	int exit_state = task->exit_state;
	unsigned int state = task->__state;

	if (exit_state & EXIT_ZOMBIE)
		return 'Z';
	if (exit_state & EXIT_DEAD)
		return 'X';
	if (state == 0)
		return 'R';
	if (state == 0x402) /* TASK_IDLE */
		return 'I';
	if (state & 1)
		return 'S';
	if (state & 2)
		return 'D';
	if (state & 4)
		return 'T';
	if (state & 8)
		return 't';
	if (state & 64)
		return 'P';
	return 'S';
}

SEC("iter/task")
int dump_task(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct iot_task_rec r = {};

	if (!task)
		return 0;
	struct signal_struct *sig = task->signal;

	r.runtime_ns = task->se.sum_exec_runtime;
	r.utime_ns = task->utime;
	r.stime_ns = task->stime;
	r.start_boottime_ns = task->group_leader->start_boottime;
	r.dead_runtime_ns = sig->sum_sched_runtime;
	r.dead_utime_ns = sig->utime;
	r.dead_stime_ns = sig->stime;
	r.children_utime_ns = sig->cutime;
	r.children_stime_ns = sig->cstime;
	r.tid = task->pid;
	r.tgid = task->tgid;
	r.ppid = task->real_parent->tgid;
	r.nr_threads = sig->nr_threads;
	r.state = state_letter(task);
	bpf_probe_read_kernel_str(r.comm, sizeof(r.comm), task->comm);
	bpf_seq_write(ctx->meta->seq, &r, sizeof(r));
	return 0;
}
