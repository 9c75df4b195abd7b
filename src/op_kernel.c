/* MPI datatypes and ops → kernel types and ops. The kernels (src/kernels/) know nothing of MPI;
 * this file is where a handle becomes a representation.
 *
 * The MPI standard groups the predefined types into categories and says which ops apply to each
 * (MPI-4.0 §6.9.2); the category is kept per type, and the representation within it is derived
 * from the type's size, so Fortran INTEGER, MPI_AINT, MPI_COUNT, … land on the right width on any
 * platform. */
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include "op_kernel.h"

/* CAT_FORTRAN_INT also holds the multi-language types (MPI_AINT, MPI_OFFSET, MPI_COUNT): the
 * standard allows them the arithmetic and bitwise ops but not the logical ones. */
typedef enum { CAT_SIGNED, CAT_FORTRAN_INT, CAT_UNSIGNED, CAT_FLOAT, CAT_LDBL, CAT_COMPLEX, CAT_CLDBL, CAT_LOGICAL,
               CAT_BYTE, CAT_PAIR, CAT_QUAD, CAT_CQUAD } category;

typedef struct {
    MPI_Datatype dt;
    category cat;
    mpiopt_ktype pair;     /* the pair type, for CAT_PAIR */
    int ktype;             /* resolved at first use; -1 when the representation is unknown */
} type_entry;

/* The commonest types first: the lookup is a linear scan and sits on the hot path of small
 * reductions. */
static type_entry types[] = {
    { MPI_DOUBLE, CAT_FLOAT, 0, 0 },
    { MPI_INT, CAT_SIGNED, 0, 0 },
    { MPI_FLOAT, CAT_FLOAT, 0, 0 },
    { MPI_LONG, CAT_SIGNED, 0, 0 },
    /* MPI_CHAR: the standard allows it in no reduction (it stands for printable characters, and
     * MPI_SIGNED_CHAR / MPI_UNSIGNED_CHAR for small integers), but Open MPI and MPICH both reduce
     * it as the C char it is, with every arithmetic, logical and bitwise op, and the OSU
     * benchmarks use it by default: mpiopt does the same, with the platform's char signedness. */
    { MPI_CHAR, CHAR_MIN < 0 ? CAT_SIGNED : CAT_UNSIGNED, 0, 0 },
    { MPI_DOUBLE_PRECISION, CAT_FLOAT, 0, 0 },
    { MPI_INTEGER, CAT_FORTRAN_INT, 0, 0 },
    { MPI_REAL, CAT_FLOAT, 0, 0 },
    { MPI_UNSIGNED, CAT_UNSIGNED, 0, 0 },
    { MPI_UNSIGNED_LONG, CAT_UNSIGNED, 0, 0 },
    { MPI_LONG_LONG_INT, CAT_SIGNED, 0, 0 },
    { MPI_LONG_LONG, CAT_SIGNED, 0, 0 },
    { MPI_UNSIGNED_LONG_LONG, CAT_UNSIGNED, 0, 0 },
    { MPI_SHORT, CAT_SIGNED, 0, 0 },
    { MPI_UNSIGNED_SHORT, CAT_UNSIGNED, 0, 0 },
    { MPI_SIGNED_CHAR, CAT_SIGNED, 0, 0 },
    { MPI_UNSIGNED_CHAR, CAT_UNSIGNED, 0, 0 },
    { MPI_INT8_T, CAT_SIGNED, 0, 0 },
    { MPI_INT16_T, CAT_SIGNED, 0, 0 },
    { MPI_INT32_T, CAT_SIGNED, 0, 0 },
    { MPI_INT64_T, CAT_SIGNED, 0, 0 },
    { MPI_UINT8_T, CAT_UNSIGNED, 0, 0 },
    { MPI_UINT16_T, CAT_UNSIGNED, 0, 0 },
    { MPI_UINT32_T, CAT_UNSIGNED, 0, 0 },
    { MPI_UINT64_T, CAT_UNSIGNED, 0, 0 },
    { MPI_AINT, CAT_FORTRAN_INT, 0, 0 },
    { MPI_OFFSET, CAT_FORTRAN_INT, 0, 0 },
    { MPI_COUNT, CAT_FORTRAN_INT, 0, 0 },
    { MPI_INTEGER1, CAT_FORTRAN_INT, 0, 0 },
    { MPI_INTEGER2, CAT_FORTRAN_INT, 0, 0 },
    { MPI_INTEGER4, CAT_FORTRAN_INT, 0, 0 },
    { MPI_INTEGER8, CAT_FORTRAN_INT, 0, 0 },
    { MPI_REAL4, CAT_FLOAT, 0, 0 },
    { MPI_REAL8, CAT_FLOAT, 0, 0 },
    { MPI_LONG_DOUBLE, CAT_LDBL, 0, 0 },
    /* Fortran REAL(16) / COMPLEX(16) are IEEE binary128 (gfortran, ifort), not x87 long double:
     * Open MPI 4.1.4 reduces them as long double and MPICH 4.0.2 gets them wrong too. */
    { MPI_REAL16, CAT_QUAD, 0, 0 },
    { MPI_COMPLEX32, CAT_CQUAD, 0, 0 },
    /* Left to the vendor whole (no entry: mpiopt_vendor_takes says so): MPI_WCHAR,
     * MPI_CHARACTER and MPI_PACKED (no reduction is defined on them; the vendors disagree on
     * MPI_CHARACTER's signedness), MPI_INTEGER16, Open MPI's MPI_LOGICAL1..8 and
     * MPI_2COMPLEX / MPI_2DOUBLE_COMPLEX. docs/kernels.md has the table. */
    { MPI_C_FLOAT_COMPLEX, CAT_COMPLEX, 0, 0 },
    { MPI_C_COMPLEX, CAT_COMPLEX, 0, 0 },
    { MPI_C_DOUBLE_COMPLEX, CAT_COMPLEX, 0, 0 },
    { MPI_C_LONG_DOUBLE_COMPLEX, CAT_CLDBL, 0, 0 },
    { MPI_COMPLEX, CAT_COMPLEX, 0, 0 },
    { MPI_DOUBLE_COMPLEX, CAT_COMPLEX, 0, 0 },
    { MPI_COMPLEX8, CAT_COMPLEX, 0, 0 },
    { MPI_COMPLEX16, CAT_COMPLEX, 0, 0 },
#ifdef MPI_CXX_FLOAT_COMPLEX
    { MPI_CXX_FLOAT_COMPLEX, CAT_COMPLEX, 0, 0 },
    { MPI_CXX_DOUBLE_COMPLEX, CAT_COMPLEX, 0, 0 },
    { MPI_CXX_LONG_DOUBLE_COMPLEX, CAT_CLDBL, 0, 0 },
#endif
    { MPI_C_BOOL, CAT_LOGICAL, 0, 0 },
#ifdef MPI_CXX_BOOL
    { MPI_CXX_BOOL, CAT_LOGICAL, 0, 0 },
#endif
    { MPI_LOGICAL, CAT_LOGICAL, 0, 0 },
    { MPI_BYTE, CAT_BYTE, 0, 0 },
    { MPI_DOUBLE_INT, CAT_PAIR, MK_DOUBLE_INT, 0 },
    { MPI_2INT, CAT_PAIR, MK_2INT, 0 },
    { MPI_FLOAT_INT, CAT_PAIR, MK_FLOAT_INT, 0 },
    { MPI_LONG_INT, CAT_PAIR, MK_LONG_INT, 0 },
    { MPI_SHORT_INT, CAT_PAIR, MK_SHORT_INT, 0 },
    { MPI_LONG_DOUBLE_INT, CAT_PAIR, MK_LDBL_INT, 0 },
    { MPI_2REAL, CAT_PAIR, MK_2FLOAT, 0 },
    { MPI_2DOUBLE_PRECISION, CAT_PAIR, MK_2DOUBLE, 0 },
    { MPI_2INTEGER, CAT_PAIR, MK_2INT, 0 },
};
#define NTYPES (sizeof types / sizeof types[0])

