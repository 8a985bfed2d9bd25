/* Reference SLB loop for bench/mem_latency_slb.sh: the Silly Little Benchmark's work, written
 * independently of platscope. PAGES 4 KiB pages are mmap'd and memset, then PAGES*LOOPS
 * 8-byte stores go to a pseudo-random page (xorshift64*), within its first 64 bytes.
 * Prints: ops ns_per_op ops_per_sec
 * Build: cc -O2 -o slb_ref slb_ref.c */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: slb_ref PAGES LOOPS CPU\n");
        return 2;
    }
    uint64_t pages = strtoull(argv[1], 0, 10), loops = strtoull(argv[2], 0, 10);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(atoi(argv[3]), &set);
    if (sched_setaffinity(0, sizeof set, &set)) { perror("sched_setaffinity"); return 1; }
    size_t bytes = pages * 4096;
    char *buf = mmap(0, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) { perror("mmap"); return 1; }
    madvise(buf, bytes, MADV_NOHUGEPAGE);
    memset(buf, 0, bytes);
    uint64_t x = 88172645463325252ull, ops = pages * loops;
    double t0 = now();
    for (uint64_t i = 0; i < ops; i++) {
        x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
        uint64_t r = x * 2685821657736338717ull;
        uint64_t page = ((r >> 32) * pages) >> 32;
        *(volatile uint64_t *)(buf + page * 4096 + ((r >> 8) & 7) * 8) = r;
    }
    double t = now() - t0;
    printf("%llu %.3f %.1f\n", (unsigned long long)ops, t * 1e9 / ops, ops / t);
    return 0;
}
