/* Reference pointer chase for bench/mem_latency_slb.sh, written independently of platscope:
 * one pointer per 64-byte line of an mmap'd buffer (4 KiB pages, THP off), linked in a single
 * random cycle (Sattolo's algorithm), chased by a pinned thread. Reports the median ns per load
 * over timed batches. Prints: bytes median_ns
 * Build: cc -O2 -o chase_ref chase_ref.c */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: chase_ref BYTES CPU SECONDS\n"); return 2; }
    size_t bytes = strtoull(argv[1], 0, 10), lines = bytes / 64;
    double seconds = atof(argv[3]);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(atoi(argv[2]), &set);
    if (sched_setaffinity(0, sizeof set, &set)) { perror("sched_setaffinity"); return 1; }
    char *buf = mmap(0, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) { perror("mmap"); return 1; }
    madvise(buf, bytes, MADV_NOHUGEPAGE);
    uint32_t *perm = malloc(lines * sizeof *perm);
    for (size_t i = 0; i < lines; i++) perm[i] = i;
    for (size_t i = lines - 1; i > 0; i--) { /* Sattolo: one cycle through all lines */
        size_t j = next() % i;
        uint32_t t = perm[i]; perm[i] = perm[j]; perm[j] = t;
    }
    for (size_t i = 0; i < lines; i++)
        *(void **)(buf + (size_t)i * 64) = buf + (size_t)perm[i] * 64;
    free(perm);
    void **p = (void **)buf;
    for (size_t i = 0; i < lines; i++) p = *p; /* warm-up lap */
    size_t batch = 1 << 10;
    for (;;) { /* size a batch to about 2 ms */
        double t0 = now();
        for (size_t i = 0; i < batch; i++) p = *p;
        if (now() - t0 > 0.002 || batch > (1ul << 30)) break;
        batch *= 2;
    }
    double samples[100000];
    int n = 0;
    double start = now();
    while ((now() - start < seconds || n < 11) && n < 100000) {
        double t0 = now();
        for (size_t i = 0; i < batch; i++) p = *p;
        samples[n++] = (now() - t0) * 1e9 / batch;
    }
    qsort(samples + 1, n - 1, sizeof *samples, cmp); /* first batch is warm-up */
    printf("%zu %.3f %p\n", bytes, samples[1 + (n - 1) / 2], (void *)p);
    return 0;
}
