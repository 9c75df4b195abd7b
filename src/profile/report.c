/* mpiopt-profile.json (read by `mpiopt report`) and mpiopt-profile.txt (laid out like the Cray
 * profiler's profile*.txt: System summary, MPI summary, per-call lines, regions, PAPI). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "report.h"
#include "json_out.h"

struct metric_name {
    const char *key, *label;
};

static const struct metric_name system_metrics[] = {
    {"wall_time", "Wall clock time"},
    {"user_time", "User processor time"},
    {"system_time", "System processor time"},
    {"max_rss_mb", "Maximum memory usage (MB)"},
    {"minor_page_faults", "Minor page faults"},
    {"major_page_faults", "Major page faults"},
};
static const struct metric_name mpi_metrics[] = {
    {"mpi_time", "Total MPI time"},
    {"compute_time", "Total compute time"},
    {"communication_time", "Total communication time"},
    {"wait_probe_time", "Total Wait and Probe time"},
    {"collective_sync_time", "Total collective sync time"},
};
static const char *const call_fields[4] = {"calls", "time", "bytes", "avg_bytes"};
static const char *const region_fields[3] = {"count", "time", "mpi_time"};

static const char *kind_name(enum prof_kind k)
{
    static const char *const names[] = {"p2p", "wait", "collective", "nonblocking_collective",
                                        "start", "persistent_init"};
    return names[k];
}

/* The command line of this process, spaces between arguments. */
static void program_name(char *out, size_t size)
{
    FILE *f = fopen("/proc/self/cmdline", "r");
    size_t n = f ? fread(out, 1, size - 1, f) : 0;
    if (f)
        fclose(f);
    out[n] = 0;
    for (size_t i = 0; i + 1 < n; i++)
        if (!out[i])
            out[i] = ' ';
}

static void json_stat(FILE *f, const struct prof_stat *s, int ranks)
{
    double avg = s->sum / ranks;
    fprintf(f, "{\"min\": %.9g, \"max\": %.9g, \"avg\": %.9g, \"min_pe\": %d, \"max_pe\": %d}",
            s->min, s->max, avg, (int)s->min_pe, (int)s->max_pe);
}

static int call_used(const struct prof_report *rep, int c)
{
    return rep->stats[M_CALLS + 4 * c].max > 0;
}

/* Opens DIR/.NAME.tmp.PID for writing; prof_commit renames it to DIR/NAME. */
static FILE *open_temp(const char *dir, const char *name, char *tmp, size_t size)
{
    snprintf(tmp, size, "%s/.%s.tmp.%d", dir, name, (int)getpid());
    return fopen(tmp, "w");
}

