/* The reduction loops, written for GCC's auto-vectorizer (after D. Love, "Auto-vectorized MPI
 * reduction operations", 2021): plain loops over `restrict` pointers, logic with bitwise & | ^ on
 * 0/1 values instead of && || (short-circuit branches stop vectorization), integer arithmetic
 * in unsigned types so wrap-around is defined and signed/unsigned share one function.
 *
 * This file is included once per target by kernels_<isa>.c, each compiled with its own -march
 * (see CMakeLists.txt): the same source becomes baseline SSE2, AVX2 and AVX-512 code, and
 * KERNEL_TABLE names the table that target exports. Floating point is compiled with
 * -ffp-contract=off so that no target fuses a*b+c: every target, and so every rank of a
 * heterogeneous job, computes bitwise the same result. */
#include <stdint.h>
#include <stddef.h>
#include "kernels.h"

#ifndef KERNEL_TABLE
#error "define KERNEL_TABLE and KERNEL_ISA_NAME before including kernels_impl.h"
#endif

/* One op on one element type, in both forms. EXPR combines `a` (from in / in1) and `b` (from
 * inout / in2); the result goes to inout / out. */
#define BINARY_KERNEL(NAME, T, EXPR)                                                            \
    static void NAME##_2(const void *restrict in_, void *restrict io_, size_t n)               \
    {                                                                                          \
        const T *restrict in = in_;                                                            \
        T *restrict io = io_;                                                                  \
        for (size_t i = 0; i < n; i++) {                                                       \
            T a = in[i], b = io[i];                                                            \
            io[i] = (EXPR);                                                                    \
        }                                                                                      \
    }                                                                                          \
    static void NAME##_3(const void *restrict in1_, const void *restrict in2_,                 \
                         void *restrict out_, size_t n)                                        \
    {                                                                                          \
        const T *restrict in1 = in1_, *restrict in2 = in2_;                                    \
        T *restrict out = out_;                                                                \
        for (size_t i = 0; i < n; i++) {                                                       \
            T a = in1[i], b = in2[i];                                                          \
            out[i] = (EXPR);                                                                   \
        }                                                                                      \
    }

/* ---- arithmetic: unsigned for integers, so that 100+100 in 8 bits wraps to -56 (as C's
 * conversion to int8_t gives) rather than saturating. */
