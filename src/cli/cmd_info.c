/* attncap info: placeholder until its issue lands. */
#include <stdio.h>

#include "commands.h"

int cmd_info(int argc, char **argv) {
    (void)argc, (void)argv;
    fprintf(stderr, "attncap info: not implemented yet\n");
    return 2;
}
