/* attncap eval: placeholder until its issue lands. */
#include <stdio.h>

#include "commands.h"

int cmd_eval(int argc, char **argv) {
    (void)argc, (void)argv;
    fprintf(stderr, "attncap eval: not implemented yet\n");
    return 2;
}
