/* Reduction kernels: element types and ops by representation, with no knowledge of MPI.
 *
 * The MPI layer (src/op_kernel.c, used by src/coll/entry/reduce_local.c and the collectives) maps an MPI
 * datatype and op to a (mpiopt_kop, mpiopt_ktype) pair; this layer only knows how to combine arrays of such elements.
 * Types with one representation share one function (a signed and an unsigned 32-bit SUM are the
 * same wrap-around addition), so the tables below hold many pointers to few functions. */
#ifndef MPIOPT_KERNELS_H
#define MPIOPT_KERNELS_H

#include <stddef.h>

typedef enum {
    MK_I8, MK_U8, MK_I16, MK_U16, MK_I32, MK_U32, MK_I64, MK_U64,
    MK_F32, MK_F64, MK_LDBL,                 /* float, double, long double (x87 80-bit on x86-64) */
    MK_C32, MK_C64, MK_CLDBL,                /* complex float / double / long double */
    /* IEEE binary128 (GCC's __float128, in software), real and complex: Fortran REAL(16) and
     * COMPLEX(16) as gfortran and ifort lay them out. Absent from the tables where the compiler
     * has no __float128. */
    MK_F128, MK_C128,
    /* value-index pairs for MINLOC / MAXLOC, laid out as the C structs MPI describes */
    MK_FLOAT_INT, MK_DOUBLE_INT, MK_LONG_INT, MK_2INT, MK_SHORT_INT, MK_LDBL_INT,
    MK_2FLOAT, MK_2DOUBLE,
    MK_NTYPES
} mpiopt_ktype;

typedef enum {
    MK_SUM, MK_PROD, MK_MAX, MK_MIN, MK_LAND, MK_LOR, MK_LXOR, MK_BAND, MK_BOR, MK_BXOR,
    MK_MINLOC, MK_MAXLOC,
    MK_NOPS
} mpiopt_kop;

/* 2-buffer form: inout[i] = in[i] op inout[i] */
typedef void (*mpiopt_kernel2_fn)(const void *restrict in, void *restrict inout, size_t n);
/* 3-buffer form: out[i] = in1[i] op in2[i] */
typedef void (*mpiopt_kernel3_fn)(const void *restrict in1, const void *restrict in2,
                                  void *restrict out, size_t n);

typedef struct {
    const char *isa;
    mpiopt_kernel2_fn k2[MK_NOPS][MK_NTYPES];   /* NULL where the op is not defined for the type */
    mpiopt_kernel3_fn k3[MK_NOPS][MK_NTYPES];
} mpiopt_kernel_table;

typedef enum { MK_ISA_BASELINE, MK_ISA_AVX2, MK_ISA_AVX512, MK_NISA } mpiopt_isa;

/* The table for one target; NULL if this build has no code for it (non-x86 builds have only the
 * baseline). The CPU is not checked here: see mpiopt_isa_supported(). */
const mpiopt_kernel_table *mpiopt_kernels_for(mpiopt_isa isa);
int mpiopt_isa_supported(mpiopt_isa isa);
/* The table chosen once per process: MPIOPT_ISA=baseline|avx2|avx512|auto, default the best the
 * CPU supports. An ISA the CPU lacks is refused (falls back to auto) with a warning on stderr. */
const mpiopt_kernel_table *mpiopt_kernels(void);
const char *mpiopt_isa_name(mpiopt_isa isa);
size_t mpiopt_ktype_size(mpiopt_ktype t);

/* Runs a kernel over n elements, split across threads when the buffer is large (threads.c).
 * Every thread runs the same kernel on a disjoint slice, so results are bitwise those of one
 * thread. */
void mpiopt_run2(mpiopt_kernel2_fn k, const void *in, void *inout, size_t n, size_t elem_size);
void mpiopt_run3(mpiopt_kernel3_fn k, const void *in1, const void *in2, void *out, size_t n,
                 size_t elem_size);
/* The same with an explicit thread count (benchmarks compare one thread with several). */
void mpiopt_run2_threads(mpiopt_kernel2_fn k, const void *in, void *inout, size_t n,
                         size_t elem_size, int threads);
void mpiopt_run3_threads(mpiopt_kernel3_fn k, const void *in1, const void *in2, void *out,
                         size_t n, size_t elem_size, int threads);
/* MPIOPT_THREADS, or the CPUs in this process's affinity mask. */
int mpiopt_max_threads(void);
/* A non-negative integer from the environment; fallback when unset, empty or not one. */
long mpiopt_env_long(const char *name, long fallback);
/* The smallest buffer worth splitting across threads (MPIOPT_THREAD_MIN_BYTES, default 256 KiB). */
size_t mpiopt_thread_min_bytes(void);
/* Threads a buffer of `bytes` would use (1 below MPIOPT_THREAD_MIN_BYTES). */
int mpiopt_threads_for(size_t bytes);

#endif
