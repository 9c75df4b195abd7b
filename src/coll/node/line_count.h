/* The counting build of the shared-memory small-message paths (CMake -DMPIOPT_COUNT_LINES=ON; off
 * by default, and then every macro here is nothing: the normal build has no cost at all).
 *
 * Why count lines: on a node, a cache line written by one core and then read by another moves
 * between the cores' caches, about ten times the cost of a line the reader holds itself (some
 * 200 ns against 20 on a 2-socket server); a line that crosses sockets also costs a write of the
 * directory that tracks it. The time of a small allreduce on many ranks is mostly those moves,
 * and this machine (2 cores) cannot time them at 64 ranks, so the counting build counts them at
 * the source, where the code reads and writes the window (not timed, not sampled):
 *
 *   - lines read: distinct 64-byte lines of another rank's slot that this rank reads in a call
 *     (flags waited for or looked at, payload and data lines of other ranks' inputs, partials
 *     and results); a line read twice in one call counts once, a line of the rank's own slot or
 *     of its own buffers never;
 *   - flag lines written: the lines this rank publishes a call's number on (the ring's header,
 *     a result's flag, a numbered line at p = 2, the tree's up and down lines);
 *   - NUMA and socket lines: of the lines read, those whose writer's core is on another NUMA
 *     node, another package, of the node that HWLOC_SYNTHETIC describes, rank r on core r (mod
 *     the cores): topology.c's rule for a described node. Without HWLOC_SYNTHETIC, one NUMA node
 *     and one package: no line crosses.
 *
 * Counted per call of MPI_Allreduce and MPI_Reduce that goes through the window (the flat path
 * and the tree; not the stages or single-copy, which larger calls take). Each rank keeps its
 * totals, its most lines read in one call and its first call's counts (the window's first call
 * looks at the ring once more), and at exit appends one JSON line to MPIOPT_COUNT_LINES_FILE (or
 * prints it on stderr, prefixed "mpiopt line counts: "). bench/line_counts.py builds the
 * counting build, runs it and makes the table (docs/shared_memory_lines.md). One thread a rank:
 * the counts are a process's, not a thread's. Internal to src/coll. */
#ifndef MPIOPT_COLL_NODE_LINE_COUNT_H
#define MPIOPT_COLL_NODE_LINE_COUNT_H

#include <stddef.h>

#ifdef MPIOPT_COUNT_LINES
enum { MPIOPT_COUNT_ALLREDUCE, MPIOPT_COUNT_REDUCE, MPIOPT_COUNT_KINDS };
/* a call of `kind` starts / ends (counted only where it registered a window in between) */
void mpiopt_count_begin(int kind);
void mpiopt_count_end(void);
/* the window the call goes through: the p slots of `slot_bytes` each (all[r]: rank r's) */
void mpiopt_count_window(void *const *all, size_t slot_bytes, int size, int rank);
/* this rank reads [addr, addr + bytes): counted where that is another rank's slot */
void mpiopt_count_read(const void *addr, size_t bytes);
/* this rank publishes a flag line */
void mpiopt_count_flag_write(void);
#define MPIOPT_COUNT_BEGIN(kind) mpiopt_count_begin(MPIOPT_COUNT_##kind)
#define MPIOPT_COUNT_END() mpiopt_count_end()
#define MPIOPT_COUNT_WINDOW(all, slot_bytes, size, rank) \
    mpiopt_count_window((void *const *)(all), (slot_bytes), (size), (rank))
#define MPIOPT_COUNT_READ(addr, bytes) mpiopt_count_read((addr), (bytes))
#define MPIOPT_COUNT_FLAG_WRITE() mpiopt_count_flag_write()
#else
#define MPIOPT_COUNT_BEGIN(kind) ((void)0)
#define MPIOPT_COUNT_END() ((void)0)
#define MPIOPT_COUNT_WINDOW(all, slot_bytes, size, rank) ((void)0)
#define MPIOPT_COUNT_READ(addr, bytes) ((void)0)
#define MPIOPT_COUNT_FLAG_WRITE() ((void)0)
#endif

#endif
