// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* platscope db querystat: per-query latency, query-cache / buffer hits and pre-emption of a
 * database server's threads, aggregated in the kernel.
 *
 * A query is a begin/end pair on one thread: PostgreSQL's query__execute__start/done (or
 * transaction__start/commit/abort) USDT probes, MariaDB's dispatch_command entry/return
 * uprobes. The probes are attached system-wide to the server binary; `tree` (the server's
 * processes, kept up to date from fork/exit) limits them to one server. sched_switch follows
 * in-flight queries off and back onto the CPU.
 *
 * sched_switch runs at every context switch on the machine, and nearly all of them concern no
 * query: a backend blocks on its socket between queries and wakes for the next one, voluntary
 * switches outside any query. It tells those from the rest by what needs no helper call and
 * no read of either task_struct: the switch's arguments (pre-empted or not) and, for each
 * task, one word of `in_query` found from the task's address. Only then does it look at a
 * record or a map. The state is the tasks', not the CPUs': a switch the tracepoint does not
 * deliver (it happens) costs that switch's accounting and nothing after it. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/usdt.bpf.h>
#include "querystat.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set before load. */
const volatile __u64 slower_ns = 0;     /* 0: no per-query events */
/* Read each query's thread's own counters at its start and end (Options::task_counters). */
const volatile bool task_counters = false;

/* Unused by the programs: makes the layouts part of the skeleton's generated types. */
struct qs_slow_event slow_event_layout = {};
struct qs_text text_layout = {};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	/* By size, not type: the skeleton generator cannot derive Default for its nested
	 * array. User space reads it as u64 words in the header's order. */
	__uint(value_size, sizeof(struct qs_stats));
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct qs_proc);
} tree SEC(".maps");

/* The in-flight query of each server thread that has run one, in a slot chosen by the address
 * of its task_struct: an array lookup the verifier turns into an address computation, so the
 * programs find it with no helper call and without reading the task_struct (one cache line,
 * where task storage would be three: the task's, its storage's, the element's). A slot is
 * taken by the first server thread to start a query there (compare-and-swap of its address
 * into `task`) and given back when that thread exits, before its task_struct can be freed and
 * the address reused; a thread whose slot another holds keeps its record in its task storage
 * (below). Mappable only for the alignment that brings: the values start on a page, so each
 * 128-byte record starts a cache line and no two share one. */
#define QS_FLIGHTS_BITS 12
#define QS_FLIGHTS (1 << QS_FLIGHTS_BITS)

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, QS_FLIGHTS);
	__type(key, __u32);
	__type(value, struct qs_inflight);
} flights SEC(".maps");

/* The records of threads whose slot another holds: found from the task pointer, freed by the
 * kernel when the thread exits. Created only for the server's threads. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct qs_inflight);
} inflight SEC(".maps");

/* Per slot of `flights`: the low half of its holder's address while the holder has a query
 * open, else 0 (written by the holder's own begin and end only). Four bytes a slot, so the
 * words sched_switch reads for every task it sees lie in a table small enough to stay in
 * cache, where the records would not. */
__u32 in_query[QS_FLIGHTS] = {};

/* Records made in task storage since load, and those of them with a query open: while there
 * are none, no task is asked for its task storage, and sched_switch needs only `in_query`. */
__u64 stored_records = 0;
__u64 stored_in_query = 0;

/* How many of the server's processes (the tree) have a TGID in each slot, so that an
 * involuntary switch looks the tree up only for a task that may be the server's. Counted up
 * as a process joins the tree (user space, for those it seeds; qs_fork), down as it leaves
 * (qs_exit); a process counted twice costs a lookup that finds nothing, never a missed one.
 * Mask in step with QS_PROC_SLOTS in tracer.rs. */
#define QS_PROC_SLOTS 4096
__u32 server_procs[QS_PROC_SLOTS] = {};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct qs_text);
} texts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct qs_comm);
	__type(value, __u64);
} preemptors SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} slow SEC(".maps");

