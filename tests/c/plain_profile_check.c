/* An unmodified MPI program with exchanges whose profile is known by construction, for
 * tests/python/test_profile.py (run with libmpiopt-profile.so preloaded).
 *
 *   imbalance UNIT_MS ITERS   rank r sleeps r units before each MPI_Allreduce (8 B), inside the
 *                             region "work" (MPI_Pcontrol 101 / -101)
 *   ring BYTES ITERS          each rank sends BYTES to rank+1 (Sendrecv), ITERS times
 *   halo2d PX PY BYTES        one 4-neighbour exchange on a periodic PX x PY grid (Isend/Irecv/
 *                             Waitall), rank = y * PX + x
 *   persistent BYTES ITERS    ring with Send_init/Recv_init/Startall, plus one Bcast of BYTES
 *   misc BYTES ITERS          MPI_Pcontrol(1)/(0) without a name (ignored), one Iallreduce of 4
 *                             doubles, a ring of BYTES on a communicator with the ranks reversed
 *                             (rank r sends to world rank r - 1), and ITERS starts of a persistent
 *                             allreduce of one double (MPI-4 MPI_Allreduce_init or Open MPI's
 *                             MPIX_Allreduce_init; prints "persistent collectives: no" without)
 */
#include <mpi.h>
#if MPI_VERSION < 4 && defined(OPEN_MPI)
#include <mpi-ext.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void sleep_ms(double ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)((ms - 1000 * (time_t)(ms / 1000)) * 1e6)};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "imbalance") == 0 && argc == 4) {
        double unit = atof(argv[2]);
        int iters = atoi(argv[3]);
        double x = rank, y;
        for (int i = 0; i < iters; i++) {
            MPI_Pcontrol(101, "work");     /* MPIOPT_PCONTROL_BEGIN */
            sleep_ms(unit * rank);
            MPI_Pcontrol(-101);   /* MPIOPT_PCONTROL_END */
            MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        }
    } else if (strcmp(mode, "ring") == 0 && argc == 4) {
        int bytes = atoi(argv[2]), iters = atoi(argv[3]);
        char *s = calloc((size_t)bytes + 1, 1), *r = calloc((size_t)bytes + 1, 1);
        for (int i = 0; i < iters; i++)
            MPI_Sendrecv(s, bytes, MPI_CHAR, (rank + 1) % size, 0, r, bytes, MPI_CHAR,
                         (rank + size - 1) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        free(s);
        free(r);
    } else if (strcmp(mode, "halo2d") == 0 && argc == 5) {
        int px = atoi(argv[2]), py = atoi(argv[3]), bytes = atoi(argv[4]);
        if (px * py != size) {
            fprintf(stderr, "halo2d: %d x %d != %d ranks\n", px, py, size);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        int x = rank % px, y = rank / px;
        int nb[4] = {y * px + (x + 1) % px, y * px + (x + px - 1) % px,
                     ((y + 1) % py) * px + x, ((y + py - 1) % py) * px + x};
        char *s = calloc(4 * ((size_t)bytes + 1), 1), *r = calloc(4 * ((size_t)bytes + 1), 1);
        MPI_Request req[8];
        MPI_Status st[8];   /* not MPI_STATUSES_IGNORE: GCC warns on MPICH's sentinel pointer */
        for (int k = 0; k < 4; k++) {
            MPI_Irecv(r + k * bytes, bytes, MPI_CHAR, nb[k], k ^ 1, MPI_COMM_WORLD, &req[k]);
            MPI_Isend(s + k * bytes, bytes, MPI_CHAR, nb[k], k, MPI_COMM_WORLD, &req[4 + k]);
        }
        MPI_Waitall(8, req, st);
        free(s);
        free(r);
    } else if (strcmp(mode, "persistent") == 0 && argc == 4) {
        int bytes = atoi(argv[2]), iters = atoi(argv[3]);
        char *s = calloc((size_t)bytes + 1, 1), *r = calloc((size_t)bytes + 1, 1);
        MPI_Request req[2];
        MPI_Status st[2];
        MPI_Recv_init(r, bytes, MPI_CHAR, (rank + size - 1) % size, 0, MPI_COMM_WORLD, &req[0]);
        MPI_Send_init(s, bytes, MPI_CHAR, (rank + 1) % size, 0, MPI_COMM_WORLD, &req[1]);
        for (int i = 0; i < iters; i++) {
            MPI_Startall(2, req);
            MPI_Waitall(2, req, st);
        }
        MPI_Request_free(&req[0]);
        MPI_Request_free(&req[1]);
        MPI_Bcast(s, bytes, MPI_CHAR, 0, MPI_COMM_WORLD);
        free(s);
        free(r);
    } else if (strcmp(mode, "misc") == 0 && argc == 4) {
        int bytes = atoi(argv[2]), iters = atoi(argv[3]);
        MPI_Pcontrol(1);
        MPI_Pcontrol(0);
        double v[4] = {1, 2, 3, 4}, w[4];
        MPI_Request req;
        MPI_Iallreduce(v, w, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        MPI_Comm reversed;
        MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &reversed);
        int sub;
        MPI_Comm_rank(reversed, &sub);
        char *s = calloc((size_t)bytes + 1, 1), *r = calloc((size_t)bytes + 1, 1);
        MPI_Sendrecv(s, bytes, MPI_CHAR, (sub + 1) % size, 0, r, bytes, MPI_CHAR,
                     (sub + size - 1) % size, 0, reversed, MPI_STATUS_IGNORE);
        MPI_Comm_free(&reversed);
        free(s);
        free(r);
#if MPI_VERSION >= 4 || defined(MPIOPT_HAVE_PERSISTENT_COLL) || \
    (defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ)
        double x = rank, y;
#if MPI_VERSION >= 4 || defined(MPIOPT_HAVE_PERSISTENT_COLL)
        MPI_Allreduce_init(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
#else
        MPIX_Allreduce_init(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
#endif
        for (int i = 0; i < iters; i++) {
            MPI_Start(&req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        MPI_Request_free(&req);
#else
        if (rank == 0)
            printf("persistent collectives: no\n");
#endif
    } else if (strcmp(mode, "abort") == 0) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0)
            MPI_Abort(MPI_COMM_WORLD, 3);
        MPI_Barrier(MPI_COMM_WORLD);
    } else {
        if (rank == 0)
            fprintf(stderr, "usage: %s imbalance UNIT_MS ITERS | ring BYTES ITERS | "
                    "halo2d PX PY BYTES | persistent BYTES ITERS | misc BYTES ITERS | abort\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    MPI_Finalize();
    return 0;
}
