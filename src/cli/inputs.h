/* The photos a command is given: files, directories walked for images, and lists of paths (a file or
 * stdin). Shared by the commands so they all treat their inputs alike:
 * - a directory is walked recursively, sorted, each directory once (by device and inode: a symlink
 *   back up the tree is not followed again), hidden names skipped, only regular files with an image
 *   extension kept (FIFOs, devices and sockets are skipped: reading one would hang or never end);
 * - a list has one path per line; surrounding spaces, tabs and CR are trimmed, blank lines and
 *   lines starting with '#' are skipped. */
#ifndef ATTNCAP_CLI_INPUTS_H
#define ATTNCAP_CLI_INPUTS_H
#include <stdio.h>

#include "attncap/attncap.h"

typedef struct cli_strv {
    char **v;
    int n, cap;
} cli_strv;
int cli_strv_push(cli_strv *s, const char *x); /* copies x; -1 when out of memory */
void cli_strv_free(cli_strv *s);

/* 1 if the name ends in .jpg .jpeg .png .bmp or .gif (any case) and is not hidden. */
int cli_is_image_name(const char *name);

/* Appends the photos under dir. Returns the number added, or -1 (err: a directory that cannot be
 * read, or out of memory). */
int cli_walk_photos(const char *dir, cli_strv *out, ac_err *err);

/* What a walk left out, by type: files by extension (the first 8 seen; the rest in other), hidden
 * names, FIFOs, devices, sockets, dangling links and directories reached again through a link. */
typedef struct cli_walk_skips {
    char ext[8][16];
    int n_ext[8], kinds, other, hidden, fifos, devices, sockets, dangling, again;
} cli_walk_skips;
/* cli_walk_photos, counting what it skips into *sk (added to it). */
int cli_walk_photos_counted(const char *dir, cli_strv *out, cli_walk_skips *sk, ac_err *err);
/* "2 .txt, 1 hidden, 1 FIFO" into buf (empty when nothing was skipped); returns how many were. */
int cli_walk_skips_text(const cli_walk_skips *sk, char *buf, size_t n);

/* 0 if files can be written in dir: dir itself when it exists (it must be a directory), else the
 * nearest ancestor that exists, where it would be made; checked by making and removing a file, so a
 * read-only file system is caught even for root. -1 with err naming dir otherwise. */
int cli_check_writable_dir(const char *dir, ac_err *err);

/* 1 if path is a directory (or a link to one). */
int cli_is_dir(const char *path);
/* mkdir -p: path and its missing parents; -1 with err naming the one that cannot be made or exists
 * and is not a directory. */
int cli_mkdirs(const char *path, ac_err *err);

/* Appends the paths listed in f (see above); relative ones under root when root is not NULL.
 * Returns the number added, or -1 (err) when out of memory or a line holds a NUL byte. */
int cli_read_list(FILE *f, const char *name, const char *root, cli_strv *out, ac_err *err);

/* --shard SPEC (ac_shard_select): only this task's share of paths stays, in order (the others freed). */
int cli_keep_share(const char *spec, cli_strv *paths, ac_err *err);
#endif
