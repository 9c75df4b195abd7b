/* Threaded user ops (mpiopt_op_create_threaded) against one serial call of the same user
 * function: float, double, int and complex ops, counts 0..70, odd and large counts, counts
 * smaller than the thread count, byte-misaligned buffers, called by MPI_Reduce_local (the
 * vendor's callback path), by mpiopt_reduce_local and from inside a parallel region (the task
 * path). Chunks are forced tiny (MPIOPT_USER_OP_CHUNK) and threads to 3 so every count splits. */
#include <complex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpiopt.h"

static int failures, checks;
static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint64_t next_random(void)
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return rng;
}

/* Rounding-sensitive element-wise functions: any change of operands or order shows in the bits. */
static void op_float(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    float *a = in, *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] = b[i] * 0.7f + a[i] * 1.3f;
}
static void op_double(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    double *a = in, *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] = b[i] / 3.0 - a[i];
}
static void op_int(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    int *a = in, *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] = b[i] * 31 + (a[i] ^ 0x5a5a);
}
static void op_complex(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    double complex *a = in, *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] = b[i] * a[i] + 0.5;
}

typedef struct {
    const char *name;
    MPI_User_function *fn;
    MPI_Datatype type;
    size_t size;
} op_case;

static void fill(unsigned char *p, size_t n, size_t size)
{
    for (size_t i = 0; i < n * size; i++)
        p[i] = (unsigned char)next_random();
    if (size == sizeof(float)) {    /* floats: finite values so NaN payloads do not hide bits */
        for (size_t i = 0; i < n; i++) {
            float f = (float)((int)(next_random() % 20001) - 10000) / 7.0f;
            memcpy(p + i * size, &f, size);
        }
    } else if (size >= sizeof(double)) {
        for (size_t i = 0; i < n * size / sizeof(double); i++) {
            double d = (double)((int64_t)(next_random() % 2000001) - 1000000) / 3.0;
            memcpy(p + i * sizeof(double), &d, sizeof d);
        }
    }
}

enum { VIA_MPI, VIA_MPIOPT, VIA_TASK };

static void check(const op_case *c, MPI_Op op, size_t n, size_t misalign, int via)
{
    unsigned char *in = malloc(n * c->size + 16), *io = malloc(n * c->size + 16);
    unsigned char *ref = malloc(n * c->size + 16);
    unsigned char *a = in + misalign, *b = io + misalign, *r = ref + misalign;
    fill(a, n, c->size);
    fill(b, n, c->size);
    memcpy(r, b, n * c->size);
    int len = (int)n;
    MPI_Datatype dt = c->type;
    c->fn(a, r, &len, &dt);
    int rc = MPI_SUCCESS;
    if (via == VIA_MPI) {
        rc = MPI_Reduce_local(a, b, (int)n, c->type, op);
    } else if (via == VIA_MPIOPT) {
        rc = mpiopt_reduce_local(a, b, (int)n, c->type, op);
    } else {
#pragma omp parallel num_threads(3)
#pragma omp single
        {
#pragma omp task shared(rc)
            rc = MPI_Reduce_local(a, b, (int)n, c->type, op);
#pragma omp taskwait
        }
    }
    checks++;
    if (rc != MPI_SUCCESS || memcmp(b, r, n * c->size) != 0) {
        if (failures++ < 20)
            fprintf(stderr, "FAIL: %s n=%zu misalign=%zu via=%d rc=%d\n", c->name, n, misalign,
                    via, rc);
    }
    free(in); free(io); free(ref);
}

int main(int argc, char **argv)
{
    setenv("MPIOPT_THREADS", "3", 1);
    setenv("MPIOPT_USER_OP_CHUNK", "40", 1);    /* not a multiple of any element size */
    setenv("MPIOPT_THREAD_MIN_BYTES", "0", 1);  /* split even the smallest buffers */
    MPI_Init(&argc, &argv);
    MPI_Datatype complex_type = MPI_C_DOUBLE_COMPLEX;
    op_case cases[] = {
        { "float", op_float, MPI_FLOAT, sizeof(float) },
        { "double", op_double, MPI_DOUBLE, sizeof(double) },
        { "int", op_int, MPI_INT, sizeof(int) },
        { "complex", op_complex, complex_type, sizeof(double complex) },
    };
    size_t big[] = { 1001, 4097, 65537, 300001 };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        MPI_Op op;
        if (mpiopt_op_create_threaded(cases[k].fn, 1, &op) != MPI_SUCCESS) {
            fprintf(stderr, "FAIL: create %s\n", cases[k].name);
            return 1;
        }
        for (int via = VIA_MPI; via <= VIA_TASK; via++) {
            for (size_t n = 0; n <= 70; n++)
                check(&cases[k], op, n, n % 8, via);
            for (size_t i = 0; i < sizeof big / sizeof big[0]; i++)
                for (size_t m = 0; m < 8; m += 3)
                    check(&cases[k], op, big[i], m, via);
        }
        MPI_Op_free(&op);
        if (op != MPI_OP_NULL) {
            fprintf(stderr, "FAIL: MPI_Op_free left the handle\n");
            failures++;
        }
    }
    /* the pool: more ops than slots fall back to plain ops that still work */
    MPI_Op many[80];
    for (int i = 0; i < 80; i++)
        if (mpiopt_op_create_threaded(op_float, 1, &many[i]) != MPI_SUCCESS)
            failures++;
    check(&cases[0], many[79], 1001, 1, VIA_MPI);
    check(&cases[0], many[3], 1001, 1, VIA_MPI);
    for (int i = 0; i < 80; i++)
        MPI_Op_free(&many[i]);
    printf("%d checks, %d failures\n", checks, failures);
    MPI_Finalize();
    return failures != 0;
}
