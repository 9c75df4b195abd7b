/* Call sites (MPIOPT_PROFILE_SITES=1, MPIOPT_PROFILE_STACK=N): every wrapped call is counted
 * under the return address of its caller (and, with a stack, the N return addresses above it),
 * in a fixed-size hash table per thread. Nothing is resolved on the hot path: at MPI_Finalize
 * each rank turns its addresses into function, file and line with libdw (elfutils) (its own
 * addresses: with ASLR every rank maps the program elsewhere), and rank 0 merges the ranks'
 * sites by that text (report.h: struct prof_sites).
 *
 * Why libdw: it reads the DWARF line table and the ELF symbol table of every module mapped in
 * the process (dwfl_linux_proc_report) through one API, finds separate debug files the
 * standard way, and is a Debian package (libdw-dev) that perf and systemd already use. The
 * stack above the caller comes from glibc's backtrace() (libgcc's DWARF unwinder).
 *
 * C++ functions are named as C++ (`ExchangeHalo(SparseMatrix_STRUCT const&, Vector_STRUCT&)`,
 * not `_Z12ExchangeHaloRK19SparseMatrix_STRUCTR13Vector_STRUCT`): the symbol tables hold the
 * mangled names, and libstdc++'s __cxa_demangle, looked up at run time (demangle()), turns them
 * back. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "profile.h"
#include "report.h"
#ifdef MPIOPT_HAVE_LIBDW
#include <elfutils/libdwfl.h>
#endif

int prof_sites;

#define SITE_SLOTS 4096             /* per thread; a power of 2 */
#define SITE_FILL (SITE_SLOTS / 4 * 3)
#define SITE_THREADS 256

struct site {
    const void *pc[PROF_SITE_FRAMES];
    int call;                       /* enum prof_call + 1; 0: empty slot */
    uint64_t count, bytes;
    double time;                    /* prof_now() units until prof_sites_to_seconds */
};

struct site_table {
    struct site slot[SITE_SLOTS];
    int used;
    uint64_t overflow;              /* calls not counted: the table was full */
};

static __thread struct site_table *my_table MPIOPT_TLS_FAST;
static struct site_table *tables[SITE_THREADS];
static int ntables;
static uint64_t untracked;          /* calls of threads beyond SITE_THREADS */

void prof_sites_start(void)
{
    const char *on = getenv("MPIOPT_PROFILE_SITES");
    const char *stack = getenv("MPIOPT_PROFILE_STACK");
    int above = stack ? atoi(stack) : 0;
    if (above < 0)
        above = 0;
    if (above > PROF_SITE_FRAMES - 1)
        above = PROF_SITE_FRAMES - 1;
    if ((on && strcmp(on, "1") == 0) || above > 0)
        prof_sites = 1 + above;
}

static struct site_table *table(void)
{
    if (my_table)
        return my_table;
    int i = __atomic_fetch_add(&ntables, 1, __ATOMIC_RELAXED);
    if (i >= SITE_THREADS)
        return NULL;
    tables[i] = calloc(1, sizeof(struct site_table));
    return my_table = tables[i];
}

static size_t slot_of(const void *const *pc, int frames, int call)
{
    uint64_t h = (uint64_t)call;
    for (int i = 0; i < frames; i++)
        h = (h ^ (uint64_t)(uintptr_t)pc[i]) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 40) & (SITE_SLOTS - 1);
}

/* The return addresses from the wrapper's caller upwards: backtrace() lists this function and
 * the wrapper first, the caller's address then follows (found by value, so that an inlined or
 * tail-called wrapper costs no frame). */
static int stack_above(const void *caller, const void **pc)
{
    /* only as deep as needed: each frame costs a lookup of its unwind table */
    enum { BELOW = 3 };             /* this function, the wrapper, and one to spare */
    void *trace[PROF_SITE_FRAMES + BELOW];
    int n = backtrace(trace, prof_sites + BELOW);
    for (int i = 0; i < n; i++)
        if (trace[i] == caller) {
            int k = 0;
            for (; k < prof_sites && i + k < n; k++)
                pc[k] = trace[i + k];
            return k;
        }
    pc[0] = caller;
    return 1;
}

void prof_site_record(enum prof_call id, const void *caller, double t, uint64_t bytes)
{
    struct site_table *tab = table();
    if (!tab) {
        __atomic_fetch_add(&untracked, 1, __ATOMIC_RELAXED);
        return;
    }
    const void *pc[PROF_SITE_FRAMES] = {caller};
    if (prof_sites > 1)
        stack_above(caller, pc);
    size_t s = slot_of(pc, PROF_SITE_FRAMES, (int)id);
    for (;; s = (s + 1) & (SITE_SLOTS - 1)) {
        struct site *x = &tab->slot[s];
        if (!x->call) {
            if (tab->used >= SITE_FILL) {
                tab->overflow++;
                return;
            }
            tab->used++;
            x->call = (int)id + 1;
            memcpy(x->pc, pc, sizeof pc);
            break;
        }
        if (x->call == (int)id + 1 && memcmp(x->pc, pc, sizeof pc) == 0)
            break;
    }
    struct site *x = &tab->slot[s];
    x->count++;
    x->bytes += bytes;
    x->time += t;
}

