/* Leaving nothing behind on Ctrl-C. Outputs are written to temporaries named "<name>.tmp.<pid>"
 * (files by ac_atomic_open, a photo's overlay folder by ac_overlays_write) and renamed into place when
 * complete. When SIGINT, SIGTERM or SIGHUP arrives, the handler installed here erases the progress
 * bar, removes every entry of this process's "*.tmp.<pid>" in the directories a command registered
 * (a folder with the files in it), and dies of the same signal (exit status 128 + N), so a shell or
 * a scheduler sees an interruption, and a rerun finds no leftovers. Error paths remove their own
 * temporaries in the library.
 *
 * The registry is the CLI's only mutable global state: a signal handler can reach nothing else. */
#ifndef ATTNCAP_CLI_CLEANUP_H
#define ATTNCAP_CLI_CLEANUP_H

/* Installs the handler (once, from main). */
void cli_cleanup_install(void);
/* Registers the directory that holds path's temporaries: path itself if is_dir, else its parent.
 * The directory need not exist yet. At most 16 are kept (more are ignored). */
void cli_cleanup_watch(const char *path, int is_dir);
/* A folder being completed in place (a photo's overlay folder, renamed into place, whose caption.json
 * is still being written): the handler removes it whole, so a folder that exists is complete and a
 * rerun redoes the photo. NULL when there is none. One at a time; copied. */
void cli_cleanup_unit(const char *dir);
/* A line the handler writes on stderr after the cleanup (what to run next; NULL: none). Kept as given. */
void cli_cleanup_hint(const char *line);

#endif
