/* tool_view.h: a core tool (ac_tool, attncap.h) run from a command: its flags read as the tool's options
 * (cli_parse_job with cli_tool_job), its report printed on stdout as it comes, its notes on stderr as
 * "attncap CMD: ...", its progress as a bar (none when quiet or not a terminal). */
#ifndef ATTNCAP_CLI_TOOL_VIEW_H
#define ATTNCAP_CLI_TOOL_VIEW_H
#include "attncap/attncap.h"
#include "options.h"

/* The tool's options for cli_parse_job. */
cli_job_opts cli_tool_job(ac_tool *t);
/* Runs t; returns the command's exit status: 0, 1 (it failed: the message printed; or a note said a
 * problem) or 2 (options that do not go together). label: the bar's. */
int cli_tool_run(const char *cmd, ac_tool *t, const char *label, int quiet);
#endif
