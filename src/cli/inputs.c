/* Inputs of the commands: see inputs.h. */
#include "inputs.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "messages.h"

int cli_strv_push(cli_strv *s, const char *x) {
    if (s->n == s->cap) {
        int nc = s->cap ? s->cap * 2 : 64;
        char **nv = realloc(s->v, (size_t)nc * sizeof *nv);
        if (!nv) return -1;
        s->v = nv, s->cap = nc;
    }
    if (!(s->v[s->n] = strdup(x))) return -1;
    s->n++;
    return 0;
}

void cli_strv_free(cli_strv *s) {
    for (int i = 0; i < s->n; i++) free(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof *s);
}

/* a/b, as base's ac_path_join (no second slash after a trailing one); malloc'd, NULL when a or b
 * is NULL or out of memory */
static char *path_join(const char *a, const char *b) {
    if (!a || !b) return NULL;
    const size_t n = strlen(a) + strlen(b) + 2;
    char *s = malloc(n);
    if (s) snprintf(s, n, !*a || a[strlen(a) - 1] == '/' ? "%s%s" : "%s/%s", a, b);
    return s;
}

/* strerror(e) with its first letter lowercase, as the messages are */
static const char *sys_err(int e) {
    static char buf[128];
    snprintf(buf, sizeof buf, "%s", strerror(e));
    if (buf[0] >= 'A' && buf[0] <= 'Z' && !(buf[1] >= 'A' && buf[1] <= 'Z')) buf[0] = (char)(buf[0] - 'A' + 'a');
    return buf;
}

int cli_is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int cli_mkdirs(const char *path, ac_err *err) {
    char buf[4096];
    if (strlen(path) >= sizeof buf) return cli_errf(err, "%s: path too long", path);
    strcpy(buf, path);
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p) continue;
        const char c = *p;
        *p = 0;
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return cli_errf(err, "%s: cannot create directory: %s", buf, sys_err(errno));
        if (!cli_is_dir(buf)) return cli_errf(err, "%s: exists and is not a directory", buf);
        *p = c;
        if (!c) return 0;
    }
}

int cli_check_writable_dir(const char *dir, ac_err *err) {
    char *at = strdup(dir && *dir ? dir : ".");
    if (!at) return cli_errf(err, "out of memory");
    struct stat st;
    int made_of = 0; /* at is an ancestor of dir */
    while (stat(at, &st) != 0) {
        if (errno != ENOENT) {
            free(at);
            return cli_errf(err, "%s: cannot be written (%s)", dir, sys_err(errno));
        }
        char *slash = strrchr(at, '/');
        while (slash && slash > at && slash[1] == 0) *slash = 0, slash = strrchr(at, '/'); /* "a/b/" */
        if (!slash) strcpy(at, ".");
        else if (slash == at) at[1] = 0;
        else *slash = 0;
        made_of = 1;
    }
    int rc = 0;
    if (!S_ISDIR(st.st_mode))
        rc = cli_errf(err, "%s: cannot be written (%s%s is not a directory)", dir, made_of ? "" : "it", made_of ? at : "");
    else {
        const size_t n = strlen(at) + 32;
        char *probe = malloc(n);
        int fd = -1;
        if (probe) snprintf(probe, n, "%s/.attncap-probe-XXXXXX", at), fd = mkstemp(probe);
        if (!probe) rc = cli_errf(err, "out of memory");
        else if (fd < 0) rc = cli_errf(err, "%s: cannot be written (%s: %s)", dir, at, sys_err(errno));
        else close(fd), unlink(probe);
        free(probe);
    }
    free(at);
    return rc;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int cli_is_image_name(const char *n) {
    const char *dot = strrchr(n, '.');
    if (!dot || n[0] == '.') return 0;
    static const char *ext[] = {"jpg", "jpeg", "png", "bmp", "gif", "webp", "tif", "tiff"};
    for (size_t i = 0; i < sizeof ext / sizeof *ext; i++)
        if (!strcasecmp(dot + 1, ext[i])) return 1;
    return 0;
}

/* The directories a walk has entered, by identity. */
typedef struct seen_dirs {
    struct {
        dev_t dev;
        ino_t ino;
    } *v;
    int n, cap;
} seen_dirs;

/* 1 if (dev, ino) was seen before, else records it and returns 0; -1 when out of memory. */
static int seen_before(seen_dirs *s, const struct stat *st) {
    for (int i = 0; i < s->n; i++)
        if (s->v[i].dev == st->st_dev && s->v[i].ino == st->st_ino) return 1;
    if (s->n == s->cap) {
        int nc = s->cap ? 2 * s->cap : 32;
        void *nv = realloc(s->v, (size_t)nc * sizeof *s->v);
        if (!nv) return -1;
        s->v = nv, s->cap = nc;
    }
    s->v[s->n].dev = st->st_dev, s->v[s->n].ino = st->st_ino;
    s->n++;
    return 0;
}

/* A regular file that is not a photo: counted by its extension ("(none)" without one). */
static void skip_file(cli_walk_skips *sk, const char *name) {
    const char *dot = strrchr(name, '.');
    char ext[16];
    snprintf(ext, sizeof ext, "%s", dot && dot[1] ? dot : "(no extension)");
    for (char *c = ext; *c; c++) *c = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
    for (int k = 0; k < sk->kinds; k++)
        if (!strcmp(sk->ext[k], ext)) {
            sk->n_ext[k]++;
            return;
        }
    if (sk->kinds == 8) sk->other++;
    else snprintf(sk->ext[sk->kinds], sizeof sk->ext[0], "%s", ext), sk->n_ext[sk->kinds++] = 1;
}

static int walk(const char *dir, const struct stat *dst, seen_dirs *seen, cli_strv *out, cli_walk_skips *sk, ac_err *err) {
    int s = seen_before(seen, dst);
    if (s) return s < 0 ? cli_errf(err, "out of memory") : (sk->again++, 0);
    DIR *d = opendir(dir);
    if (!d) return cli_errf(err, "%s: cannot read directory", dir);
    cli_strv names = {0};
    struct dirent *e;
    int rc = 0;
    while (!rc && (e = readdir(d))) {
        if (e->d_name[0] != '.') rc = cli_strv_push(&names, e->d_name) ? cli_errf(err, "out of memory") : 0;
        else sk->hidden += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    }
    closedir(d);
    if (names.n) qsort(names.v, (size_t)names.n, sizeof *names.v, cmp_str);
    for (int i = 0; i < names.n && !rc; i++) {
        char *p = path_join(dir, names.v[i]);
        struct stat st;
        if (!p) rc = cli_errf(err, "out of memory");
        else if (stat(p, &st) != 0) sk->dangling++; /* a dangling link, or gone since: not a photo */
        else if (S_ISDIR(st.st_mode)) rc = walk(p, &st, seen, out, sk, err);
        else if (S_ISFIFO(st.st_mode)) sk->fifos++;
        else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) sk->devices++;
        else if (S_ISSOCK(st.st_mode)) sk->sockets++;
        else if (!cli_is_image_name(names.v[i])) skip_file(sk, names.v[i]);
        else if (cli_strv_push(out, p)) rc = cli_errf(err, "out of memory");
        free(p);
    }
    cli_strv_free(&names);
    return rc;
}

