/* MPIOPT_TLS_FAST: the TLS model of thread-local variables read on a hot path.
 *
 * A shared library's __thread variables use the general-dynamic model by default: every access
 * calls __tls_get_addr. initial-exec reads them at a fixed offset from the thread pointer (one
 * move), which the drop-in's per-call paths need (scratch's pool on every small reduce, the
 * profiler's nesting depth on every wrapped call). The price: each copy of the library loaded
 * takes a slice of the process's static TLS block, which glibc sizes when the program starts.
 * A library preloaded once is fine. SimGrid SMPI loads one copy of libmpiopt per simulated rank
 * (smpi/privatize-libs), and past about 64 copies dlopen fails with "cannot allocate memory in
 * static TLS block". So the build option MPIOPT_TLS_INITIAL_EXEC (CMakeLists.txt) is ON for the
 * native libraries and OFF for the SMPI build, or any build that is dlopen'ed many times; the
 * code is the same, only this macro changes (docs/simulation.md). */
#ifndef MPIOPT_TLS_MODEL_H
#define MPIOPT_TLS_MODEL_H

#ifdef MPIOPT_TLS_INITIAL_EXEC
#define MPIOPT_TLS_FAST __attribute__((tls_model("initial-exec")))
#else
#define MPIOPT_TLS_FAST
#endif

#endif
