/* Hardware counters through PAPI, optional twice: at build time (papi.h, Debian libpapi-dev:
 * without it this file only says "built without PAPI") and at run time (libpapi is dlopen'ed,
 * not linked, so the profiler loads where PAPI is missing; where the counters cannot be read,
 * e.g. a VM without a virtual PMU, the report says why instead of failing).
 *
 * Events: MPIOPT_PROFILE_PAPI=EV1,EV2,… (PAPI names, at most PROF_PAPI_MAX), default
 * PAPI_TOT_CYC,PAPI_TOT_INS,PAPI_L1_DCM; counted from MPI_Init to MPI_Finalize. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "profile.h"

struct prof_papi prof_papi;

#ifdef MPIOPT_HAVE_PAPI_H
#include <papi.h>

static struct {
    int (*library_init)(int);
    int (*create_eventset)(int *);
    int (*add_named_event)(int, const char *);
    int (*start)(int);
    int (*stop)(int, long long *);
    char *(*strerror)(int);
    int (*num_components)(void);                             /* optional: for the reason */
    const PAPI_component_info_t *(*get_component_info)(int);
} papi;
static int eventset = PAPI_NULL;

static int unavailable(const char *fmt, const char *what)
{
    snprintf(prof_papi.reason, sizeof prof_papi.reason, fmt, what);
    prof_papi.nevents = 0;
    return -1;
}

static int load(void)
{
    void *lib = dlopen("libpapi.so.7", RTLD_NOW | RTLD_GLOBAL);
    if (!lib)
        lib = dlopen("libpapi.so", RTLD_NOW | RTLD_GLOBAL);
    if (!lib)
        return unavailable("libpapi cannot be loaded (%s)", dlerror());
    papi.library_init = (int (*)(int))dlsym(lib, "PAPI_library_init");
    papi.create_eventset = (int (*)(int *))dlsym(lib, "PAPI_create_eventset");
    papi.add_named_event = (int (*)(int, const char *))dlsym(lib, "PAPI_add_named_event");
    papi.start = (int (*)(int))dlsym(lib, "PAPI_start");
    papi.stop = (int (*)(int, long long *))dlsym(lib, "PAPI_stop");
    papi.strerror = (char *(*)(int))dlsym(lib, "PAPI_strerror");
    papi.num_components = (int (*)(void))dlsym(lib, "PAPI_num_components");
    papi.get_component_info =
        (const PAPI_component_info_t *(*)(int))dlsym(lib, "PAPI_get_component_info");
    if (!papi.library_init || !papi.create_eventset || !papi.add_named_event || !papi.start ||
        !papi.stop || !papi.strerror)
        return unavailable("%s lacks PAPI functions", "libpapi");
    return 0;
}

/* Why PAPI's perf_event component is off, as "; PAPI's perf_event component is disabled: ...",
 * or "": on a virtual machine without a PMU, libpfm4 finds no default PMU and PAPI then disables
 * the component, software events (perf::TASK-CLOCK) included. */
static const char *perf_event_disabled(void)
{
    static char text[160];
    int n = papi.num_components ? papi.num_components() : 0;
    for (int i = 0; i < n && papi.get_component_info; i++) {
        const PAPI_component_info_t *c = papi.get_component_info(i);
        if (c && c->disabled && !strcmp(c->name, "perf_event")) {
            snprintf(text, sizeof text, "; PAPI's perf_event component is disabled: %.100s",
                     c->disabled_reason);
            return text;
        }
    }
    return "";
}

void prof_papi_start(void)
{
    const char *list = getenv("MPIOPT_PROFILE_PAPI");
    if (!list || !*list)
        list = "PAPI_TOT_CYC,PAPI_TOT_INS,PAPI_L1_DCM";
    if (strcmp(list, "none") == 0) {
        unavailable("%s", "turned off (MPIOPT_PROFILE_PAPI=none)");
        return;
    }
    if (load() != 0)
        return;
    int rc = papi.library_init(PAPI_VER_CURRENT);
    if (rc != PAPI_VER_CURRENT) {
        unavailable("PAPI_library_init failed (%s)", rc > 0 ? "version mismatch" : papi.strerror(rc));
        return;
    }
    if ((rc = papi.create_eventset(&eventset)) != PAPI_OK) {
        unavailable("PAPI_create_eventset failed (%s)", papi.strerror(rc));
        return;
    }
    char names[256];
    snprintf(names, sizeof names, "%s", list);
    for (char *save = NULL, *ev = strtok_r(names, ",", &save); ev; ev = strtok_r(NULL, ",", &save)) {
        if (prof_papi.nevents == PROF_PAPI_MAX)
            break;
        if ((rc = papi.add_named_event(eventset, ev)) != PAPI_OK) {
            char what[256];
            snprintf(what, sizeof what, "%.40s: %.80s%s", ev, papi.strerror(rc),
                     perf_event_disabled());
            unavailable("cannot count %s", what);
            return;
        }
        snprintf(prof_papi.names[prof_papi.nevents++], PROF_PAPI_NAME, "%s", ev);
    }
    if (!prof_papi.nevents) {
        unavailable("%s", "no events in MPIOPT_PROFILE_PAPI");
        return;
    }
    if ((rc = papi.start(eventset)) != PAPI_OK) {
        unavailable("PAPI_start failed (%s)", papi.strerror(rc));
        return;
    }
    prof_papi.running = 1;
}

void prof_papi_stop(void)
{
    if (!prof_papi.running)
        return;
    prof_papi.running = 0;
    int rc = papi.stop(eventset, prof_papi.values);
    if (rc != PAPI_OK)
        unavailable("PAPI_stop failed (%s)", papi.strerror(rc));
    else
        prof_papi.available = 1;
}

#else

void prof_papi_start(void)
{
    snprintf(prof_papi.reason, sizeof prof_papi.reason, "built without PAPI (no papi.h: install libpapi-dev and rebuild)");
}

void prof_papi_stop(void)
{
}

#endif