int cli_walk_photos_counted(const char *dir, cli_strv *out, cli_walk_skips *sk, ac_err *err) {
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) return cli_errf(err, "%s: not a directory", dir);
    seen_dirs seen = {0};
    const int n0 = out->n;
    const int rc = walk(dir, &st, &seen, out, sk, err);
    free(seen.v);
    return rc ? -1 : out->n - n0;
}

int cli_walk_photos(const char *dir, cli_strv *out, ac_err *err) {
    cli_walk_skips sk = {0};
    return cli_walk_photos_counted(dir, out, &sk, err);
}

int cli_walk_skips_text(const cli_walk_skips *sk, char *buf, size_t n) {
    size_t l = 0;
    int total = 0;
    buf[0] = 0;
#define ADD(count, ...)                                                                      \
    if ((count) > 0 && l + 1 < n) {                                                          \
        l += (size_t)snprintf(buf + l, n - l, "%s", l ? ", " : "");                          \
        if (l + 1 < n) l += (size_t)snprintf(buf + l, n - l, __VA_ARGS__);                   \
        total += (count);                                                                    \
    }
    for (int k = 0; k < sk->kinds; k++) ADD(sk->n_ext[k], "%d %s", sk->n_ext[k], sk->ext[k]);
    ADD(sk->other, "%d other file%s", sk->other, sk->other > 1 ? "s" : "");
    ADD(sk->hidden, "%d hidden", sk->hidden);
    ADD(sk->fifos, "%d FIFO%s", sk->fifos, sk->fifos > 1 ? "s" : "");
    ADD(sk->devices, "%d device%s", sk->devices, sk->devices > 1 ? "s" : "");
    ADD(sk->sockets, "%d socket%s", sk->sockets, sk->sockets > 1 ? "s" : "");
    ADD(sk->dangling, "%d dangling link%s", sk->dangling, sk->dangling > 1 ? "s" : "");
    ADD(sk->again, "%d director%s already walked", sk->again, sk->again > 1 ? "ies" : "y");
#undef ADD
    if (l >= n) buf[n - 1] = 0;
    return total;
}

int cli_read_list(FILE *f, const char *name, const char *root, cli_strv *out, ac_err *err) {
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int n = 0, rc = 0, lineno = 0;
    while (!rc && (len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        char *p = line, *end = line + len;
        if (memchr(p, 0, (size_t)len)) {
            rc = cli_errf(err, "%s:%d: NUL byte in a path", name, lineno);
            break;
        }
        while (end > p && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t')) end--;
        while (p < end && (*p == ' ' || *p == '\t')) p++;
        *end = 0;
        if (p == end || *p == '#') continue;
        char *full = root && *p != '/' ? path_join(root, p) : NULL;
        if ((root && *p != '/' && !full) || cli_strv_push(out, full ? full : p)) rc = cli_errf(err, "out of memory");
        free(full);
        n++;
    }
    free(line);
    return rc ? -1 : n;
}

int cli_keep_share(const char *share, cli_strv *paths, ac_err *err) {
    unsigned char *keep = malloc((size_t)paths->n + 1);
    if (!keep) return cli_errf(err, "out of memory");
    int n = 0;
    if (ac_shard_select(share, (const char *const *)paths->v, paths->n, keep, NULL, NULL, err)) {
        free(keep);
        return -1;
    }
    for (int i = 0; i < paths->n; i++) {
        if (keep[i]) paths->v[n++] = paths->v[i];
        else free(paths->v[i]);
    }
    paths->n = n;
    free(keep);
    return 0;
}
