/* Collective MPI-IO write of a distributed array, read back and checked.
 *
 * Each rank owns n consecutive int64 elements of a global array (element g = 3*g + 1) and writes
 * them with MPI_File_write_at_all; the file is closed, reopened, and every rank reads the block of
 * the next rank (so the check does not pass on data still in the rank's own buffer) with
 * MPI_File_read_at_all. It prints the hints in effect (MPI_File_get_info), each rank's processor
 * name (what ROMIO matches cb_config_list against), and the checksum of the file against the
 * expected one.
 *
 * usage: io_write [-n ELEMENTS_PER_RANK] [-f FILE] [-h key=value]...
 * Hints come from -h (MPI_Info) and, with ROMIO, from the file named by ROMIO_HINTS.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t element(int64_t g) { return 3 * g + 1; }

static void fail(const char *what) {
    fprintf(stderr, "io_write: %s\n", what);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    long n = 1024;
    const char *path = "io_write.dat";
    MPI_Info info;
    MPI_Info_create(&info);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) {
            n = atol(argv[++i]);
        } else if (!strcmp(argv[i], "-f") && i + 1 < argc) {
            path = argv[++i];
        } else if (!strcmp(argv[i], "-h") && i + 1 < argc) {
            char kv[MPI_MAX_INFO_VAL + MPI_MAX_INFO_KEY + 2];
            snprintf(kv, sizeof kv, "%s", argv[++i]);
            char *eq = strchr(kv, '=');
            if (!eq) fail("-h needs key=value");
            *eq = '\0';
            MPI_Info_set(info, kv, eq + 1);
        } else {
            fail("usage: io_write [-n ELEMENTS_PER_RANK] [-f FILE] [-h key=value]...");
        }
    }
    if (n < 1) fail("-n must be at least 1");

    /* processor names, in rank order: ROMIO's view of the nodes */
    char name[MPI_MAX_PROCESSOR_NAME];
    int len;
    MPI_Get_processor_name(name, &len);
    char *names = rank == 0 ? malloc((size_t)size * MPI_MAX_PROCESSOR_NAME) : NULL;
    MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
               MPI_COMM_WORLD);
    if (rank == 0)
        for (int r = 0; r < size; r++) printf("processor %d %s\n", r, names + (size_t)r * MPI_MAX_PROCESSOR_NAME);
    free(names);

    int64_t *buf = malloc((size_t)n * sizeof *buf);
    for (long i = 0; i < n; i++) buf[i] = element((int64_t)rank * n + i);
    MPI_File fh;
    if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, info, &fh) != MPI_SUCCESS)
        fail("cannot open the file for writing");
    MPI_Offset block = (MPI_Offset)n * (MPI_Offset)sizeof(int64_t);
    MPI_File_write_at_all(fh, rank * block, buf, (int)n, MPI_INT64_T, MPI_STATUS_IGNORE);

    MPI_Info used;
    MPI_File_get_info(fh, &used);
    if (rank == 0) {
        int nkeys;
        MPI_Info_get_nkeys(used, &nkeys);
        for (int k = 0; k < nkeys; k++) {
            char key[MPI_MAX_INFO_KEY + 1], value[MPI_MAX_INFO_VAL + 1];
            int flag;
            MPI_Info_get_nthkey(used, k, key);
            MPI_Info_get(used, key, MPI_MAX_INFO_VAL, value, &flag);
            if (flag) printf("hint %s = %s\n", key, value);
        }
    }
    MPI_Info_free(&used);
    MPI_File_close(&fh);

    /* read the next rank's block back */
    int from = (rank + 1) % size;
    memset(buf, 0, (size_t)n * sizeof *buf);
    if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, info, &fh) != MPI_SUCCESS)
        fail("cannot reopen the file");
    MPI_File_read_at_all(fh, from * block, buf, (int)n, MPI_INT64_T, MPI_STATUS_IGNORE);
    MPI_File_close(&fh);
    long bad = 0;
    int64_t sum = 0;
    for (long i = 0; i < n; i++) {
        if (buf[i] != element((int64_t)from * n + i)) bad++;
        sum += buf[i];
    }
    long bad_total;
    int64_t checksum;
    MPI_Reduce(&bad, &bad_total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&sum, &checksum, 1, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        int64_t total = (int64_t)size * n; /* sum of 3g+1 over g < total */
        int64_t expected = 3 * (total * (total - 1) / 2) + total;
        printf("elements %lld mismatched %ld checksum %lld expected %lld %s\n", (long long)total,
               bad_total, (long long)checksum, (long long)expected,
               bad_total == 0 && checksum == expected ? "OK" : "FAILED");
    }
    free(buf);
    MPI_Info_free(&info);
    MPI_Finalize();
    return 0;
}