void prof_sites_to_seconds(double scale)
{
    for (int i = 0; i < ntables && i < SITE_THREADS; i++)
        for (size_t s = 0; tables[i] && s < SITE_SLOTS; s++)
            tables[i]->slot[s].time *= scale;
}

/* ---- resolution: one text per site, fields split by \x1f, frames by \x1e ---- */

#ifdef MPIOPT_HAVE_LIBDW
static Dwfl *open_dwfl(void)
{
    static char *debuginfo_path;
    static const Dwfl_Callbacks callbacks = {
        .find_elf = dwfl_linux_proc_find_elf,
        .find_debuginfo = dwfl_standard_find_debuginfo,
        .debuginfo_path = &debuginfo_path,
    };
    Dwfl *dwfl = dwfl_begin(&callbacks);
    if (!dwfl)
        return NULL;
    dwfl_report_begin(dwfl);
    if (dwfl_linux_proc_report(dwfl, getpid()) != 0 || dwfl_report_end(dwfl, NULL, NULL) != 0) {
        dwfl_end(dwfl);
        return NULL;
    }
    return dwfl;
}
#endif

/* Copies s into out, control characters (our separators among them) made '?'. */
static void clean(char *out, size_t size, const char *s)
{
    size_t i = 0;
    for (; s && s[i] && i + 1 < size; i++)
        out[i] = (unsigned char)s[i] < 0x20 ? '?' : s[i];
    out[i] = 0;
}

/* The C++ name of a mangled symbol (Itanium ABI: "_Z..."), into out; 0 when there is none to
 * give (not mangled, no demangler, or a name it does not parse: the caller keeps the symbol).
 * __cxa_demangle is found with dlsym, not linked: a C++ program has libstdc++ loaded and so
 * the demangler, a C or Fortran program has no mangled names and gets no C++ runtime from the
 * profiler. It runs at MPI_Finalize only, once a site frame; it allocates the text it returns. */
static int demangle(const char *symbol, char *out, size_t size)
{
    typedef char *(*demangler)(const char *, char *, size_t *, int *);
    static demangler cxa_demangle;
    static int looked_up;
    if (!symbol || strncmp(symbol, "_Z", 2) != 0)
        return 0;
    if (!looked_up) {
        cxa_demangle = (demangler)dlsym(RTLD_DEFAULT, "__cxa_demangle");
        looked_up = 1;
    }
    if (!cxa_demangle)
        return 0;
    int status = -1;
    char *name = cxa_demangle(symbol, NULL, NULL, &status);
    int ok = status == 0 && name;
    if (ok)
        clean(out, size, name);
    free(name);
    return ok;
}

/* function \x1f file \x1f line \x1f module \x1f offset in function \x1f 1 if file:line known */
static void resolve(void *dwfl_, const void *ret, char *out, size_t size)
{
    /* a return address is the instruction after the call: look up the call itself */
    uintptr_t pc = (uintptr_t)ret - 1;
    /* a demangled name with its parameter types runs long (templates, std:: containers) */
    char function[1024] = "?", file[1024] = "", module[512] = "?";
    int line = 0;
    unsigned long offset = 0;
#ifdef MPIOPT_HAVE_LIBDW
    Dwfl *dwfl = dwfl_;
    Dwfl_Module *m = dwfl ? dwfl_addrmodule(dwfl, pc) : NULL;
    if (m) {
        Dwarf_Addr start = 0;
        const char *name = dwfl_module_info(m, NULL, &start, NULL, NULL, NULL, NULL, NULL);
        clean(module, sizeof module, name);
        GElf_Off off = 0;
        GElf_Sym sym;
        const char *fn = dwfl_module_addrinfo(m, pc, &off, &sym, NULL, NULL, NULL);
        if (fn) {
            if (!demangle(fn, function, sizeof function))
                clean(function, sizeof function, fn);
            offset = (unsigned long)off;
        } else {
            offset = (unsigned long)(pc - start);
        }
        Dwfl_Line *l = dwfl_module_getsrc(m, pc);
        const char *src = l ? dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL) : NULL;
        /* a file named as the compiler was given it (`mpicc ref/x.c`) is relative to the
         * directory it was compiled in: joined to it, the name says which file on any machine
         * (mpiopt transform --profile matches sources by path) */
        const char *dir = src && src[0] != '/' ? dwfl_line_comp_dir(l) : NULL;
        char joined[1024];
        if (dir && *dir && (size_t)snprintf(joined, sizeof joined, "%s/%s", dir, src) < sizeof joined)
            src = joined;
        if (src)
            clean(file, sizeof file, src);
    }
