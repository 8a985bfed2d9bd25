/* Probe sites for bench/uprobe_site_cost.sh: each function's first instruction is where a
 * uprobe goes, and the loop times calls to one of them.
 *   at_nop   a 1-byte nop: what <sys/sdt.h> puts at a USDT probe (PostgreSQL's, MariaDB's);
 *            x86 uprobes emulate it, so a hit is one breakpoint trap
 *   at_nop5  a 5-byte nop: kernels with uprobe optimisation can turn its breakpoint into a call
 *            into a trampoline and a system call
 *   at_imul  an instruction that is not emulated: a hit also single-steps a copy of it
 * Usage: probe_sites nop|nop5|imul CALLS   prints nanoseconds per call. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

long sink;

__attribute__((noinline)) void at_nop(long i) { __asm__ volatile("nop" ::"r"(i)); }
__attribute__((noinline)) void at_nop5(long i) {
  __asm__ volatile(".byte 0x0f, 0x1f, 0x44, 0x00, 0x00" ::"r"(i));
}
__attribute__((noinline)) long at_imul(long i) {
  long r;
  __asm__ volatile("imul %1, %0" : "=r"(r) : "r"(i));
  return r;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s nop|nop5|imul CALLS\n", argv[0]);
    return 2;
  }
  long n = atol(argv[2]);
  if (n <= 0) {
    fprintf(stderr, "CALLS must be a positive number\n");
    return 2;
  }
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  if (!strcmp(argv[1], "nop"))
    for (long i = 0; i < n; i++) at_nop(i);
  else if (!strcmp(argv[1], "nop5"))
    for (long i = 0; i < n; i++) at_nop5(i);
  else if (!strcmp(argv[1], "imul"))
    for (long i = 0; i < n; i++) sink += at_imul(i);
  else {
    fprintf(stderr, "site must be nop, nop5 or imul\n");
    return 2;
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  printf("%.1f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
  return 0;
}
