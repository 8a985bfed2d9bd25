/* Layouts shared by querystat.bpf.c and its Rust reader (which uses the skeleton's generated
 * copies of these structs). Only fixed-width fields, no padding holes. */
#ifndef QUERYSTAT_H
#define QUERYSTAT_H

/* log2 slots of a latency in microseconds: slot 0 holds 0 us, slot i > 0 holds
 * [2^(i-1), 2^i) us. */
#define QS_SLOTS 64

/* The histograms kept (index into qs_stats.hist). QS_ALL is not written by the programs:
 * every query is either a hit or a miss, so user space sums those two into it (one histogram
 * fewer to update per query). */
#define QS_ALL 0
#define QS_HIT 1           /* MariaDB: answered by the query cache; PostgreSQL: no buffer read */
#define QS_MISS 2
#define QS_PREEMPTED 3     /* left the CPU involuntarily at least once while in flight */
#define QS_NOT_PREEMPTED 4
#define QS_OFF_RUNQ 5      /* per query: off-CPU time waiting on the run queue (if any) */
#define QS_OFF_IO 6        /* ... in uninterruptible sleep (D: mostly I/O) */
#define QS_OFF_SLEEP 7     /* ... in interruptible sleep (S: locks, network, latches) */
#define QS_HISTS 8

#define QS_OFF_REASONS 3   /* off_ns[]: run queue, D, S */

/* Per CPU, cumulative since load. */
struct qs_stats {
	__u64 hist[QS_HISTS][QS_SLOTS];
	__u64 count[QS_HISTS];
	__u64 sum_ns[QS_HISTS];
	__u64 buffer_hits;     /* PostgreSQL: buffer__read__done with found = 1 (if attached) */
	__u64 buffer_reads;    /* smgr__md__read__done: blocks read in from the OS */
	__u64 preemptions;     /* involuntary switches while a query was in flight */
	__u64 involuntary;     /* involuntary switches of any server thread */
	__u64 slow_dropped;    /* --slower events lost to a full ring buffer */
	/* With task_counters: the same queries as the threads' own counters saw them, read at
	 * query start and end (a check on the per-switch accounting): involuntary switches
	 * (nivcsw) and time waiting on a run queue (sched_info.run_delay; 0 where the kernel
	 * keeps none). */
	__u64 task_preemptions;
	__u64 task_run_delay_ns;
};

#define QS_F_TASK_COUNTERS 1  /* read the thread's own counters at query start and end */
#define QS_F_SLOWER 2         /* --slower: report queries at least slower_ns slow */

/* One server thread's query in flight: in its slot of `flights` or, when another thread holds
 * that, in its task storage. 128 bytes, what every query touches in the first 64. */
struct qs_inflight {
	__u64 task;          /* the slot's holder, its task_struct's address; 0 while free */
	__u64 start_ns;
	__u64 off_since_ns;  /* when it last left the CPU while in flight, 0 if on CPU */
	__u64 off_ns[QS_OFF_REASONS];
	__u32 buffer_hits;
	__u32 buffer_reads;
	__u16 depth;         /* MariaDB's nested dispatches; a query is in flight while > 0 */
	__u8 command;        /* MariaDB: the dispatch_command command (3 or 23) */
	__u8 off_reason;
	__u8 preempted;
	__u8 hit;
	__u8 flags;          /* QS_F_*: the settings, copied in when the record is made */
	__u8 _pad;
	/* Only with task_counters: the thread's involuntary switches and run-queue wait (ns) at
	 * query start. */
	__u64 nivcsw;
	__u64 run_delay;
	/* Only in a slot of `flights`: the holder's involuntary switches since it took the slot
	 * (sched_switch counts them here, not in the process tree, with no map lookup), and its
	 * process, so user space can add them to the process's count. */
	__u64 involuntary;
	__u32 tgid;
	__u32 _pad32;
	__u64 _spread[4];    /* to two whole cache lines: no two slots share one */
};

/* One process of the server's tree (keyed by TGID). */
struct qs_proc {
	/* Involuntary switches of its threads since attach, but for those of threads holding a
	 * slot of `flights`, which are counted there (and added here when the thread exits). */
	__u64 involuntary;
};

#define QS_TEXT_LEN 256

struct qs_text {
	char text[QS_TEXT_LEN];
};

struct qs_comm {
	char comm[16];
};

/* One query slower than --slower (the only per-query event sent to user space). */
struct qs_slow_event {
	__u64 latency_ns;
	__u64 off_ns[QS_OFF_REASONS];
	__u32 pid;
	__u32 tid;
	__u32 command;
	__u8 preempted;
	__u8 hit;
	__u8 _pad[2];
	char text[QS_TEXT_LEN];
};

#endif
