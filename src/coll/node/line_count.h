/* The counting build of the shared-memory paths and of the algorithms' messages (CMake
 * -DMPIOPT_COUNT_LINES=ON; off by default, and then every macro here is nothing: the normal
 * build has no cost at all).
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
 * Large messages (issue 68: the stages against the point-to-point algorithms):
 *
 *   - stage lines: 64-byte lines of other ranks' stages (staged.c, the second shared window,
 *     MPIOPT_COUNT_STAGES) that this rank reads, counted at every read (MPIOPT_COUNT_READ_EACH):
 *     a call reuses its few stages chunk after chunk, and each reuse has the owner write the
 *     lines again, so each read is a new transfer; a once-per-call dedupe would count a 1 MiB
 *     allreduce as its four stages' worth. NUMA / socket stage lines as above;
 *   - the stages' flag lines (waited for with mpiopt_shm_wait, which calls MPIOPT_COUNT_READ)
 *     go to the lines read (and NUMA / socket lines) like the slots' flags, but also counted at
 *     every read, not once a call: a stage's flag is posted again for every chunk it carries, so
 *     a wait on it in the next chunk reads a new value from the other core. (The slots' lines
 *     stay once a call, so the small table is unchanged.) The posts (MPIOPT_COUNT_FLAG_WRITE)
 *     are the flag lines written;
 *   - message bytes: the bytes of point-to-point messages this rank receives in the call
 *     (src/coll/engine/p2p.c, MPIOPT_COUNT_MESSAGE, where a blocking call posts the receive;
 *     a nonblocking call's schedule is not counted), and of them those from a rank whose core
 *     (peer % cores) is on another NUMA node / package. What a message costs the memory system
 *     depends on the MPI's transport (a copy through its own shared buffers, or one through
 *     the kernel); the bytes are what any of them must move between the cores.
 *
 * Counted per call of MPI_Allreduce and MPI_Reduce that runs an mpiopt algorithm blocking
 * (src/coll/entry's mpiopt_allreduce_run / mpiopt_reduce_run begin and end it, so a forced ring
 * or Rabenseifner counts too), where the call registered a window or received a message. Each
 * rank keeps its totals, its most lines read in one call and its first call's counts (the
 * window's first call looks at the ring once more), and at exit appends one JSON line to
 * MPIOPT_COUNT_LINES_FILE (or prints it on stderr, prefixed "mpiopt line counts: ").
 * bench/line_counts.py builds the counting build, runs it and makes the tables
 * (docs/shared_memory_lines.md). One thread a rank: the counts are a process's, not a thread's.
 * Internal to src/coll. */
#ifndef MPIOPT_COLL_NODE_LINE_COUNT_H
#define MPIOPT_COLL_NODE_LINE_COUNT_H

#include <stddef.h>
#include "coll/engine/message_count.h"  /* MPIOPT_COUNT_MESSAGE (p2p.c's layer may not include
                                         * this header) */

#ifdef MPIOPT_COUNT_LINES
enum { MPIOPT_COUNT_ALLREDUCE, MPIOPT_COUNT_REDUCE, MPIOPT_COUNT_KINDS };
/* a call of `kind` starts / ends (counted only where it registered a window or received a
 * message in between); nested begins (an algorithm run inside another's call) join the outer */
void mpiopt_count_begin(int kind);
void mpiopt_count_end(void);
/* this rank's place in the call's communicator: how messages are classified where the call
 * registers no window (the entry points, before the algorithm runs) */
void mpiopt_count_comm(int rank, int size);
/* the window the call goes through: the p slots of `slot_bytes` each (all[r]: rank r's) */
void mpiopt_count_window(void *const *all, size_t slot_bytes, int size, int rank);
/* the stage window the call goes through (staged.c): all[r] rank r's stages, bytes_per_rank
 * of them (w->stages * sizeof(stage)) */
void mpiopt_count_stages(void *const *all, size_t bytes_per_rank, int size, int rank);
/* this rank reads [addr, addr + bytes): counted where that is another rank's slot (each line
 * once a call) or stage (flags: every read) */
void mpiopt_count_read(const void *addr, size_t bytes);
/* this rank reads [addr, addr + bytes) of another rank's stage data: every line, every time */
void mpiopt_count_read_each(const void *addr, size_t bytes);
/* the same for stage data that rank `writer` wrote wherever it lies: at p = 2 an allreduce's
 * ranks take turns writing each other's slot of a stage (staged.c's allreduce_pair), so where a
 * line is does not say who wrote it */
void mpiopt_count_read_written_by(const void *addr, size_t bytes, int writer);
/* this rank publishes a flag line */
void mpiopt_count_flag_write(void);
#define MPIOPT_COUNT_BEGIN(kind) mpiopt_count_begin(MPIOPT_COUNT_##kind)
#define MPIOPT_COUNT_END() mpiopt_count_end()
#define MPIOPT_COUNT_WINDOW(all, slot_bytes, size, rank) \
    mpiopt_count_window((void *const *)(all), (slot_bytes), (size), (rank))
#define MPIOPT_COUNT_COMM(rank, size) mpiopt_count_comm((rank), (size))
#define MPIOPT_COUNT_STAGES(all_stages, bytes_per_rank, size, rank) \
    mpiopt_count_stages((void *const *)(all_stages), (bytes_per_rank), (size), (rank))
#define MPIOPT_COUNT_READ(addr, bytes) mpiopt_count_read((addr), (bytes))
#define MPIOPT_COUNT_READ_EACH(addr, bytes) mpiopt_count_read_each((addr), (bytes))
#define MPIOPT_COUNT_READ_WRITTEN_BY(addr, bytes, writer) \
    mpiopt_count_read_written_by((addr), (bytes), (writer))
#define MPIOPT_COUNT_FLAG_WRITE() mpiopt_count_flag_write()
#else
#define MPIOPT_COUNT_BEGIN(kind) ((void)0)
#define MPIOPT_COUNT_END() ((void)0)
#define MPIOPT_COUNT_WINDOW(all, slot_bytes, size, rank) ((void)0)
#define MPIOPT_COUNT_COMM(rank, size) ((void)0)
#define MPIOPT_COUNT_STAGES(all_stages, bytes_per_rank, size, rank) ((void)0)
#define MPIOPT_COUNT_READ(addr, bytes) ((void)0)
#define MPIOPT_COUNT_READ_EACH(addr, bytes) ((void)0)
#define MPIOPT_COUNT_READ_WRITTEN_BY(addr, bytes, writer) ((void)0)
#define MPIOPT_COUNT_FLAG_WRITE() ((void)0)
#endif

#endif