#else
    (void)dwfl_;
#endif
    if (!strcmp(module, "?")) {
        Dl_info info;
        if (dladdr((void *)pc, &info)) {
            clean(module, sizeof module, info.dli_fname);
            if (info.dli_sname) {
                if (!demangle(info.dli_sname, function, sizeof function))
                    clean(function, sizeof function, info.dli_sname);
                offset = (unsigned long)(pc - (uintptr_t)info.dli_saddr);
            } else {
                offset = (unsigned long)(pc - (uintptr_t)info.dli_fbase);
            }
        }
    }
    snprintf(out, size, "%s\x1f%s\x1f%d\x1f%s\x1f%lu\x1f%d", function, file, line, module, offset,
             file[0] && line > 0);
}

/* This rank's sites, one line each: call \t count \t bytes \t time \t frames. */
static char *local_text(size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *text = malloc(cap), frame[4096];   /* resolve(): function, file and module, whole */
    void *dwfl = NULL;
#ifdef MPIOPT_HAVE_LIBDW
    dwfl = open_dwfl();
#endif
    for (int i = 0; text && i < ntables && i < SITE_THREADS; i++)
        for (size_t s = 0; tables[i] && s < SITE_SLOTS; s++) {
            const struct site *x = &tables[i]->slot[s];
            if (!x->call)
                continue;
            char line[PROF_SITE_FRAMES * 4096 + 128];
            int k = snprintf(line, sizeof line, "%d\t%llu\t%llu\t%.9g\t", x->call - 1,
                             (unsigned long long)x->count, (unsigned long long)x->bytes, x->time);
            for (int f = 0; f < PROF_SITE_FRAMES && x->pc[f]; f++) {
                resolve(dwfl, x->pc[f], frame, sizeof frame);
                k += snprintf(line + k, sizeof line - (size_t)k, "%s%s", f ? "\x1e" : "", frame);
                if ((size_t)k >= sizeof line - 2)
                    k = (int)sizeof line - 2;
            }
            line[k++] = '\n';
            while (n + (size_t)k + 1 > cap) {
                char *bigger = realloc(text, cap *= 2);
                if (!bigger) {
                    free(text);
                    return NULL;
                }
                text = bigger;
            }
            memcpy(text + n, line, (size_t)k);
            n += (size_t)k;
        }
#ifdef MPIOPT_HAVE_LIBDW
    if (dwfl)
        dwfl_end(dwfl);
#endif
    if (text)
        text[n] = 0;
    *len = n;
    return text;
}

/* ---- rank 0: the same site (call and frames as text) of every rank, merged ---- */

struct record {
    int rank, call;
    double count, bytes, time;
    char *key;                      /* "call\tframes", points into the gathered text */
    char *frames;
};

static int by_key(const void *a_, const void *b_)
{
    const struct record *a = a_, *b = b_;
    int c = strcmp(a->key, b->key);
    return c ? c : a->rank - b->rank;
}

static int by_time(const void *a_, const void *b_)
{
    const struct prof_site_row *a = a_, *b = b_;
    return a->time.sum < b->time.sum ? 1 : a->time.sum > b->time.sum ? -1 : 0;
}

/* min/max/sum over every rank, a rank without the site counting 0 */
static void stat_add(struct prof_stat *s, double v, int rank, int first)
{
    if (first) {
        *s = (struct prof_stat){v, v, v, rank, rank};
        return;
    }
    if (v < s->min) {
        s->min = v;
        s->min_pe = rank;
    }
    if (v > s->max) {
        s->max = v;
        s->max_pe = rank;
    }
    s->sum += v;
}

static void split_frames(struct prof_site_row *row, char *frames)
{
    row->nframes = 0;
    for (char *f = frames; f && row->nframes < PROF_SITE_FRAMES;) {
        char *next = strchr(f, '\x1e');
        if (next)
            *next++ = 0;
        struct prof_site_frame *fr = &row->frame[row->nframes++];
        char *field[6] = {0};
        field[0] = f;
        for (int i = 1; i < 6 && field[i - 1]; i++) {
            field[i] = strchr(field[i - 1], '\x1f');
            if (field[i])
                *field[i]++ = 0;
        }
        fr->function = field[0];
        fr->file = field[1] ? field[1] : "";
        fr->line = field[2] ? atoi(field[2]) : 0;
        fr->module = field[3] ? field[3] : "";
        fr->offset = field[4] ? strtoul(field[4], NULL, 10) : 0;
        fr->debug = field[5] ? atoi(field[5]) : 0;
        f = next;
    }
}