static const struct qs_text zero_text = {};

_Static_assert(__builtin_offsetof(struct qs_inflight, nivcsw) == 64 &&
	       sizeof(struct qs_inflight) == 128,
	       "a slot is two cache lines, a query's fields all in the first");

/* Whether process `tgid` is the server's. */
static __always_inline bool in_tree(__u32 tgid)
{
	return bpf_map_lookup_elem(&tree, &tgid) != NULL;
}

/* The count of server processes in the slot of `tgid`. */
static __always_inline __u32 *procs_slot(__u32 tgid)
{
	return &server_procs[tgid & (QS_PROC_SLOTS - 1)];
}

/* The low half of `task`'s address as a plain number. The verifier allows no arithmetic on a
 * pointer, but a 32-bit move of one gives a number to a program that may read addresses
 * (root's); written as the move itself, so the compiler cannot fold it into the arithmetic. */
static __always_inline __u32 addr_low(struct task_struct *task)
{
	__u32 low;

	asm volatile("%[low] = %[addr]" : [low] "=w"(low) : [addr] "w"((__u32)(__u64)task));
	return low;
}

/* The slot of `task`'s record in `flights` and `in_query`: its address, Fibonacci-hashed
 * (task_structs lie a slab object apart, so low bits alone would crowd a few slots). */
static __always_inline __u32 flight_index(struct task_struct *task)
{
	return (addr_low(task) * 0x9E3779B1U) >> (32 - QS_FLIGHTS_BITS);
}

/* The record in `task`'s slot, whoever holds it. Never NULL (the index is in range), but the
 * verifier wants the check. */
static __always_inline struct qs_inflight *slot_of(struct task_struct *task)
{
	__u32 i = flight_index(task);

	return bpf_map_lookup_elem(&flights, &i);
}

/* `task`'s slot if it holds it, else NULL. */
static __always_inline struct qs_inflight *held_slot(struct task_struct *task)
{
	struct qs_inflight *q = slot_of(task);

	return q && q->task == (__u64)task ? q : NULL;
}

/* `task`'s record in task storage (its slot being another's), asked for only if some thread
 * has a record there and this task has task storage at all (of any map, any program). */
static __always_inline struct qs_inflight *stored_inflight(struct task_struct *task)
{
	if (!stored_records || !task->bpf_storage)
		return NULL;
	return bpf_task_storage_get(&inflight, task, 0, 0);
}

/* The in-flight record of `task`, a server thread's; NULL for every other thread. */
static __always_inline struct qs_inflight *inflight_of(struct task_struct *task)
{
	struct qs_inflight *q = held_slot(task);

	return q ? q : stored_inflight(task);
}

/* The current thread's in-flight record, NULL unless it is the server's. */
static __always_inline struct qs_inflight *my_inflight(void)
{
	return inflight_of(bpf_get_current_task_btf());
}

/* floor(log2(v)) + 1 for v > 0, 0 for 0: the histogram slot of a value in microseconds. */
static __always_inline __u32 hist_slot(__u64 v)
{
	__u32 r = 0;

	if (v >= (1ULL << 32)) { v >>= 32; r += 32; }
	if (v >= (1ULL << 16)) { v >>= 16; r += 16; }
	if (v >= (1ULL << 8)) { v >>= 8; r += 8; }
	if (v >= (1ULL << 4)) { v >>= 4; r += 4; }
	if (v >= (1ULL << 2)) { v >>= 2; r += 2; }
	if (v >= (1ULL << 1)) { r += 1; v >>= 1; }
	return v ? r + 1 : 0;
}

static __always_inline void record(struct qs_stats *s, __u32 which, __u64 ns)
{
	__u32 slot = hist_slot(ns / 1000) & (QS_SLOTS - 1);

	if (which >= QS_HISTS)
		return;
	s->hist[which][slot]++;
	s->count[which]++;
	s->sum_ns[which] += ns;
}