static int int_ktype(int size, int is_signed)
{
    switch (size) {
    case 1: return is_signed ? MK_I8 : MK_U8;
    case 2: return is_signed ? MK_I16 : MK_U16;
    case 4: return is_signed ? MK_I32 : MK_U32;
    case 8: return is_signed ? MK_I64 : MK_U64;
    default: return -1;
    }
}

/* The representation of one entry, checked against the kernel's idea of the element: a type
 * whose MPI size or extent differs from the C layout the kernel assumes is left to the vendor. */
static int resolve(const type_entry *e)
{
    int size;
    MPI_Aint lb, extent;
    if (e->dt == MPI_DATATYPE_NULL || PMPI_Type_size(e->dt, &size) != MPI_SUCCESS ||
        PMPI_Type_get_extent(e->dt, &lb, &extent) != MPI_SUCCESS || lb != 0)
        return -1;
    int kt;
    switch (e->cat) {
    case CAT_SIGNED: case CAT_FORTRAN_INT: kt = int_ktype(size, 1); break;
    case CAT_UNSIGNED: case CAT_LOGICAL: case CAT_BYTE: kt = int_ktype(size, 0); break;
    case CAT_FLOAT: kt = size == 4 ? MK_F32 : size == 8 ? MK_F64 : -1; break;
    case CAT_LDBL: kt = MK_LDBL; break;
    case CAT_COMPLEX: kt = size == 8 ? MK_C32 : size == 16 ? MK_C64 : -1; break;
    case CAT_CLDBL: kt = MK_CLDBL; break;
    case CAT_QUAD: kt = size == 16 ? MK_F128 : -1; break;
    case CAT_CQUAD: kt = size == 32 ? MK_C128 : -1; break;
    case CAT_PAIR: kt = e->pair; break;
    default: kt = -1;
    }
    if (kt >= 0 && (size_t)extent != mpiopt_ktype_size(kt))
        return -1;
    return kt;
}