static void merge(struct prof_sites *out, char *all, const int *counts, const int *displs,
                  int ranks)
{
    size_t nrec = 0;
    for (size_t i = 0; i < (size_t)displs[ranks - 1] + (size_t)counts[ranks - 1]; i++)
        nrec += all[i] == '\n';
    struct record *rec = calloc(nrec + 1, sizeof *rec);
    size_t n = 0;
    for (int r = 0; rec && r < ranks; r++) {
        char *p = all + displs[r], *end = p + counts[r];
        while (p < end) {
            char *eol = memchr(p, '\n', (size_t)(end - p));
            if (!eol)
                break;
            *eol = 0;
            struct record *x = &rec[n];
            x->rank = r;
            x->key = p;
            char *t1 = strchr(p, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
            char *t3 = t2 ? strchr(t2 + 1, '\t') : NULL, *t4 = t3 ? strchr(t3 + 1, '\t') : NULL;
            if (t4) {
                x->call = atoi(p);
                x->count = strtod(t1 + 1, NULL);
                x->bytes = strtod(t2 + 1, NULL);
                x->time = strtod(t3 + 1, NULL);
                /* the key: call and frames, without the numbers */
                memmove(t1 + 1, t4 + 1, strlen(t4 + 1) + 1);
                x->frames = t1 + 1;
                n++;
            }
            p = eol + 1;
        }
    }
    if (rec)
        qsort(rec, n, sizeof *rec, by_key);
    out->rows = calloc(n + 1, sizeof *out->rows);
    char *seen = calloc((size_t)ranks, 1);
    out->nrows = 0;
    for (size_t i = 0; rec && out->rows && seen && i < n;) {
        size_t j = i;
        while (j < n && strcmp(rec[j].key, rec[i].key) == 0)
            j++;
        struct prof_site_row *row = &out->rows[out->nrows++];
        row->call = rec[i].call;
        memset(seen, 0, (size_t)ranks);
        int first = 1;
        for (size_t k = i; k < j; k++) {
            stat_add(&row->count, rec[k].count, rec[k].rank, first);
            stat_add(&row->bytes, rec[k].bytes, rec[k].rank, first);
            stat_add(&row->time, rec[k].time, rec[k].rank, first);
            seen[rec[k].rank] = 1;
            first = 0;
        }
        for (int r = 0; r < ranks; r++)
            if (!seen[r]) {
                stat_add(&row->count, 0, r, 0);
                stat_add(&row->bytes, 0, r, 0);
                stat_add(&row->time, 0, r, 0);
            }
        split_frames(row, rec[i].frames);
        i = j;
    }
    qsort(out->rows, (size_t)out->nrows, sizeof *out->rows, by_time);
    free(seen);
    free(rec);
}

void prof_sites_gather(struct prof_sites *out)
{
    memset(out, 0, sizeof *out);
    int on = prof_sites;
    PMPI_Allreduce(MPI_IN_PLACE, &on, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!on)
        return;
    out->enabled = 1;
    out->frames = on;
#ifdef MPIOPT_HAVE_LIBDW
    out->resolver = "libdw";
#else
    out->resolver = "dladdr";
#endif
    double overflow = (double)untracked;
    for (int i = 0; i < ntables && i < SITE_THREADS; i++)
        overflow += tables[i] ? (double)tables[i]->overflow : 0;
    PMPI_Reduce(&overflow, &out->overflow, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    out->capacity = SITE_FILL;

    size_t len = 0;
    char *mine = local_text(&len);
    int count = mine && len < (1u << 30) ? (int)len : 0;
    int *counts = NULL, *displs = NULL;
    if (prof.rank == 0) {
        counts = calloc((size_t)prof.size, sizeof *counts);
        displs = calloc((size_t)prof.size, sizeof *displs);
    }
    PMPI_Gather(&count, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    size_t total = 0;
    if (prof.rank == 0)
        for (int r = 0; r < prof.size; r++) {
            displs[r] = (int)total;
            total += (size_t)counts[r];
        }
    char *all = prof.rank == 0 ? malloc(total + 1) : NULL;
    PMPI_Gatherv(mine, count, MPI_CHAR, all, counts, displs, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (prof.rank == 0 && all) {
        all[total] = 0;
        merge(out, all, counts, displs, prof.size);
        out->text = all;            /* the rows point into it */
    }
    free(mine);
    free(counts);
    free(displs);
}

void prof_sites_free(struct prof_sites *s)
{
    free(s->rows);
    free(s->text);
}