static __always_inline struct qs_stats *my_stats(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&stats, &zero);
}

/* Notes where sched_switch looks that the current thread `task`, whose record is `q`, opens
 * (`open`) or closes its query. */
static __always_inline void mark_in_query(struct qs_inflight *q, struct task_struct *task,
					  bool open)
{
	if (q->task == (__u64)task)
		in_query[flight_index(task)] = open ? addr_low(task) : 0;
	else
		__sync_fetch_and_add(&stored_in_query, open ? 1 : -1);
}

/* Whether `task` may have a query open: false only when it has none. */
static __always_inline bool maybe_in_query(struct task_struct *task)
{
	return in_query[flight_index(task)] == addr_low(task) || stored_in_query;
}

/* The current thread's involuntary switches and run-queue wait so far: its own counters, which
 * the scheduler keeps whatever is attached. */
static __always_inline void read_task_counters(struct task_struct *task, __u64 *nivcsw,
					       __u64 *run_delay)
{
	*nivcsw = task->nivcsw;
	*run_delay = bpf_core_field_exists(task->sched_info) ? task->sched_info.run_delay : 0;
}

/* A record for the current thread, which has none yet, if it is the server's (so the tree is
 * consulted once per thread, not once per query). The settings the probes need at every
 * query are copied into it, where they share the line a query touches anyway: read from
 * .rodata at each query, they would cost a cache line of their own. */
static __always_inline struct qs_inflight *new_inflight(struct task_struct *task)
{
	if (!in_tree(task->tgid))
		return NULL;
	struct qs_inflight *q = slot_of(task);

	if (q && __sync_val_compare_and_swap(&q->task, 0, (__u64)task) == 0) {
		/* Left by its last holder with no query open (qs_exit). */
		q->depth = 0;
		q->involuntary = 0;
		q->tgid = task->tgid;
	} else {
		q = bpf_task_storage_get(&inflight, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!q)
			return NULL;
		__sync_fetch_and_add(&stored_records, 1);
	}
	q->flags = (task_counters ? QS_F_TASK_COUNTERS : 0) | (slower_ns ? QS_F_SLOWER : 0);
	return q;
}

/* Opens a query on the record `q` of the current thread `task`. One still open is given up
 * and the timing starts afresh: PostgreSQL leaves a statement that fails by a long jump past
 * its end probe, so an open one may be dead, and when it is not (SQL's EXECUTE runs its
 * statement in a portal of its own) the inner statement is the query timed and the outer's end
 * finds nothing open. Counting begins as nesting would leave a failed statement's thread
 * inside it for good, its later queries uncounted. MariaDB's dispatches, which do nest, count
 * their depth before calling this. */
static __always_inline void begin(struct qs_inflight *q, struct task_struct *task, __u32 command)
{
	if (!q->depth)
		mark_in_query(q, task, true);
	q->depth = 1;
	if (q->flags & QS_F_TASK_COUNTERS)
		read_task_counters(task, &q->nivcsw, &q->run_delay);
	q->start_ns = bpf_ktime_get_ns();
	q->off_since_ns = 0;
	q->off_ns[0] = q->off_ns[1] = q->off_ns[2] = 0;
	q->buffer_hits = q->buffer_reads = 0;
	q->command = command;
	q->preempted = 0;
	q->hit = 0;
}

/* Ends the current thread's query if this closes the outermost begin. `hit_if_no_read`:
 * PostgreSQL's hit means no buffer had to be read in; MariaDB's is set by the query cache. */
