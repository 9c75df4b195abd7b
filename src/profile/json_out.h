/* JSON output shared by the profiler's report (report.c) and the trace converter
 * (tools/otf2_chrome.c). */
#ifndef MPIOPT_PROFILE_JSON_OUT_H
#define MPIOPT_PROFILE_JSON_OUT_H

#include <stdio.h>

/* s as a JSON string: quotes and backslashes escaped, control characters as \uXXXX */
static inline void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

#endif
