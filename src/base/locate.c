/* locate.c: where models, encoders and the shared data are. The one module that reads the
 * environment (ATTNCAP_MODEL, ATTNCAP_ENCODER, ATTNCAP_DATA, XDG_DATA_HOME, HOME) or the executable's
 * path to find files: everything else takes paths. */
#include "attncap/locate.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "locate_internal.h"
#include "alloc_internal.h"

/* Where `make install` puts the model and its companions: the Makefile compiles in its
 * $(PREFIX)/share/attncap. */
#ifndef AC_DATADIR
#define AC_DATADIR "/usr/local/share/attncap"
#endif

/* The installed data directories, in search order: the user's ($XDG_DATA_HOME/attncap, else
 * ~/.local/share/attncap), then the install prefix's. Returns how many (at most 2). */
static int data_homes(char dirs[2][PATH_MAX]) {
    int n = 0;
    const char *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
    if (xdg && *xdg == '/') snprintf(dirs[n++], PATH_MAX, "%.4000s/attncap", xdg);
    else if (home && *home) snprintf(dirs[n++], PATH_MAX, "%.4000s/.local/share/attncap", home);
    snprintf(dirs[n++], PATH_MAX, "%s", AC_DATADIR);
    return n;
}

const char *ac_env(const char *name) {
    const char *s = getenv(name);
    return s && *s ? s : NULL;
}

char *ac_find_data_dir(void) {
    const char *env = getenv("ATTNCAP_DATA");
    if (env && *env) return ac_is_dir(env) ? ac_strdup(env) : NULL;
    if (ac_is_dir("../shared")) return realpath("../shared", NULL);
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return NULL;
    exe[n] = 0;
    /* Walk up from the executable: build/attncap -> repo -> ../shared. */
    for (int depth = 0; depth < 5; depth++) {
        char *slash = strrchr(exe, '/');
        if (!slash || slash == exe) break;
        *slash = 0;
        char *cand = ac_path_join(exe, "../shared");
        if (cand && ac_is_dir(cand)) {
            char *real = realpath(cand, NULL);
            free(cand);
            return real;
        }
        free(cand);
    }
    return NULL;
}

char *ac_data_file(const char *rel, const char *what, ac_err *err) {
    char *d = ac_find_data_dir();
    if (!d) {
        ac_errc(err, AC_ERR_NO_ENCODER, "no %s given and no data directory found for %s (set ATTNCAP_DATA)", what, rel);
        return NULL;
    }
    char *p = ac_path_join(d, rel);
    free(d);
    if (!p) ac_errf(err, "out of memory");
    return p;
}

/* Directories to search for models/: the current one, the executable's and up to 3 parents. */
static int search_dirs(char dirs[5][PATH_MAX]) {
    int n = 0;
    if (getcwd(dirs[n], PATH_MAX)) n++;
    char exe[PATH_MAX];
    ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (l <= 0) return n;
    exe[l] = 0;
    for (int up = 0; up < 4 && n < 5; up++) {
        char *sl = strrchr(exe, '/');
        if (!sl || sl == exe) break;
        *sl = 0;
        snprintf(dirs[n++], PATH_MAX, "%s", exe);
    }
    return n;
}

int ac_find_model(const char *flag, char **path, ac_err *err) {
    *path = NULL;
    const char *env = getenv("ATTNCAP_MODEL");
    const char *given = flag ? flag : env && *env ? env : NULL;
    if (given) {
        if (!ac_is_file(given))
            return ac_errf(err, "%s: model not found%s", given, flag ? "" : " (from ATTNCAP_MODEL)");
        *path = ac_strdup(given);
        return *path ? 0 : ac_errf(err, "out of memory");
    }
    char dirs[5][PATH_MAX];
    int nd = search_dirs(dirs);
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < nd; i++) {
            char md[PATH_MAX + 8];
            snprintf(md, sizeof md, "%.4000s/models", dirs[i]);
            if (pass == 0) {
                char *p = ac_path_join(md, AC_DEFAULT_MODEL_NAME);
                if (p && ac_is_file(p)) return *path = p, 0;
                free(p);
                continue;
            }
            /* the only *.safetensors in models/ */
            DIR *d = opendir(md);
            if (!d) continue;
            struct dirent *e;
            char *found = NULL;
            int count = 0;
            while ((e = readdir(d))) {
                size_t l = strlen(e->d_name);
                if (l > 12 && !strcmp(e->d_name + l - 12, ".safetensors") && e->d_name[0] != '.') {
                    count++;
                    free(found);
                    found = ac_path_join(md, e->d_name);
                }
            }
            closedir(d);
            if (count == 1 && found && ac_is_file(found)) return *path = found, 0;
            free(found);
        }
    char homes[2][PATH_MAX];
    int nh = data_homes(homes);
    for (int i = 0; i < nh; i++) {
        char *p = ac_path_join(homes[i], AC_DEFAULT_MODEL_NAME);
        if (p && ac_is_file(p)) return *path = p, 0;
        free(p);
    }
    return ac_errc(err, AC_ERR_NO_MODEL, "no model found: give its path or set ATTNCAP_MODEL (looked for models/%s "
                        "in the current directory and beside the executable, then in %s and %s)", AC_DEFAULT_MODEL_NAME,
                   homes[0], nh > 1 ? homes[1] : AC_DATADIR);
}

