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
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
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

/* Programs run other programs through the whole exec family, and glibc's execvp, execl* and
 * posix_spawn* call its internal execve, not this one: each is interposed too, so a wrapper run
 * for real (env, timeout, script, ...) is traced like the shells. */
static int search_path(const char *file, char *out, size_t cap) {
    if (strchr(file, '/') != NULL) {
        if (strlen(file) >= cap) return -1;
        strcpy(out, file);
        return 0;
    }
    const char *path = getenv("PATH");
    if (path == NULL) path = "/bin:/usr/bin";
    while (*path) {
        const char *end = strchr(path, ':');
        size_t len = end ? (size_t)(end - path) : strlen(path);
        if (len + strlen(file) + 2 <= cap) {
            memcpy(out, path, len);
            out[len] = '/';
            strcpy(out + len + 1, file);
            if (access(out, X_OK) == 0) return 0;
        }
        if (!end) break;
        path = end + 1;
    }
    return -1;
}

int execvpe(const char *file, char *const argv[], char *const envp[]) {
    char path[PATH_MAX];
    if (search_path(file, path, sizeof path) != 0) {
        record(file, argv);
        errno = ENOENT;
        return -1;
    }
    return execve(path, argv, envp);
}

int execvp(const char *file, char *const argv[]) { return execvpe(file, argv, environ); }

int execv(const char *path, char *const argv[]) { return execve(path, argv, environ); }

#define MAX_ARGS 4096
static int collect(const char *first, va_list ap, char **argv) {
    int n = 0;
    argv[n++] = (char *)first;
    while (n < MAX_ARGS) {
        char *a = va_arg(ap, char *);
        argv[n++] = a;
        if (a == NULL) return n;
    }
    argv[MAX_ARGS - 1] = NULL;
    return n;
}

int execl(const char *path, const char *arg, ...) {
    char *argv[MAX_ARGS];
    va_list ap;
    va_start(ap, arg);
    collect(arg, ap, argv);
    va_end(ap);
    return execve(path, argv, environ);
}

int execlp(const char *file, const char *arg, ...) {
    char *argv[MAX_ARGS];
    va_list ap;
    va_start(ap, arg);
    collect(arg, ap, argv);
    va_end(ap);
    return execvpe(file, argv, environ);
}

int execle(const char *path, const char *arg, ...) {
    char *argv[MAX_ARGS];
    va_list ap;
    va_start(ap, arg);
    collect(arg, ap, argv);
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    return execve(path, argv, envp);
}

int fexecve(int fd, char *const argv[], char *const envp[]) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    return execve(path, argv, envp);
}

/* A spawned program is an exec in a child: the child records it and, unless it is passed,
 * exits with the traced status. */
static int spawn(pid_t *pid, const char *path, char *const argv[], char *const envp[]) {
    pid_t child = fork();
    if (child < 0) return errno;
    if (child == 0) {
        execve(path, argv, envp);
        _exit(127);
    }
    if (pid != NULL) *pid = child;
    return 0;
}

int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions,
                const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
    (void)actions;
    (void)attr;
    return spawn(pid, path, argv, envp);
}

int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *actions,
                 const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
    (void)actions;
    (void)attr;
    char path[PATH_MAX];
    if (search_path(file, path, sizeof path) != 0) {
        record(file, argv);
        return ENOENT;
    }
    return spawn(pid, path, argv, envp);
}
