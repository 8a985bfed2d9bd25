// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Event-based CPU time (platscope cpu util --event, cpu pstime).
 *
 * sched_switch: every switch on and off each CPU, so busy time is summed in ns instead of
 * sampled by the tick. sched_process_exit: each exiting thread's final CPU time, so
 * processes that start and end between two samples of /proc are still counted. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "cpuacct.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Counted here, read by user space. */
__u64 exits_dropped = 0;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct iot_cpu_busy);
} busy SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);
	__type(value, struct iot_exited_task);
} exited SEC(".maps");

SEC("tp_btf/sched_switch")
int BPF_PROG(cpu_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 zero = 0;
	struct iot_cpu_busy *b = bpf_map_lookup_elem(&busy, &zero);
	__u64 now = bpf_ktime_get_ns();

	if (!b)
		return 0;
	/* The idle task is pid 0 on every CPU. Before the first switch seen on a CPU its
	 * state is unknown, so that stretch is not counted. */
	if (b->last_switch_ns && prev->pid != 0) {
		b->busy_ns += now - b->last_switch_ns;
		/* prev's runtime was brought up to date as it was switched out. It should be the
		 * task switched in last here; if not (a switch this program did not see), its
		 * scheduler-kept start of this stint is used instead, never a negative stretch. */
		__u64 runtime = prev->se.sum_exec_runtime;
		/* Both loaded first: clang would otherwise merge two loads through different
		 * pointer kinds into one instruction, which the verifier refuses. */
		__u64 stint_start = prev->se.prev_sum_exec_runtime;
		__u64 recorded = b->next_runtime_ns;

		barrier_var(stint_start);
		barrier_var(recorded);
		__u64 from = prev->pid == b->next_pid ? recorded : stint_start;

		if (runtime > from)
			b->task_ns += runtime - from;
	}
	b->last_switch_ns = now;
	b->next_runtime_ns = next->se.sum_exec_runtime;
	b->next_pid = next->pid;
	b->running_busy = next->pid != 0;
	b->switches++;
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(cpu_process_exit, struct task_struct *task)
{
	struct iot_exited_task e = {};

	e.runtime_ns = task->se.sum_exec_runtime;
	/* signal->live is decremented before this tracepoint: 0 on the process's last thread,
	 * whose sum_sched_runtime then holds the threads that exited (and were reaped) before. */
	if (BPF_CORE_READ(task, signal, live.counter) == 0)
		e.group_runtime_ns = BPF_CORE_READ(task, signal, sum_sched_runtime) + e.runtime_ns;
	e.utime_ns = task->utime;
	e.stime_ns = task->stime;
	e.start_boottime_ns = task->start_boottime;
	e.group_start_boottime_ns = BPF_CORE_READ(task, group_leader, start_boottime);
	e.exit_boottime_ns = bpf_ktime_get_boot_ns();
	e.pid = task->pid;
	e.tgid = task->tgid;
	e.ppid = BPF_CORE_READ(task, real_parent, tgid);
	e.uid = BPF_CORE_READ(task, cred, euid.val);
	bpf_probe_read_kernel_str(e.comm, sizeof(e.comm), task->comm);
	if (bpf_map_update_elem(&exited, &e.pid, &e, BPF_ANY))
		__sync_fetch_and_add(&exits_dropped, 1);
	return 0;
}