int ac_encoder_sha_check(const char *path, const char *file, const char *sha256, ac_err *err) {
    if (!sha256[0]) return 0;
    char hex[65];
    if (ac_sha256_file(path, hex, err)) return -1;
    if (strcmp(hex, sha256))
        return ac_errf(err, "%s: SHA-256 %.12s... differs from the model's encoder %s (%.12s...): refusing a "
                            "different encoder (get the right one with `make models`)", path, hex,
                       file[0] ? file : "(unnamed)", sha256);
    return 0;
}

/* Where a file a model works with is looked for, in order: beside the model, in models/ of the
 * search directories, in the installed data directories, in ../shared/encoders. Returns how many. */
static int companion_candidates(const char *model_path, const char *file, char cand[10][PATH_MAX + 300]) {
    int nc = 0;
    if (model_path) { /* beside the model */
        snprintf(cand[nc], sizeof cand[nc], "%s", model_path);
        char *sl = strrchr(cand[nc], '/');
        if (sl) sl[1] = 0;
        else strcpy(cand[nc], "./");
        strncat(cand[nc], file, sizeof cand[nc] - strlen(cand[nc]) - 1);
        nc++;
    }
    char dirs[5][PATH_MAX];
    int nd = search_dirs(dirs);
    for (int i = 0; i < nd && nc < 6; i++) snprintf(cand[nc++], sizeof cand[0], "%.4000s/models/%.255s", dirs[i], file);
    char homes[2][PATH_MAX];
    int nh = data_homes(homes);
    for (int i = 0; i < nh && nc < 9; i++) snprintf(cand[nc++], sizeof cand[0], "%.4000s/%.255s", homes[i], file);
    char *data = ac_find_data_dir();
    if (data && nc < 10) snprintf(cand[nc++], sizeof cand[0], "%s/encoders/%s", data, file);
    free(data);
    return nc;
}

/* check: hash the file here (else the caller compares the hash ac_encoder_open computes anyway). */
int ac_locate_encoder(const char *flag, const char *model_path, const char *file, const char *sha256, int check,
                      char **path, ac_err *err) {
    *path = NULL;
    const char *env = getenv("ATTNCAP_ENCODER");
    const char *given = flag ? flag : env && *env ? env : NULL;
    if (given) {
        if (!ac_is_file(given))
            return ac_errf(err, "%s: encoder not found%s", given, flag ? "" : " (from ATTNCAP_ENCODER)");
        if (check && ac_encoder_sha_check(given, file, sha256, err)) return -1;
        *path = ac_strdup(given);
        return *path ? 0 : ac_errf(err, "out of memory");
    }
    if (!file[0]) return ac_errc(err, AC_ERR_NO_ENCODER, "the model records no encoder file name: give the encoder's path");
    char cand[10][PATH_MAX + 300];
    const int nc = companion_candidates(model_path, file, cand);
    for (int i = 0; i < nc; i++) {
        if (!ac_is_file(cand[i])) continue;
        if (check && ac_encoder_sha_check(cand[i], file, sha256, err)) return -1;
        *path = ac_strdup(cand[i]);
        return *path ? 0 : ac_errf(err, "out of memory");
    }
    return ac_errc(err, AC_ERR_NO_ENCODER, "encoder %s not found (looked beside the model, in models/, the installed data directories and "
                        "../shared/encoders): run `make models`, "
                        "give its path or set ATTNCAP_ENCODER", file);
}

int ac_find_companion(const char *flag, const char *env_name, const char *model_path, const char *file, char **path,
                      ac_err *err) {
    *path = NULL;
    const char *env = env_name ? getenv(env_name) : NULL;
    const char *given = flag ? flag : env && *env ? env : NULL;
    if (given) {
        if (!ac_is_file(given)) return ac_errf(err, "%s: not found%s%s%s", given, flag ? "" : " (from ", flag ? "" : env_name, flag ? "" : ")");
        *path = ac_strdup(given);
        return *path ? 0 : ac_errf(err, "out of memory");
    }
    char cand[10][PATH_MAX + 300];
    const int nc = companion_candidates(model_path, file, cand);
    for (int i = 0; i < nc; i++)
        if (ac_is_file(cand[i])) {
            *path = ac_strdup(cand[i]);
            return *path ? 0 : ac_errf(err, "out of memory");
        }
    return ac_errf(err, "%s not found (looked beside the model, in models/, the installed data directories and "
                        "../shared/encoders): run `make models`, give its path%s%s", file, env_name ? " or set " : "",
                   env_name ? env_name : "");
}