static void resolve_all(void)
{
    for (size_t i = 0; i < NTYPES; i++)
        types[i].ktype = resolve(&types[i]);
}

/* Which ops the standard allows on each category. */
static int op_allowed(mpiopt_kop op, category cat)
{
    switch (op) {
    case MK_SUM: case MK_PROD:
        return cat == CAT_SIGNED || cat == CAT_FORTRAN_INT || cat == CAT_UNSIGNED || cat == CAT_FLOAT || cat == CAT_LDBL ||
               cat == CAT_COMPLEX || cat == CAT_CLDBL || cat == CAT_QUAD || cat == CAT_CQUAD;
    case MK_MAX: case MK_MIN:
        return cat == CAT_SIGNED || cat == CAT_FORTRAN_INT || cat == CAT_UNSIGNED || cat == CAT_FLOAT || cat == CAT_LDBL ||
               cat == CAT_QUAD;
    case MK_LAND: case MK_LOR: case MK_LXOR:
        return cat == CAT_SIGNED || cat == CAT_UNSIGNED || cat == CAT_LOGICAL;
    case MK_BAND: case MK_BOR: case MK_BXOR:
        return cat == CAT_SIGNED || cat == CAT_FORTRAN_INT || cat == CAT_UNSIGNED || cat == CAT_BYTE;
    case MK_MINLOC: case MK_MAXLOC:
        return cat == CAT_PAIR;
    default:
        return 0;
    }
}

static int kop_of(MPI_Op op)
{
    if (op == MPI_SUM) return MK_SUM;
    if (op == MPI_MAX) return MK_MAX;
    if (op == MPI_MIN) return MK_MIN;
    if (op == MPI_PROD) return MK_PROD;
    if (op == MPI_LAND) return MK_LAND;
    if (op == MPI_LOR) return MK_LOR;
    if (op == MPI_LXOR) return MK_LXOR;
    if (op == MPI_BAND) return MK_BAND;
    if (op == MPI_BOR) return MK_BOR;
    if (op == MPI_BXOR) return MK_BXOR;
    if (op == MPI_MINLOC) return MK_MINLOC;
    if (op == MPI_MAXLOC) return MK_MAXLOC;
    return -1;
}

int mpiopt_find_kernel(MPI_Datatype datatype, MPI_Op op, mpiopt_op_kernel *k)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    int kop = kop_of(op);
    if (kop < 0)
        return 0;
    pthread_once(&once, resolve_all);
    for (size_t i = 0; i < NTYPES; i++) {
        if (types[i].dt != datatype)
            continue;
        if (types[i].ktype < 0 || !op_allowed(kop, types[i].cat))
            return 0;
        const mpiopt_kernel_table *t = mpiopt_kernels();
        k->k2 = t->k2[kop][types[i].ktype];
        k->k3 = t->k3[kop][types[i].ktype];
        k->elem_size = mpiopt_ktype_size(types[i].ktype);
        return k->k2 != NULL;
    }
    return 0;
}

int mpiopt_vendor_takes(MPI_Datatype datatype, MPI_Op op)
{
    mpiopt_op_kernel k;
    if (kop_of(op) < 0 && op != MPI_REPLACE && op != MPI_NO_OP)
        return 0;   /* a user-defined op: mpiopt's algorithms call it through PMPI_Reduce_local */
    return !mpiopt_find_kernel(datatype, op, &k);
}

int mpiopt_result_order_free(MPI_Datatype datatype, MPI_Op op)
{
    int kop = kop_of(op);
    if (kop < 0)
        return 0;
    for (size_t i = 0; i < NTYPES; i++) {
        if (types[i].dt != datatype)
            continue;
        if (!op_allowed(kop, types[i].cat))
            return 0;
        switch (types[i].cat) {
        case CAT_SIGNED: case CAT_FORTRAN_INT: case CAT_UNSIGNED: case CAT_LOGICAL: case CAT_BYTE:
            return 1;       /* wrap-around arithmetic, comparisons, bits: any order, one answer */
        case CAT_PAIR:      /* an integer value: the lowest index of the extreme, in any order */
            return types[i].pair == MK_2INT || types[i].pair == MK_LONG_INT ||
                   types[i].pair == MK_SHORT_INT;
        default:
            return 0;       /* floating point: rounding, signed zeros and NaNs depend on it */
        }
    }
    return 0;
}

int mpiopt_predefined_op(MPI_Op op)
{
    return op == MPI_SUM || op == MPI_PROD || op == MPI_MAX || op == MPI_MIN || op == MPI_LAND ||
           op == MPI_LOR || op == MPI_LXOR || op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR ||
           op == MPI_MAXLOC || op == MPI_MINLOC || op == MPI_REPLACE || op == MPI_NO_OP;
}
