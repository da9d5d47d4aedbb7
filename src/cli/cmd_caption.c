/* attncap caption: placeholder until its issue lands. */
#include <stdio.h>

#include "commands.h"

int cmd_caption(int argc, char **argv) {
    (void)argc, (void)argv;
    fprintf(stderr, "attncap caption: not implemented yet\n");
    return 2;
}
