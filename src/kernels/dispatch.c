/* Run-time choice of the kernel target, kept in one place apart from the loops.
 *
 * Each target's loops are compiled separately (kernels_<isa>.c) rather than with GCC's
 * target_clones attribute: target_clones picks a clone inside an ifunc resolver that cannot be
 * overridden, and MPIOPT_ISA must be able to force any target (tests run every target's code on
 * one machine). The code per target is what target_clones would generate; the choice is the
 * same cpu-feature test, made once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernels.h"

extern const mpiopt_kernel_table mpiopt_kernels_baseline;
#if defined(__x86_64__)
extern const mpiopt_kernel_table mpiopt_kernels_avx2;
extern const mpiopt_kernel_table mpiopt_kernels_avx512;
#endif

static const char *const isa_names[MK_NISA] = { "baseline", "avx2", "avx512" };

const char *mpiopt_isa_name(mpiopt_isa isa)
{
    return (unsigned)isa < MK_NISA ? isa_names[isa] : "?";
}

const mpiopt_kernel_table *mpiopt_kernels_for(mpiopt_isa isa)
{
    switch (isa) {
    case MK_ISA_BASELINE: return &mpiopt_kernels_baseline;
#if defined(__x86_64__)
    case MK_ISA_AVX2: return &mpiopt_kernels_avx2;
    case MK_ISA_AVX512: return &mpiopt_kernels_avx512;
#endif
    default: return NULL;
    }
}

int mpiopt_isa_supported(mpiopt_isa isa)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    switch (isa) {
    case MK_ISA_BASELINE: return 1;
    /* the -march levels the files are built for: x86-64-v3 and x86-64-v4 */
    case MK_ISA_AVX2:
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
               __builtin_cpu_supports("bmi2");
    case MK_ISA_AVX512:
        return mpiopt_isa_supported(MK_ISA_AVX2) && __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512cd");
    default: return 0;
    }
#else
    return isa == MK_ISA_BASELINE;
#endif
}

static mpiopt_isa best_isa(void)
{
    for (int isa = MK_NISA - 1; isa > MK_ISA_BASELINE; isa--)
        if (mpiopt_kernels_for(isa) && mpiopt_isa_supported(isa))
            return isa;
    return MK_ISA_BASELINE;
}

static mpiopt_isa chosen_isa(void)
{
    const char *want = getenv("MPIOPT_ISA");
    if (!want || !*want || !strcmp(want, "auto"))
        return best_isa();
    for (int isa = 0; isa < MK_NISA; isa++) {
        if (strcmp(want, isa_names[isa]) != 0)
            continue;
        if (mpiopt_kernels_for(isa) && mpiopt_isa_supported(isa))
            return isa;
        fprintf(stderr, "mpiopt: MPIOPT_ISA=%s is not supported by this CPU or build; using %s\n",
                want, isa_names[best_isa()]);
        return best_isa();
    }
    fprintf(stderr, "mpiopt: MPIOPT_ISA=%s unknown (baseline|avx2|avx512|auto); using %s\n",
            want, isa_names[best_isa()]);
    return best_isa();
}

const mpiopt_kernel_table *mpiopt_kernels(void)
{
    /* Races here are benign: every thread computes the same pointer. */
    static const mpiopt_kernel_table *table;
    if (!table)
        table = mpiopt_kernels_for(chosen_isa());
    return table;
}

size_t mpiopt_ktype_size(mpiopt_ktype t)
{
    static const size_t sizes[MK_NTYPES] = {
        [MK_I8] = 1, [MK_U8] = 1, [MK_I16] = 2, [MK_U16] = 2, [MK_I32] = 4, [MK_U32] = 4,
        [MK_I64] = 8, [MK_U64] = 8, [MK_F32] = sizeof(float), [MK_F64] = sizeof(double),
        [MK_LDBL] = sizeof(long double), [MK_C32] = 2 * sizeof(float),
        [MK_C64] = 2 * sizeof(double), [MK_CLDBL] = 2 * sizeof(long double),
        [MK_F128] = 16, [MK_C128] = 32,
        [MK_FLOAT_INT] = sizeof(struct { float v; int i; }),
        [MK_DOUBLE_INT] = sizeof(struct { double v; int i; }),
        [MK_LONG_INT] = sizeof(struct { long v; int i; }),
        [MK_2INT] = sizeof(struct { int v; int i; }),
        [MK_SHORT_INT] = sizeof(struct { short v; int i; }),
        [MK_LDBL_INT] = sizeof(struct { long double v; int i; }),
        [MK_2FLOAT] = 2 * sizeof(float), [MK_2DOUBLE] = 2 * sizeof(double),
    };
    return (unsigned)t < MK_NTYPES ? sizes[t] : 0;
}
