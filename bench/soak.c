/* bench/soak: hours of work in one process, no growth (issue 35, section 2). Captions the shared COCO
 * photos (the .jpg files of ../shared/data/coco/images and coco_extra/images, 408) PASSES times over through the stable API
 * (ac_caption_file with AC_KEEP_PHOTO, then ac_result_write_overlays into a temp folder whose photo
 * folder is deleted at once), and every SAMPLE photos reads the process's resident memory (VmRSS),
 * its open file descriptors (/proc/self/fd) and threads (/proc/self/status). Prints one line per
 * sample and a verdict: RSS within 5 % of its value at the first sample, fds and threads equal to
 * theirs. Not a timed test: run by bench/soak.sh, results in bench/HISTORY.md.
 *
 * usage: soak [PHOTOS_TOTAL] [SAMPLE]   default 10200 (25 passes over 408) and 500
 * The model: $ATTNCAP_MODEL or the search of ac_captioner_open (the repo's model, its encoder). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "attncap/attncap.h"

static int cmp_s(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* VmRSS and Threads of /proc/self/status (kB, count). */
static void status(long *rss_kb, int *threads) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    *rss_kb = -1, *threads = -1;
    while (f && fgets(line, sizeof line, f)) {
        if (!strncmp(line, "VmRSS:", 6)) *rss_kb = atol(line + 6);
        if (!strncmp(line, "Threads:", 8)) *threads = atoi(line + 8);
    }
    if (f) fclose(f);
}

static int open_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n - 1; /* the one opendir holds */
}

static double now(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return tv.tv_sec + tv.tv_usec * 1e-6;
}

int main(int argc, char **argv) {
    const long total = argc > 1 ? atol(argv[1]) : 10200;
    const long every = argc > 2 ? atol(argv[2]) : 500;
    const char *shared = getenv("ATTNCAP_DATA") ? getenv("ATTNCAP_DATA") : "../shared";
    char **photos = NULL;
    int n = 0, cap = 0;
    const char *sets[] = {"coco", "coco_extra"};
    for (int s = 0; s < 2; s++) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/data/%s/images", shared, sets[s]);
        DIR *d = opendir(dir);
        for (struct dirent *e; d && (e = readdir(d));) {
            size_t l = strlen(e->d_name);
            if (l < 5 || strcmp(e->d_name + l - 4, ".jpg")) continue;
            if (n == cap) photos = realloc(photos, sizeof *photos * (size_t)(cap = 2 * cap + 64));
            photos[n] = malloc(strlen(dir) + l + 2);
            sprintf(photos[n++], "%s/%s", dir, e->d_name);
        }
        if (d) closedir(d);
    }
    if (!n) return printf("soak: no photos in %s/data/coco*/images: skipped\n", shared), 0;
    qsort(photos, (size_t)n, sizeof *photos, cmp_s);
    char tmp[] = "/tmp/attncap-soak-XXXXXX";
    if (!mkdtemp(tmp)) return perror("mkdtemp"), 1;
    ac_err err;
    ac_captioner *c;
    if (ac_captioner_open(getenv("ATTNCAP_MODEL"), NULL, &c, &err)) return fprintf(stderr, "soak: %s\n", err.msg), 1;
    printf("# soak: %ld captions of %d photos (%.1f passes), overlays into %s, a sample every %ld; model %s\n",
           total, n, (double)total / n, tmp, every, ac_model_path(ac_captioner_model(c)));
    printf("# %8s %10s %8s %5s %7s %9s %s\n", "photos", "rss_kB", "vs_first", "fds", "threads", "photos/s", "overlays");
    fflush(stdout);
    long rss0 = -1, rss_max = 0, rss_min = 0, errors = 0, overlays = 0;
    int fds0 = -1, thr0 = -1, fd_changes = 0, thr_changes = 0;
    double t0 = now(), tw = t0;
    for (long i = 0; i < total; i++) {
        ac_result *r;
        const char *p = photos[i % n];
        if (ac_caption_file(c, p, AC_KEEP_PHOTO, &r, &err)) {
            fprintf(stderr, "soak: %s\n", err.msg);
            errors++;
        } else {
            char stem[32];
            snprintf(stem, sizeof stem, "p%ld", i);
            if (ac_result_write_overlays(c, r, tmp, stem, 0, &err)) fprintf(stderr, "soak: %s\n", err.msg), errors++;
            else overlays += r->n_overlays;
            char cmd[4200];
            snprintf(cmd, sizeof cmd, "%s/%s", tmp, stem);
            DIR *d = opendir(cmd); /* delete as it goes: the folder's files, then the folder */
            for (struct dirent *e; d && (e = readdir(d));) {
                if (e->d_name[0] == '.') continue;
                char f[4500];
                snprintf(f, sizeof f, "%s/%s", cmd, e->d_name);
                unlink(f);
            }
            if (d) closedir(d);
            rmdir(cmd);
            ac_result_free(r);
        }
        if ((i + 1) % every == 0 || i + 1 == total) {
            long rss;
            int thr, fds = open_fds();
            status(&rss, &thr);
            if (rss0 < 0) rss0 = rss_min = rss_max = rss, fds0 = fds, thr0 = thr;
            if (rss > rss_max) rss_max = rss;
            if (rss < rss_min) rss_min = rss;
            fd_changes += fds != fds0, thr_changes += thr != thr0;
            double t = now();
            printf("  %8ld %10ld %+7.2f%% %5d %7d %9.2f %ld\n", i + 1, rss, 100.0 * (rss - rss0) / rss0, fds, thr,
                   (i + 1) % every ? 0 : every / (t - tw), overlays);
            fflush(stdout);
            tw = t;
        }
    }
    ac_captioner_close(c);
    rmdir(tmp);
    double dev = 100.0 * (rss_max - rss0 > rss0 - rss_min ? rss_max - rss0 : rss0 - rss_min) / rss0;
    int ok = dev <= 5.0 && !fd_changes && !thr_changes && !errors;
    printf("# %ld captions in %.0f s (%.2f photos/s), %ld overlay files, %ld errors; RSS %ld kB at the first sample, "
           "%ld..%ld kB after (max deviation %.2f %%), fds %d (changed at %d samples), threads %d (changed at %d)\n",
           total, now() - t0, total / (now() - t0), overlays, errors, rss0, rss_min, rss_max, dev, fds0, fd_changes, thr0,
           thr_changes);
    printf("%s: RSS within 5 %% of the first sample's, fds and threads constant, no error\n", ok ? "PASS" : "FAIL");
    for (int i = 0; i < n; i++) free(photos[i]);
    free(photos);
    return ok ? 0 : 1;
}
