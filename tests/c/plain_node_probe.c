/* An ordinary MPI program (no mpiopt header or link) that says where each rank runs and what its
 * node is, for the namespace-node tests (tests/python/test_nodes.py, tests/python/nodes.py):
 *
 *   test-plain_node_probe [COUNT]
 *
 * Each rank finds its node with MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) and the number of nodes
 * from the node's first ranks; runs MPI_Allreduce and MPI_Reduce on MPI_COMM_WORLD (counts 1 to
 * COUNT, default 100003 doubles, element i of rank r = r + i, so every sum is exact) and
 * MPI_Allreduce on its node's communicator (64 KiB calls: under the drop-in, the shared_memory
 * algorithm's windows); then, before MPI_Finalize, lists its /dev/shm (the device and the files
 * it holds). Rank 0 prints one line a rank, in rank order:
 *
 *   probe: rank R host H node_rank L node_size S nodes N shm_dev D shm F1,F2,… maps M1,M2,…
 *
 * D is /dev/shm's device as /proc/PID/maps writes it (major:minor in hex); each M is a file the
 * rank has mapped shared (the MPI's shared-memory segments and windows, its own and its node's
 * other ranks'), as device:inode:path (a path the MPI already unlinked ends in " (deleted)",
 * written here without it).
 *
 * then "probe: N checks, F failures" (all ranks' failures added up, before MPI_Finalize: the
 * results are complete once it is printed), and "probe: finalized" after MPI_Finalize. Exit
 * status 1 on any failure. */
#include <dirent.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define LINE 4096

static long checks, failures;

static void expect(const char *what, const double *got, double want0, double step, int n)
{
    checks++;
    for (int i = 0; i < n; i++)
        if (got[i] != want0 + step * i) {
            printf("probe: FAIL %s count %d: element %d is %g, expected %g\n", what, n, i, got[i],
                   want0 + step * i);
            failures++;
            return;
        }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, p, count = argc > 1 ? atoi(argv[1]) : 100003;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    char host[256] = "?";
    gethostname(host, sizeof host - 1);

    MPI_Comm node, leaders;
    int node_rank, node_size, nodes = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &node_rank);
    MPI_Comm_size(node, &node_size);
    MPI_Comm_split(MPI_COMM_WORLD, node_rank == 0 ? 0 : MPI_UNDEFINED, rank, &leaders);
    if (leaders != MPI_COMM_NULL) {
        MPI_Comm_size(leaders, &nodes);
        MPI_Comm_free(&leaders);
    }
    MPI_Bcast(&nodes, 1, MPI_INT, 0, node);

    double *a = malloc((size_t)count * sizeof *a), *b = malloc((size_t)count * sizeof *b);
    double ranks = p * (p - 1) / 2.0;
    for (int n = 1; n <= count; n = n * 10 + 3 > count && n != count ? count : n * 10 + 3) {
        for (int i = 0; i < n; i++) a[i] = rank + i;
        MPI_Allreduce(a, b, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        expect("allreduce", b, ranks, p, n);
        memcpy(b, a, n * sizeof *b);
        MPI_Allreduce(MPI_IN_PLACE, b, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        expect("allreduce in place", b, ranks, p, n);
        MPI_Reduce(a, b, n, MPI_DOUBLE, MPI_SUM, p - 1, MPI_COMM_WORLD);
        if (rank == p - 1)
            expect("reduce", b, ranks, p, n);
    }
    /* the node's own communicator: 64 KiB calls, a few of them (auto's trials) */
    int m = 8192;
    double *c = malloc(m * sizeof *c), *d = malloc(m * sizeof *d);
    long node_sum = 0;
    MPI_Allreduce(&(long){rank}, &node_sum, 1, MPI_LONG, MPI_SUM, node);
    for (int k = 0; k < 60; k++) {
        for (int i = 0; i < m; i++) c[i] = rank + i;
        MPI_Allreduce(c, d, m, MPI_DOUBLE, MPI_SUM, node);
        expect("node allreduce", d, (double)node_sum, node_size, m);
    }

    /* this rank's /dev/shm */
    char line[LINE];
    struct stat st;
    unsigned maj = 0, min = 0;
    if (stat("/dev/shm", &st) == 0)
        maj = major(st.st_dev), min = minor(st.st_dev);
    int len = snprintf(line, sizeof line, "probe: rank %d host %s node_rank %d node_size %d nodes %d "
                       "shm_dev %02x:%02x shm ", rank, host, node_rank, node_size, nodes, maj, min);
    DIR *dir = opendir("/dev/shm");
    int listed = 0;
    for (struct dirent *e; dir && (e = readdir(dir));) {
        if (e->d_name[0] == '.')
            continue;
        int room = (int)sizeof line - len - 2;
        if ((int)strlen(e->d_name) + 1 >= room)
            break;
        len += snprintf(line + len, sizeof line - len, "%s%s", listed++ ? "," : "", e->d_name);
    }
    if (dir)
        closedir(dir);
    if (!listed)
        len += snprintf(line + len, sizeof line - len, "-");
    len += snprintf(line + len, sizeof line - len, " maps ");
    /* shared file mappings, each file once */
    FILE *maps = fopen("/proc/self/maps", "r");
    char entry[1024], seen[LINE] = "";
    listed = 0;
    while (maps && fgets(entry, sizeof entry, maps)) {
        char perms[8], dev[16], path[900] = "";
        unsigned long long ino;
        if (sscanf(entry, "%*s %7s %*s %15s %llu %899[^\n]", perms, dev, &ino, path) < 4 ||
            perms[3] != 's' || path[0] != '/')
            continue;
        char *del = strstr(path, " (deleted)");
        if (del)
            *del = 0;
        char item[1024];
        snprintf(item, sizeof item, "%s:%llu:%s", dev, ino, path);
        if (strstr(seen, item) || (int)(strlen(item) + 2) >= (int)sizeof line - len)
            continue;
        if ((int)(strlen(seen) + strlen(item) + 2) < (int)sizeof seen) {
            strcat(seen, item);
            strcat(seen, "\n");
        }
        len += snprintf(line + len, sizeof line - len, "%s%s", listed++ ? "," : "", item);
    }
    if (maps)
        fclose(maps);
    if (!listed)
        len += snprintf(line + len, sizeof line - len, "-");
    char *all = rank == 0 ? malloc((size_t)p * LINE) : NULL;
    MPI_Gather(line, LINE, MPI_CHAR, all, LINE, MPI_CHAR, 0, MPI_COMM_WORLD);

    long mine[2] = {checks, failures}, sums[2];
    MPI_Allreduce(mine, sums, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int r = 0; r < p; r++)
            printf("%s\n", all + (size_t)r * LINE);
        printf("probe: %ld checks, %ld failures\n", sums[0], sums[1]);
        fflush(stdout);
    }
    MPI_Comm_free(&node);
    free(a); free(b); free(c); free(d); free(all);
    MPI_Finalize();
    if (rank == 0) {
        printf("probe: finalized\n");
        fflush(stdout);
    }
    return sums[1] ? 1 : 0;
}