static __always_inline void end(bool hit_if_no_read)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct qs_inflight *q = inflight_of(task);

	if (!q || q->depth == 0)
		return;
	if (--q->depth > 0)
		return;
	mark_in_query(q, task, false);
	struct qs_stats *s = my_stats();

	if (!s)
		return;
	__u64 lat = bpf_ktime_get_ns() - q->start_ns;
	bool hit = hit_if_no_read ? q->buffer_reads == 0 : q->hit;

	if (q->flags & QS_F_TASK_COUNTERS) {
		__u64 nivcsw, run_delay;

		read_task_counters(task, &nivcsw, &run_delay);
		s->task_preemptions += nivcsw - q->nivcsw;
		s->task_run_delay_ns += run_delay - q->run_delay;
	}

	record(s, hit ? QS_HIT : QS_MISS, lat);
	record(s, q->preempted ? QS_PREEMPTED : QS_NOT_PREEMPTED, lat);
	if (q->off_ns[0])
		record(s, QS_OFF_RUNQ, q->off_ns[0]);
	if (q->off_ns[1])
		record(s, QS_OFF_IO, q->off_ns[1]);
	if (q->off_ns[2])
		record(s, QS_OFF_SLEEP, q->off_ns[2]);
	s->buffer_hits += q->buffer_hits;
	s->buffer_reads += q->buffer_reads;

	if (!(q->flags & QS_F_SLOWER) || lat < slower_ns)
		return;
	struct qs_slow_event *e = bpf_ringbuf_reserve(&slow, sizeof(*e), 0);

	if (!e) {
		s->slow_dropped++;
		return;
	}
	e->latency_ns = lat;
	e->off_ns[0] = q->off_ns[0];
	e->off_ns[1] = q->off_ns[1];
	e->off_ns[2] = q->off_ns[2];
	__u32 tid = task->pid;

	e->pid = task->tgid;
	e->tid = tid;
	e->command = q->command;
	e->preempted = q->preempted;
	e->hit = hit;
	struct qs_text *t = bpf_map_lookup_elem(&texts, &tid);

	if (t)
		bpf_probe_read_kernel(e->text, sizeof(e->text), t->text);
	else
		e->text[0] = 0;
	bpf_ringbuf_submit(e, 0);
}

/* Keeps the statement text of the current thread (only with --slower). */
static __always_inline void keep_text(const void *text, __u32 len, bool user_str)
{
	if (slower_ns == 0 || !text)
		return;
	/* One helper call gives both halves (each call's return is dear on AMD hosts with SRSO's
	 * Safe RET). */
	__u64 pid_tgid = bpf_get_current_pid_tgid();

	if (!in_tree(pid_tgid >> 32))
		return;
	__u32 tid = (__u32)pid_tgid;
	struct qs_text *t = bpf_map_lookup_elem(&texts, &tid);

	if (!t) {
		bpf_map_update_elem(&texts, &tid, &zero_text, BPF_NOEXIST);
		t = bpf_map_lookup_elem(&texts, &tid);
		if (!t)
			return;
	}
	if (user_str) {
		bpf_probe_read_user_str(t->text, sizeof(t->text), text);
		return;
	}
	/* A packet of known length, not NUL-terminated. */
	__u32 n = len > QS_TEXT_LEN - 1 ? QS_TEXT_LEN - 1 : len;

	/* Kept opaque so the mask below is what the verifier sees bounding the size. */
	barrier_var(n);
	n &= QS_TEXT_LEN - 1;
	if (bpf_probe_read_user(t->text, n, text))
		t->text[0] = 0;
	else
		t->text[n] = 0;
}

/* ---- PostgreSQL (USDT) ---- */

SEC("usdt")
int BPF_USDT(pg_begin)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct qs_inflight *q = inflight_of(task);

	if (!q)
		q = new_inflight(task);
	if (q)
		begin(q, task, 0);
	return 0;
}

SEC("usdt")
int BPF_USDT(pg_end)
{
	end(true);
	return 0;
}

/* query__start (simple protocol) and query__parse__start (extended): the statement text. */
SEC("usdt")
int BPF_USDT(pg_text, const char *query)
{
	keep_text(query, 0, true);
	return 0;
}

