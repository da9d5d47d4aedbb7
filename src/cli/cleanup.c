/* Temporaries removed on a signal: see cleanup.h. Everything the handler calls is async-signal-safe
 * (open, getdents64, unlinkat, close, write, sigaction, raise); the paths and the suffix are prepared
 * beforehand. */
#include "cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { MAX_WATCHED = 16 };
static char watched[MAX_WATCHED][PATH_MAX];
static volatile sig_atomic_t n_watched;
static char suffix[32]; /* ".tmp.<pid>" */
static const char *volatile hint; /* written after the cleanup */
static char unit[PATH_MAX];        /* cli_cleanup_unit's folder, when has_unit */
static volatile sig_atomic_t has_unit;
static size_t suffix_len;
static int stderr_tty;

struct dirent64_raw { /* what getdents64 returns */
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

static int is_ours(const char *name) {
    size_t l = strlen(name);
    return l > suffix_len && !memcmp(name + l - suffix_len, suffix, suffix_len);
}

/* Removes the entries of dfd that pred accepts (all when pred is NULL); a directory with its files.
 * Removing while listing may hide entries from the listing, so it goes over the directory again until
 * a pass removes nothing (at most 4 passes). */
static void remove_entries(int dfd, int (*pred)(const char *), int depth) {
    for (int pass = 0; pass < 4; pass++) {
        int removed = 0;
        char buf[8192];
        long n;
        lseek(dfd, 0, SEEK_SET);
        while ((n = syscall(SYS_getdents64, dfd, buf, sizeof buf)) > 0) {
            for (long off = 0; off < n;) {
                struct dirent64_raw *d = (struct dirent64_raw *)(buf + off);
                off += d->d_reclen;
                const char *name = d->d_name;
                if (!strcmp(name, ".") || !strcmp(name, "..") || (pred && !pred(name))) continue;
                if (unlinkat(dfd, name, 0) == 0) {
                    removed++;
                } else if ((errno == EISDIR || errno == EPERM) && depth < 2) {
                    int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                    if (sub >= 0) {
                        remove_entries(sub, NULL, depth + 1);
                        close(sub);
                    }
                    if (unlinkat(dfd, name, AT_REMOVEDIR) == 0) removed++;
                }
            }
        }
        if (!removed) break;
    }
}

/* The other threads (CNN lanes, overlay writers, decoding threads) must stop writing before the
 * temporaries are removed, or a file made after the sweep would stay: each gets park_signal, whose
 * handler never returns, and the process ends with them parked. */
static int park_signal;

static void park(int sig) {
    (void)sig;
    for (;;) pause();
}

static void park_other_threads(void) {
    const long self = syscall(SYS_gettid);
    const pid_t pid = getpid();
    int dfd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return;
    char buf[4096];
    long n;
    int parked = 0;
    while ((n = syscall(SYS_getdents64, dfd, buf, sizeof buf)) > 0)
        for (long off = 0; off < n;) {
            struct dirent64_raw *d = (struct dirent64_raw *)(buf + off);
            off += d->d_reclen;
            long tid = 0;
            const char *c = d->d_name;
            if (*c < '0' || *c > '9') continue;
            for (; *c >= '0' && *c <= '9'; c++) tid = 10 * tid + (*c - '0');
            if (tid != self && syscall(SYS_tgkill, pid, tid, park_signal) == 0) parked++;
        }
    close(dfd);
    if (parked) { /* a moment for them to take the signal (a system call in progress ends first) */
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

static void on_signal(int sig) {
    const int saved = errno;
    park_other_threads();
    if (stderr_tty) {
        static const char erase[] = "\r\033[K"; /* the progress bar, if drawn */
        if (write(STDERR_FILENO, erase, sizeof erase - 1) < 0) { /* nothing to do */
        }
    }
    for (int i = 0; i < n_watched; i++) {
        int dfd = open(watched[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0) continue;
        remove_entries(dfd, is_ours, 0);
        close(dfd);
    }
    if (has_unit) {
        int dfd = open(unit, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd >= 0) {
            remove_entries(dfd, NULL, 1);
            close(dfd);
            rmdir(unit);
        }
    }
    const char *h = hint;
    if (h && write(STDERR_FILENO, h, strlen(h)) < 0) { /* nothing to do */
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigaction(sig, &sa, NULL);
    errno = saved;
    raise(sig); /* blocked until the handler returns; then the default action ends the process */
}

void cli_cleanup_install(void) {
    snprintf(suffix, sizeof suffix, ".tmp.%d", (int)getpid());
    suffix_len = strlen(suffix);
    stderr_tty = isatty(STDERR_FILENO);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigfillset(&sa.sa_mask); /* one handler at a time: a second Ctrl-C waits for the first cleanup */
    park_signal = SIGRTMIN + 2;
    struct sigaction pa;
    memset(&pa, 0, sizeof pa);
    pa.sa_handler = park;
    sigfillset(&pa.sa_mask);
    sigaction(park_signal, &pa, NULL);
    sigdelset(&sa.sa_mask, park_signal);
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
        struct sigaction old;
        /* a signal ignored by whoever started us (nohup, a background job) stays ignored */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
        sigaction(sigs[i], &sa, NULL);
    }
}

void cli_cleanup_watch(const char *path, int is_dir) {
    if (!path || n_watched >= MAX_WATCHED) return;
    char dir[PATH_MAX];
    if (is_dir) {
        snprintf(dir, sizeof dir, "%s", path);
    } else {
        const char *slash = strrchr(path, '/');
        if (!slash) snprintf(dir, sizeof dir, ".");
        else if (slash == path) snprintf(dir, sizeof dir, "/");
        else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    }
    if (strlen(dir) >= sizeof watched[0]) return;
    for (int i = 0; i < n_watched; i++)
        if (!strcmp(watched[i], dir)) return;
    memcpy(watched[n_watched], dir, strlen(dir) + 1);
    n_watched = n_watched + 1; /* the path is complete before the handler can see it */
}

void cli_cleanup_unit(const char *dir) {
    has_unit = 0;
    if (!dir || strlen(dir) >= sizeof unit) return;
    memcpy(unit, dir, strlen(dir) + 1);
    has_unit = 1; /* the path is complete before the handler can see it */
}

void cli_cleanup_hint(const char *line) { hint = line; }