#define ARITH_KERNELS(S, T)                        \
    BINARY_KERNEL(sum_##S, T, (T)(a + b))          \
    BINARY_KERNEL(prod_##S, T, (T)(a * b))
ARITH_KERNELS(u8, uint8_t)
ARITH_KERNELS(u16, uint16_t)
ARITH_KERNELS(u32, uint32_t)
ARITH_KERNELS(u64, uint64_t)
ARITH_KERNELS(f32, float)
ARITH_KERNELS(f64, double)
ARITH_KERNELS(ldbl, long double)
#if defined(__SIZEOF_FLOAT128__)
/* GCC gives __float128 16-byte alignment and loads it with aligned moves: elements at any byte
 * offset (a message buffer) need the type with that promise taken away. */
typedef __float128 f128_any_align __attribute__((aligned(1)));
ARITH_KERNELS(f128, f128_any_align)
#endif

/* ---- MAX / MIN. Integers: plain compare. Floating: a NaN in either operand gives NaN (as IEEE
 * 754-2019 maximum/minimum); equal operands, -0.0 against +0.0 included, give b (the inout /
 * in2 operand). `a > b ? a : b` alone is what one vmaxpd computes (b if either is NaN); the
 * second select makes a NaN in `a` win too. */
#define MAXMIN_INT_KERNELS(S, T)                        \
    BINARY_KERNEL(max_##S, T, (a > b ? a : b))          \
    BINARY_KERNEL(min_##S, T, (a < b ? a : b))
MAXMIN_INT_KERNELS(i8, int8_t)
MAXMIN_INT_KERNELS(u8, uint8_t)
MAXMIN_INT_KERNELS(i16, int16_t)
MAXMIN_INT_KERNELS(u16, uint16_t)
MAXMIN_INT_KERNELS(i32, int32_t)
MAXMIN_INT_KERNELS(u32, uint32_t)
MAXMIN_INT_KERNELS(i64, int64_t)
MAXMIN_INT_KERNELS(u64, uint64_t)
/* The larger/smaller first, then the NaN test as a second statement of a GNU statement
 * expression, with __builtin_isnan: GCC then emits one ordered-compare into a mask and a masked
 * vmaxpd (2 instructions a vector, ~0.9x of a bare vmaxpd). As one expression, with a != a, or
 * through an inline function, it emits compare + max + blend or three compares and a mask merge,
 * 15-40% slower. */
#define MAXMIN_FLOAT_KERNELS(S, T)                                                        \
    BINARY_KERNEL(max_##S, T, ({ T m_ = a > b ? a : b; __builtin_isnan(a) ? a : m_; }))   \
    BINARY_KERNEL(min_##S, T, ({ T m_ = a < b ? a : b; __builtin_isnan(a) ? a : m_; }))
MAXMIN_FLOAT_KERNELS(f32, float)
MAXMIN_FLOAT_KERNELS(f64, double)
MAXMIN_FLOAT_KERNELS(ldbl, long double)
#if defined(__SIZEOF_FLOAT128__)
MAXMIN_FLOAT_KERNELS(f128, f128_any_align)
#endif

/* ---- logical: any non-zero value is true; the result is 0 or 1. Width is all that matters,
 * so C bool, Fortran LOGICAL and every integer of one size share a function. */
#define LOGICAL_KERNELS(S, T)                                        \
    BINARY_KERNEL(land_##S, T, (T)((a != 0) & (b != 0)))              \
    BINARY_KERNEL(lor_##S, T, (T)((a != 0) | (b != 0)))               \
    BINARY_KERNEL(lxor_##S, T, (T)((a != 0) ^ (b != 0)))
LOGICAL_KERNELS(u8, uint8_t)
LOGICAL_KERNELS(u16, uint16_t)
LOGICAL_KERNELS(u32, uint32_t)
LOGICAL_KERNELS(u64, uint64_t)

#define BITWISE_KERNELS(S, T)                    \
    BINARY_KERNEL(band_##S, T, (T)(a & b))       \
    BINARY_KERNEL(bor_##S, T, (T)(a | b))        \
    BINARY_KERNEL(bxor_##S, T, (T)(a ^ b))
BITWISE_KERNELS(u8, uint8_t)
BITWISE_KERNELS(u16, uint16_t)
BITWISE_KERNELS(u32, uint32_t)
BITWISE_KERNELS(u64, uint64_t)

/* ---- complex: SUM componentwise; PROD by the textbook formula (no C99 Annex G recovery of
 * infinities from NaN, which would call __muldc3 per element and forbid vectorization; MPI
 * implementations use the same formula). */
/* GCC 12's complex-multiply vectorizer pattern emits vfmaddsub even under -ffp-contract=off;
 * an association barrier on one product of each pair keeps it from matching, so every target
 * rounds each product separately, as the baseline does. */
#if defined(__has_builtin)
#if __has_builtin(__builtin_assoc_barrier)
#define NO_FUSE(x) __builtin_assoc_barrier(x)
#endif
#endif
#ifndef NO_FUSE
#define NO_FUSE(x) (x)
#endif
#define COMPLEX_KERNELS(S, R)                                                                  \
    typedef struct { R re, im; } cplx_##S;                                                     \
    static inline cplx_##S csum_##S(cplx_##S a, cplx_##S b)                                    \
    {                                                                                          \
        return (cplx_##S){ a.re + b.re, a.im + b.im };                                         \
    }                                                                                          \
    static inline cplx_##S cprod_##S(cplx_##S a, cplx_##S b)                                   \
    {                                                                                          \
        R rr = a.re * b.re, ii = a.im * b.im, ri = a.re * b.im, ir = a.im * b.re;              \
        return (cplx_##S){ NO_FUSE(rr) - ii, ri + NO_FUSE(ir) };                               \
    }                                                                                          \
    BINARY_KERNEL(sum_##S, cplx_##S, csum_##S(a, b))                                           \
    BINARY_KERNEL(prod_##S, cplx_##S, cprod_##S(a, b))
COMPLEX_KERNELS(c32, float)
COMPLEX_KERNELS(c64, double)
COMPLEX_KERNELS(cldbl, long double)
#if defined(__SIZEOF_FLOAT128__)
COMPLEX_KERNELS(c128, f128_any_align)
#endif

/* ---- MINLOC / MAXLOC on (value, index) pairs. Ties take the lower index. The choice is
 * computed once as a 0/1 mask from bitwise logic and applied to both members, which the
 * vectorizer turns into compares and blends over interleaved loads. */
#define LOC_KERNELS(S, V, I)                                                                   \
    typedef struct { V v; I i; } pair_##S;                                                     \
    static inline pair_##S minloc_pick_##S(pair_##S a, pair_##S b)                             \
    {                                                                                          \
        int take_a = (a.v < b.v) | ((a.v == b.v) & (a.i < b.i));                               \
        return (pair_##S){ take_a ? a.v : b.v, take_a ? a.i : b.i };                           \
    }                                                                                          \
    static inline pair_##S maxloc_pick_##S(pair_##S a, pair_##S b)                             \
    {                                                                                          \
        int take_a = (a.v > b.v) | ((a.v == b.v) & (a.i < b.i));                               \
        return (pair_##S){ take_a ? a.v : b.v, take_a ? a.i : b.i };                           \
    }                                                                                          \
    BINARY_KERNEL(minloc_##S, pair_##S, minloc_pick_##S(a, b))                                 \
    BINARY_KERNEL(maxloc_##S, pair_##S, maxloc_pick_##S(a, b))
/* Pairs with padding ({double, int} is 16 bytes, {short, int} 8) defeat the vectorizer: lanes of
 * mixed widths. They are processed instead as two equal-width words, the value and a word that
 * holds the index in its low bytes (little-endian) and the padding above; the index is compared
 * as the low part, and the whole word, padding included, is copied with the choice. */
#define LOC_KERNELS_PADDED(S, V, W, VW, IDX)                                                  \
    typedef struct { VW vw; W w; } pair_##S;                                                   \
    static inline V pv_##S(pair_##S p) { return (V)p.vw; }                                     \
    static inline pair_##S minloc_pick_##S(pair_##S a, pair_##S b)                             \
    {                                                                                          \
        int take_a = (pv_##S(a) < pv_##S(b)) |                                                 \
                     ((pv_##S(a) == pv_##S(b)) & ((IDX)a.w < (IDX)b.w));                       \
        return (pair_##S){ take_a ? a.vw : b.vw, take_a ? a.w : b.w };                         \
    }                                                                                          \
    static inline pair_##S maxloc_pick_##S(pair_##S a, pair_##S b)                             \
    {                                                                                          \
        int take_a = (pv_##S(a) > pv_##S(b)) |                                                 \
                     ((pv_##S(a) == pv_##S(b)) & ((IDX)a.w < (IDX)b.w));                       \
        return (pair_##S){ take_a ? a.vw : b.vw, take_a ? a.w : b.w };                         \
    }                                                                                          \
    BINARY_KERNEL(minloc_##S, pair_##S, minloc_pick_##S(a, b))                                 \
    BINARY_KERNEL(maxloc_##S, pair_##S, maxloc_pick_##S(a, b))

LOC_KERNELS(float_int, float, int)
LOC_KERNELS(2int, int, int)
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && __SIZEOF_LONG__ == 8
LOC_KERNELS_PADDED(double_int, double, int64_t, double, int32_t)
LOC_KERNELS_PADDED(long_int, long, int64_t, long, int32_t)
/* {short, int}: the short sits in the low half of a 32-bit word */
LOC_KERNELS_PADDED(short_int, int16_t, int32_t, int32_t, int32_t)
#else
LOC_KERNELS(double_int, double, int)
LOC_KERNELS(long_int, long, int)
LOC_KERNELS(short_int, short, int)
#endif
/* x87 long double has no vector unit: scalar on every target */
LOC_KERNELS(ldbl_int, long double, int)
LOC_KERNELS(2float, float, float)
LOC_KERNELS(2double, double, double)

/* ---- the table: which function serves each (op, type). */
#define K(OP, TYPE, FN) [OP][TYPE] = FN
#define ENTRIES(F)                                                                             \
    K(MK_SUM, MK_I8, sum_u8##F), K(MK_SUM, MK_U8, sum_u8##F),                                  \
    K(MK_SUM, MK_I16, sum_u16##F), K(MK_SUM, MK_U16, sum_u16##F),                              \
    K(MK_SUM, MK_I32, sum_u32##F), K(MK_SUM, MK_U32, sum_u32##F),                              \
    K(MK_SUM, MK_I64, sum_u64##F), K(MK_SUM, MK_U64, sum_u64##F),                              \
    K(MK_SUM, MK_F32, sum_f32##F), K(MK_SUM, MK_F64, sum_f64##F),                              \
    K(MK_SUM, MK_LDBL, sum_ldbl##F), K(MK_SUM, MK_C32, sum_c32##F),                            \
    K(MK_SUM, MK_C64, sum_c64##F), K(MK_SUM, MK_CLDBL, sum_cldbl##F),                          \
    K(MK_PROD, MK_I8, prod_u8##F), K(MK_PROD, MK_U8, prod_u8##F),                              \
    K(MK_PROD, MK_I16, prod_u16##F), K(MK_PROD, MK_U16, prod_u16##F),                          \
    K(MK_PROD, MK_I32, prod_u32##F), K(MK_PROD, MK_U32, prod_u32##F),                          \
    K(MK_PROD, MK_I64, prod_u64##F), K(MK_PROD, MK_U64, prod_u64##F),                          \
    K(MK_PROD, MK_F32, prod_f32##F), K(MK_PROD, MK_F64, prod_f64##F),                          \
    K(MK_PROD, MK_LDBL, prod_ldbl##F), K(MK_PROD, MK_C32, prod_c32##F),                        \
    K(MK_PROD, MK_C64, prod_c64##F), K(MK_PROD, MK_CLDBL, prod_cldbl##F),                      \
    K(MK_MAX, MK_I8, max_i8##F), K(MK_MAX, MK_U8, max_u8##F),                                  \
    K(MK_MAX, MK_I16, max_i16##F), K(MK_MAX, MK_U16, max_u16##F),                              \
    K(MK_MAX, MK_I32, max_i32##F), K(MK_MAX, MK_U32, max_u32##F),                              \
    K(MK_MAX, MK_I64, max_i64##F), K(MK_MAX, MK_U64, max_u64##F),                              \
    K(MK_MAX, MK_F32, max_f32##F), K(MK_MAX, MK_F64, max_f64##F),                              \
    K(MK_MAX, MK_LDBL, max_ldbl##F),                                                           \
    K(MK_MIN, MK_I8, min_i8##F), K(MK_MIN, MK_U8, min_u8##F),                                  \
    K(MK_MIN, MK_I16, min_i16##F), K(MK_MIN, MK_U16, min_u16##F),                              \
    K(MK_MIN, MK_I32, min_i32##F), K(MK_MIN, MK_U32, min_u32##F),                              \
    K(MK_MIN, MK_I64, min_i64##F), K(MK_MIN, MK_U64, min_u64##F),                              \
    K(MK_MIN, MK_F32, min_f32##F), K(MK_MIN, MK_F64, min_f64##F),                              \
    K(MK_MIN, MK_LDBL, min_ldbl##F),                                                           \
    LOGIC_ROW(MK_LAND, land, F), LOGIC_ROW(MK_LOR, lor, F), LOGIC_ROW(MK_LXOR, lxor, F),       \
    LOGIC_ROW(MK_BAND, band, F), LOGIC_ROW(MK_BOR, bor, F), LOGIC_ROW(MK_BXOR, bxor, F),       \
    LOC_ROW(MK_MINLOC, minloc, F), LOC_ROW(MK_MAXLOC, maxloc, F) QUAD_ENTRIES(F)
/* binary128: software arithmetic, one element at a time on every target */
#if defined(__SIZEOF_FLOAT128__)
#define QUAD_ENTRIES(F)                                                                        \
    , K(MK_SUM, MK_F128, sum_f128##F), K(MK_PROD, MK_F128, prod_f128##F),                     \
    K(MK_MAX, MK_F128, max_f128##F), K(MK_MIN, MK_F128, min_f128##F),                          \
    K(MK_SUM, MK_C128, sum_c128##F), K(MK_PROD, MK_C128, prod_c128##F)
#else
#define QUAD_ENTRIES(F)
#endif
/* logical and bitwise ops: defined on integers only, by width */
#define LOGIC_ROW(OP, N, F)                                                                    \
    K(OP, MK_I8, N##_u8##F), K(OP, MK_U8, N##_u8##F), K(OP, MK_I16, N##_u16##F),               \
    K(OP, MK_U16, N##_u16##F), K(OP, MK_I32, N##_u32##F), K(OP, MK_U32, N##_u32##F),           \
    K(OP, MK_I64, N##_u64##F), K(OP, MK_U64, N##_u64##F)
#define LOC_ROW(OP, N, F)                                                                      \
    K(OP, MK_FLOAT_INT, N##_float_int##F), K(OP, MK_DOUBLE_INT, N##_double_int##F),            \
    K(OP, MK_LONG_INT, N##_long_int##F), K(OP, MK_2INT, N##_2int##F),                          \
    K(OP, MK_SHORT_INT, N##_short_int##F), K(OP, MK_LDBL_INT, N##_ldbl_int##F),                \
    K(OP, MK_2FLOAT, N##_2float##F), K(OP, MK_2DOUBLE, N##_2double##F)

const mpiopt_kernel_table KERNEL_TABLE = {
    .isa = KERNEL_ISA_NAME,
    .k2 = { ENTRIES(_2) },
    .k3 = { ENTRIES(_3) },
};