/* buffer__read__done(fork, block, spc, db, rel, backend, is_extend, found): attached only
 * when exact buffer hits are asked for (one probe per buffer lookup); the buffers that were
 * not found are counted at smgr__md__read__done, which fires only for actual reads. Only
 * `found` is read, and only inside a query: BPF_USDT would fetch all eight arguments first,
 * each an attach-cookie call and one or two probe reads. */
#define PG_BUFFER_FOUND_ARG 7

SEC("usdt")
int pg_buffer_done(struct pt_regs *ctx)
{
	struct qs_inflight *q = my_inflight();
	long found;

	if (!q || q->depth == 0 || bpf_usdt_arg(ctx, PG_BUFFER_FOUND_ARG, &found))
		return 0;
	if (found & 0xff)
		q->buffer_hits++;
	return 0;
}

/* smgr__md__read__done: a block read in from the OS (page cache or disk), i.e. a shared
 * buffer miss. Costs nothing while the data is in shared buffers. */
SEC("usdt")
int BPF_USDT(pg_block_read)
{
	struct qs_inflight *q = my_inflight();

	if (q && q->depth > 0)
		q->buffer_reads++;
	return 0;
}

/* ---- MariaDB (uprobes) ---- */

#define COM_QUERY 3
#define COM_STMT_EXECUTE 23

/* dispatch_command(enum_server_command command, THD *thd, char *packet, uint length, bool) */
SEC("uprobe")
int BPF_UPROBE(my_dispatch, int command, void *thd, const char *packet, unsigned int length)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct qs_inflight *q = inflight_of(task);

	/* Inside a query, every nested dispatch is counted so the returns pair up. */
	if (q && q->depth > 0) {
		q->depth++;
		return 0;
	}
	if (command != COM_QUERY && command != COM_STMT_EXECUTE)
		return 0;
	if (!q)
		q = new_inflight(task);
	if (!q)
		return 0;
	begin(q, task, command);
	if (command == COM_QUERY)
		keep_text(packet, length, false);
	return 0;
}

SEC("uretprobe")
int BPF_URETPROBE(my_dispatch_ret)
{
	end(false);
	return 0;
}

/* Query_cache::send_result_to_client returns 1 when the cache answered the query. */
SEC("uretprobe")
int BPF_URETPROBE(my_qc_ret, int ret)
{
	struct qs_inflight *q = my_inflight();

	if (q && q->depth > 0 && ret == 1)
		q->hit = 1;
	return 0;
}

/* ---- the scheduler ---- */

#define TASK_RUNNING 0
#define TASK_UNINTERRUPTIBLE 2

