/*
 * An execve interposer for the differential shell test (differential_tests.rs). Loaded with
 * LD_PRELOAD into the real shell (bash, dash), it records every program the shell is about to
 * execute and then, instead of executing it, exits with FERRITE_TRACE_STATUS: nothing a fuzzed
 * command names ever runs. Only the shells themselves (FERRITE_TRACE_PASS, a ':'-separated list
 * of real paths) are executed for real, with the tracing variables put back into their
 * environment, so `sh -c '...'` and `bash -c '...'` are traced inside too.
 *
 * A record is one write(2) to FERRITE_TRACE_LOG (O_APPEND): a u32 count of strings, then each
 * string as a u32 length and its bytes (little-endian): the path, then argv.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KEEP 5
static const char *keep_names[KEEP] = {
    "LD_PRELOAD", "FERRITE_TRACE_LOG", "FERRITE_TRACE_STATUS", "FERRITE_TRACE_PASS",
    "BASH_FUNC_command_not_found_handle%%",
};
static char *kept[KEEP];

__attribute__((constructor)) static void save_environment(void) {
    for (int i = 0; i < KEEP; i++) {
        const char *v = getenv(keep_names[i]);
        if (v == NULL) continue;
        size_t n = strlen(keep_names[i]) + strlen(v) + 2;
        kept[i] = malloc(n);
        if (kept[i] != NULL) {
            strcpy(kept[i], keep_names[i]);
            strcat(kept[i], "=");
            strcat(kept[i], v);
        }
    }
}

static int is_kept(const char *entry) {
    for (int i = 0; i < KEEP; i++) {
        size_t n = strlen(keep_names[i]);
        if (strncmp(entry, keep_names[i], n) == 0 && entry[n] == '=') return 1;
    }
    return 0;
}

/* The tracing settings as they were when the shell started: a command cannot unset them. */
static const char *kept_value(const char *name) {
    size_t n = strlen(name);
    for (int i = 0; i < KEEP; i++)
        if (kept[i] != NULL && strncmp(kept[i], name, n) == 0 && kept[i][n] == '=')
            return kept[i] + n + 1;
    return NULL;
}

static size_t put(char *buf, size_t at, size_t cap, const char *s) {
    uint32_t n = (uint32_t)strlen(s);
    if (at + 4 + n > cap) return cap + 1;
    memcpy(buf + at, &n, 4);
    memcpy(buf + at + 4, s, n);
    return at + 4 + n;
}

static void record(const char *path, char *const argv[]) {
    const char *log = kept_value("FERRITE_TRACE_LOG");
    if (log == NULL) return;
    static char buf[1 << 20];
    uint32_t count = 1;
    while (argv != NULL && argv[count - 1] != NULL) count++;
    memcpy(buf, &count, 4);
    size_t at = put(buf, 4, sizeof buf, path);
    for (uint32_t i = 0; i + 1 < count && at <= sizeof buf; i++) at = put(buf, at, sizeof buf, argv[i]);
    if (at > sizeof buf) {
        /* Too long to record whole: record the path alone, flagged by a count of 0. */
        count = 0;
        memcpy(buf, &count, 4);
        at = put(buf, 4, sizeof buf, path);
    }
    int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return;
    ssize_t ignored = write(fd, buf, at);
    (void)ignored;
    close(fd);
}

static int passes(const char *path) {
    const char *pass = kept_value("FERRITE_TRACE_PASS");
    char real[PATH_MAX];
    if (pass == NULL || realpath(path, real) == NULL) return 0;
    size_t n = strlen(real);
    const char *p = pass;
    while (*p) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, real, n) == 0) return 1;
        if (!end) break;
        p = end + 1;
    }
    return 0;
}

int execve(const char *path, char *const argv[], char *const envp[]) {
    record(path, argv);
    if (!passes(path)) {
        const char *status = kept_value("FERRITE_TRACE_STATUS");
        _exit(status ? atoi(status) : 0);
    }
    size_t n = 0;
    while (envp != NULL && envp[n] != NULL) n++;
    char **env = malloc((n + KEEP + 1) * sizeof(char *));
    if (env == NULL) _exit(125);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!is_kept(envp[i])) env[k++] = envp[i];
    for (int i = 0; i < KEEP; i++)
        if (kept[i] != NULL) env[k++] = kept[i];
    env[k] = NULL;
    int (*real_execve)(const char *, char *const[], char *const[]) =
        (int (*)(const char *, char *const[], char *const[]))dlsym(RTLD_NEXT, "execve");
    if (real_execve == NULL) _exit(125);
    return real_execve(path, argv, env);
}