static int commit(FILE *f, const char *tmp, const char *dir, const char *name)
{
    char final[4096];
    int bad = ferror(f);
    bad |= fclose(f) != 0;
    snprintf(final, sizeof final, "%s/%s", dir, name);
    if (bad || rename(tmp, final) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

static int papi_available(const struct prof_report *rep)
{
    return rep->papi[0].min > 0 && prof_papi.nevents > 0;
}

static const char *papi_reason(const struct prof_report *rep)
{
    static char why[256];
    if (!prof_papi.available && prof_papi.reason[0])
        return prof_papi.reason;
    snprintf(why, sizeof why, "counters not read on rank %d", (int)rep->papi[0].min_pe);
    return why;
}

static void write_papi_json(FILE *f, const struct prof_report *rep)
{
    if (!papi_available(rep)) {
        fprintf(f, "{\"available\": false, \"reason\": ");
        json_string(f, papi_reason(rep));
        fprintf(f, "}");
        return;
    }
    fprintf(f, "{\"available\": true, \"counters\": {");
    for (int i = 0; i < prof_papi.nevents; i++) {
        fprintf(f, "%s\n  ", i ? "," : "");
        json_string(f, prof_papi.names[i]);
        fprintf(f, ": ");
        json_stat(f, &rep->papi[1 + i], rep->ranks);
    }
    fprintf(f, "}}");
}

static void json_frame(FILE *f, const struct prof_site_frame *fr)
{
    fprintf(f, "\"function\": ");
    json_string(f, fr->function);
    fprintf(f, ", \"file\": ");
    json_string(f, fr->file);
    fprintf(f, ", \"line\": %d, \"module\": ", fr->line);
    json_string(f, fr->module);
    fprintf(f, ", \"offset\": %lu, \"debug_info\": %s", fr->offset, fr->debug ? "true" : "false");
}

/* "sites": the merged call sites, the caller's frame inline, the stack above it in "stack". */
static void write_sites_json(FILE *f, const struct prof_report *rep)
{
    const struct prof_sites *s = rep->sites;
    if (!s || !s->enabled) {
        fprintf(f, "{\"enabled\": false}");
        return;
    }
    double mpi = rep->stats[M_MPI].sum;
    fprintf(f, "{\"enabled\": true, \"frames\": %d, \"resolver\": \"%s\", \"overflow\": %.0f, "
            "\"capacity_per_thread\": %d, \"list\": [", s->frames, s->resolver, s->overflow,
            s->capacity);
    for (int i = 0; i < s->nrows; i++) {
        const struct prof_site_row *r = &s->rows[i];
        fprintf(f, "%s\n  {\"call\": \"%s\", ", i ? "," : "", prof_call_names[r->call]);
        json_frame(f, &r->frame[0]);
        fprintf(f, ", \"stack\": [");
        for (int k = 1; k < r->nframes; k++) {
            fprintf(f, "%s{", k > 1 ? ", " : "");
            json_frame(f, &r->frame[k]);
            fprintf(f, "}");
        }
        fprintf(f, "], \"count\": ");
        json_stat(f, &r->count, rep->ranks);
        fprintf(f, ", \"bytes\": ");
        json_stat(f, &r->bytes, rep->ranks);
        fprintf(f, ", \"time\": ");
        json_stat(f, &r->time, rep->ranks);
        fprintf(f, ", \"share_of_mpi_time\": %.6g}", mpi > 0 ? r->time.sum / mpi : 0.0);
    }
    fprintf(f, "]}");
}

static void write_trace_json(FILE *f, const struct prof_trace_summary *t)
{
    if (!t || !t->enabled) {
        fprintf(f, "{\"enabled\": false}");
        return;
    }
    fprintf(f, "{\"enabled\": true, \"written\": %s, \"format\": \"otf2\", \"path\": ",
            t->written ? "true" : "false");
    json_string(f, t->written ? t->path : "");
    if (!t->written) {
        fprintf(f, ", \"reason\": ");
        json_string(f, t->reason);
    }
    fprintf(f, ", \"events_recorded\": %.0f, \"dropped\": %.0f, \"capacity_per_thread\": %.0f}",
            t->recorded, t->dropped, t->capacity);
}

int prof_write_json(const struct prof_report *rep, const char *dir)
{
    char tmp[4096], program[2048];
    FILE *f = open_temp(dir, "mpiopt-profile.json", tmp, sizeof tmp);
    if (!f)
        return -1;
    program_name(program, sizeof program);
    const struct prof_stat *st = rep->stats;
    fprintf(f, "{\n\"format\": \"mpiopt-profile\",\n\"version\": 1,\n\"complete\": true,\n");
    fprintf(f, "\"program\": ");
    json_string(f, program);
    fprintf(f, ",\n\"flavour\": \"%s\",\n\"ranks\": %d,\n\"sync_timing\": %s,\n\"created\": %ld,\n",
            rep->flavour, rep->ranks, rep->sync ? "true" : "false", (long)time(NULL));
    fprintf(f, "\"environment\": {");
    static const char *const env_names[] = {"MPICH_RANK_REORDER_METHOD", "OMP_NUM_THREADS",
                                            "MPIOPT_ALLREDUCE", "MPIOPT_PROFILE_SYNC", "LD_PRELOAD"};
    int first = 1;
    for (size_t i = 0; i < sizeof env_names / sizeof *env_names; i++) {
        const char *v = getenv(env_names[i]);
        if (!v)
            continue;
        fprintf(f, "%s\"%s\": ", first ? "" : ", ", env_names[i]);
        json_string(f, v);
        first = 0;
    }
    fprintf(f, "},\n\"system\": {\n");
    for (int i = 0; i < 6; i++) {
        fprintf(f, "  \"%s\": ", system_metrics[i].key);
        json_stat(f, &st[M_WALL + i], rep->ranks);
        fprintf(f, i < 5 ? ",\n" : "\n");
    }
    fprintf(f, "},\n\"mpi\": {\n");
    for (int i = 0; i < 5; i++) {
        fprintf(f, "  \"%s\": ", mpi_metrics[i].key);
        json_stat(f, &st[M_MPI + i], rep->ranks);
        fprintf(f, i < 4 ? ",\n" : "\n");
    }
    fprintf(f, "},\n\"calls\": {");
    first = 1;
    for (int c = 0; c < PROF_NCALLS; c++) {
        if (!call_used(rep, c))
            continue;
        fprintf(f, "%s\n  \"%s\": {\"kind\": \"%s\"", first ? "" : ",", prof_call_names[c],
                kind_name(prof_call_kinds[c]));
        for (int k = 0; k < 4; k++) {
            fprintf(f, ", \"%s\": ", call_fields[k]);
            json_stat(f, &st[M_CALLS + 4 * c + k], rep->ranks);
        }
        fprintf(f, "}");
        first = 0;
    }
    fprintf(f, "\n},\n\"regions\": {");
    for (int i = 0; i < rep->nregions; i++) {
        fprintf(f, "%s\n  ", i ? "," : "");
        json_string(f, rep->region_names[i]);
        fprintf(f, ": {");
        for (int k = 0; k < 3; k++) {
            fprintf(f, "%s\"%s\": ", k ? ", " : "", region_fields[k]);
            json_stat(f, &st[M_CALLS + 4 * PROF_NCALLS + 3 * i + k], rep->ranks);
        }
        fprintf(f, "}");
    }
    fprintf(f, "\n},\n\"papi\": ");
    write_papi_json(f, rep);
    fprintf(f, ",\n");
    fprintf(f, "\"sites\": ");
    write_sites_json(f, rep);
    fprintf(f, ",\n\"trace\": ");
    write_trace_json(f, rep->trace);
    fprintf(f, ",\n");
    static const char *const per_rank_keys[4] = {"wall_time", "mpi_time", "compute_time",
                                                 "sync_time"};
    fprintf(f, "\"per_rank\": {");
    for (int k = 0; k < 4; k++) {
        fprintf(f, "%s\n  \"%s\": [", k ? "," : "", per_rank_keys[k]);
        for (int r = 0; rep->per_rank && r < rep->ranks; r++)
            fprintf(f, "%s%.9g", r ? ", " : "", rep->per_rank[4 * r + k]);
        fprintf(f, "]");
    }
    fprintf(f, "\n},\n\"hosts\": [");
    for (int r = 0; rep->hosts && r < rep->ranks; r++) {
        fputs(r ? ", " : "", f);
        json_string(f, rep->hosts + (size_t)r * MPI_MAX_PROCESSOR_NAME);
    }
    fprintf(f, "],\n\"matrix\": {\"ranks\": %d, \"columns\": [\"source\", \"destination\", "
            "\"bytes\", \"messages\"], \"entries\": [", rep->ranks);
    for (int e = 0; rep->matrix && e < rep->nentries; e++) {
        const double *m = rep->matrix + 4 * e;
        fprintf(f, "%s[%d, %d, %.17g, %.17g]", e ? (e % 4 ? ", " : ",\n  ") : "\n  ", (int)m[0],
                (int)m[1], m[2], m[3]);
    }
    fprintf(f, "]}\n}\n");
    return commit(f, tmp, dir, "mpiopt-profile.json");
}

static void text_line(FILE *f, const char *label, const struct prof_stat *s, int ranks,
                      const char *fmt)
{
    double avg = s->sum / ranks;
    /* Imb% of design.md (CrayPat's): 100 when one rank holds all of it */
    double imbalance = s->max > 0 && ranks > 1
                           ? 100.0 * (s->max - avg) / s->max * ranks / (ranks - 1.0) : 0.0;
    char min[32], max[32], av[32];
    snprintf(min, sizeof min, fmt, s->min);
    snprintf(max, sizeof max, fmt, s->max);
    snprintf(av, sizeof av, fmt, avg);
    fprintf(f, "%-36s %14s %14s %14s %7d %7d %6.1f\n", label, min, max, av, (int)s->min_pe,
            (int)s->max_pe, imbalance);
}

static void text_header(FILE *f, const char *title)
{
    fprintf(f, "\n%s\n\n%-36s %14s %14s %14s %7s %7s %6s\n", title, "", "min", "max", "avg",
            "minPE", "maxPE", "imb%");
}

/* "file:line", or "module+0xOFFSET" without debug info; and the function (+0xOFFSET then). */
static void site_where(const struct prof_site_frame *fr, char *where, size_t wsize, char *fn,
                       size_t fsize)
{
    const char *base = strrchr(fr->file, '/'), *mod = strrchr(fr->module, '/');
    if (fr->debug) {
        snprintf(where, wsize, "%s:%d", base ? base + 1 : fr->file, fr->line);
        snprintf(fn, fsize, "%s", fr->function);
    } else {
        snprintf(where, wsize, "%s (no debug info)", mod ? mod + 1 : fr->module);
        snprintf(fn, fsize, "%s+0x%lx", fr->function, fr->offset);
    }
}

#define TEXT_SITES 30

static void write_sites_text(FILE *f, const struct prof_report *rep)
{
    const struct prof_sites *s = rep->sites;
    if (!s || !s->enabled)
        return;
    double mpi = rep->stats[M_MPI].sum;
    fprintf(f, "\nTop call sites (%d of %d by time summed over ranks; resolved with %s%s)\n\n",
            s->nrows < TEXT_SITES ? s->nrows : TEXT_SITES, s->nrows, s->resolver,
            s->frames > 1 ? "; the stack above each site in mpiopt-profile.json" : "");
    if (s->overflow > 0)
        fprintf(f, "  %.0f calls not counted by site: a thread's table of %d sites was full\n\n",
                s->overflow, s->capacity);
    fprintf(f, "%-22s %-28s %-28s %10s %12s %12s %12s %12s %6s %6s %6s\n", "call", "file:line",
            "function", "count avg", "bytes avg", "time min", "time max", "time avg", "minPE",
            "maxPE", "%MPI");
    for (int i = 0; i < s->nrows && i < TEXT_SITES; i++) {
        const struct prof_site_row *r = &s->rows[i];
        char where[96], fn[96];
        site_where(&r->frame[0], where, sizeof where, fn, sizeof fn);
        fprintf(f, "%-22s %-28s %-28s %10.0f %12.0f %12.6f %12.6f %12.6f %6d %6d %6.1f\n",
                prof_call_names[r->call], where, fn, r->count.sum / rep->ranks,
                r->bytes.sum / rep->ranks, r->time.min, r->time.max, r->time.sum / rep->ranks,
                (int)r->time.min_pe, (int)r->time.max_pe,
                mpi > 0 ? 100.0 * r->time.sum / mpi : 0.0);
    }
}

int prof_write_text(const struct prof_report *rep, const char *dir)
{
    char tmp[4096], program[2048], label[128];
    FILE *f = open_temp(dir, "mpiopt-profile.txt", tmp, sizeof tmp);
    if (!f)
        return -1;
    program_name(program, sizeof program);
    const struct prof_stat *st = rep->stats;
    fprintf(f, "Profile of %s\nNumber of processes %d\nMPI flavour %s\nCollective sync timing %s\n",
            program, rep->ranks, rep->flavour, rep->sync ? "on (MPIOPT_PROFILE_SYNC=1)" : "off");
    fprintf(f, "imb%% = 100 (max - avg) / max * N / (N - 1), N = number of processes\n");
    text_header(f, "System summary");
    for (int i = 0; i < 6; i++)
        text_line(f, system_metrics[i].label, &st[M_WALL + i], rep->ranks, i < 4 ? "%.3f" : "%.0f");
    text_header(f, "MPI summary");
    text_line(f, "Init-Finalize elapsed time", &st[M_WALL], rep->ranks, "%.3f");
    for (int i = 0; i < 5; i++)
        text_line(f, mpi_metrics[i].label, &st[M_MPI + i], rep->ranks, "%.3f");
    for (int c = 0; c < PROF_NCALLS; c++)
        if (call_used(rep, c)) {
            snprintf(label, sizeof label, "%s total time", prof_call_names[c] + 4);
            text_line(f, label, &st[M_CALLS + 4 * c + 1], rep->ranks, "%.6f");
        }
    for (int c = 0; c < PROF_NCALLS; c++)
        if (call_used(rep, c)) {
            snprintf(label, sizeof label, "%s calls", prof_call_names[c] + 4);
            text_line(f, label, &st[M_CALLS + 4 * c], rep->ranks, "%.0f");
        }
    for (int c = 0; c < PROF_NCALLS; c++)
        if (call_used(rep, c) && st[M_CALLS + 4 * c + 2].max > 0) {
            snprintf(label, sizeof label, "%s total bytes", prof_call_names[c] + 4);
            text_line(f, label, &st[M_CALLS + 4 * c + 2], rep->ranks, "%.0f");
            snprintf(label, sizeof label, "%s average bytes", prof_call_names[c] + 4);
            text_line(f, label, &st[M_CALLS + 4 * c + 3], rep->ranks, "%.0f");
        }
    if (rep->nregions) {
        text_header(f, "Region summary");
        for (int i = 0; i < rep->nregions; i++) {
            const struct prof_stat *r = &st[M_CALLS + 4 * PROF_NCALLS + 3 * i];
            snprintf(label, sizeof label, "%.30s time", rep->region_names[i]);
            text_line(f, label, &r[1], rep->ranks, "%.3f");
            snprintf(label, sizeof label, "%.30s MPI time", rep->region_names[i]);
            text_line(f, label, &r[2], rep->ranks, "%.3f");
        }
    }
    if (papi_available(rep)) {
        text_header(f, "PAPI summary");
        for (int i = 0; i < prof_papi.nevents; i++)
            text_line(f, prof_papi.names[i], &rep->papi[1 + i], rep->ranks, "%.0f");
    } else {
        fprintf(f, "\nPAPI summary\n\n  unavailable: %s\n", papi_reason(rep));
    }
    write_sites_text(f, rep);
    const struct prof_trace_summary *t = rep->trace;
    if (t && t->enabled && t->written)
        fprintf(f, "\nTrace (OTF2): %s/traces.otf2, %.0f calls and region marks recorded, %.0f "
                "dropped (%.0f a thread fit: MPIOPT_PROFILE_TRACE_EVENTS)\n", t->path, t->recorded,
                t->dropped, t->capacity);
    else if (t && t->enabled)
        fprintf(f, "\nTrace: not written: %s\n", t->reason);
    return commit(f, tmp, dir, "mpiopt-profile.txt");
}