/* prev_state is the tracepoint's fourth argument since Linux 5.18. */
SEC("tp_btf/sched_switch")
int BPF_PROG(qs_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	/* Involuntary as the kernel's nivcsw counts it: pre-empted, or switched out still
	 * runnable (a yield; also a sleep cut short by a pending signal, which nivcsw does not
	 * count). */
	bool involuntary = preempt || prev_state == TASK_RUNNING;
	bool out = maybe_in_query(prev);
	bool in = maybe_in_query(next);
	struct qs_stats *s = NULL;
	__u64 now = 0;

	/* Nearly every switch: a thread going to sleep, neither task inside a query. */
	if (!involuntary && !out && !in)
		return 0;
	/* An involuntary switch is counted for the server's threads. Most are a server thread
	 * that has run a query, which holds its slot of `flights`: counted there, on a line its
	 * queries keep in this CPU's cache (a lookup of the tree for each cost more than the rest
	 * of this program: with pgbench -S the client pre-empts the backend at every reply).
	 * Other threads (a server process that never ran a query, a record in task storage)
	 * look the tree up if their process may be the server's. */
	struct qs_inflight *held = involuntary || out ? held_slot(prev) : NULL;

	if (involuntary) {
		bool counted = false;

		if (held) {
			held->involuntary++;
			counted = true;
		} else {
			__u32 prev_tgid = prev->tgid;

			if (*procs_slot(prev_tgid)) {
				struct qs_proc *proc = bpf_map_lookup_elem(&tree, &prev_tgid);

				if (proc) {
					__sync_fetch_and_add(&proc->involuntary, 1);
					counted = true;
				}
			}
		}
		if (counted) {
			s = my_stats();
			if (s)
				s->involuntary++;
		}
	}
	/* The outgoing thread, inside a query: it leaves the CPU, and why is noted. */
	struct qs_inflight *q = NULL;

	if (out)
		q = held ? held : stored_inflight(prev);

	if (q && q->depth > 0) {
		now = bpf_ktime_get_ns();
		q->off_since_ns = now;
		if (involuntary) {
			q->off_reason = 0;
			q->preempted = 1;
			if (!s)
				s = my_stats();
			if (s)
				s->preemptions++;
			struct qs_comm who = {};

			bpf_probe_read_kernel_str(who.comm, sizeof(who.comm), next->comm);
			__u64 one = 1, *n = bpf_map_lookup_elem(&preemptors, &who);

			if (n)
				__sync_fetch_and_add(n, 1);
			else
				bpf_map_update_elem(&preemptors, &who, &one, BPF_NOEXIST);
		} else {
			q->off_reason = (prev_state & TASK_UNINTERRUPTIBLE) ? 1 : 2;
		}
	}
	/* The incoming thread, back inside its query: its time off the CPU, by why it left. */
	q = in ? inflight_of(next) : NULL;
	if (q && q->depth > 0 && q->off_since_ns) {
		if (!now)
			now = bpf_ktime_get_ns();
		__u32 r = q->off_reason;

		if (r < QS_OFF_REASONS)
			q->off_ns[r] += now - q->off_since_ns;
		q->off_since_ns = 0;
	}
	return 0;
}

/* A process forked by one of the server's processes joins the tree (threads share it). */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(qs_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 parent_tgid = parent->tgid;
	__u32 child_tgid = child->tgid;
	struct qs_proc fresh = {};

	if (child_tgid == parent_tgid || !in_tree(parent_tgid))
		return 0;
	if (!bpf_map_update_elem(&tree, &child_tgid, &fresh, BPF_ANY))
		__sync_fetch_and_add(procs_slot(child_tgid), 1);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(qs_exit, struct task_struct *task)
{
	__u32 tid = task->pid;
	__u32 tgid = task->tgid;
	struct qs_inflight *q = inflight_of(task);

	/* A thread exiting inside a query leaves it closed. */
	if (q && q->depth > 0) {
		q->depth = 0;
		mark_in_query(q, task, false);
	}
	struct qs_proc *proc = bpf_map_lookup_elem(&tree, &tgid);

	/* Its slot is given back (a record in task storage goes with the task), whatever the
	 * tree says: a thread can outlive its process's leader. The involuntary switches counted
	 * in the slot go to its process first. */
	if (q && q->task == (__u64)task) {
		if (proc)
			__sync_fetch_and_add(&proc->involuntary, q->involuntary);
		__sync_val_compare_and_swap(&q->task, (__u64)task, 0);
	}
	if (!proc)
		return 0;
	bpf_map_delete_elem(&texts, &tid);
	if (tid == tgid && !bpf_map_delete_elem(&tree, &tgid))
		__sync_fetch_and_add(procs_slot(tgid), -1);
	return 0;
}

/* ---- the floor: empty programs at the same points, for the overhead benches ---- */

/* Attached instead of the programs above with --empty-programs: what tracing costs at these
 * points before any work is done (the probe trap, the tracepoint's call). */
SEC("usdt")
int qs_floor_probe(struct pt_regs *ctx)
{
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(qs_floor_switch)
{
	return 0;
}
