/* attncap classify: placeholder until its issue lands. */
#include <stdio.h>

#include "commands.h"

int cmd_classify(int argc, char **argv) {
    (void)argc, (void)argv;
    fprintf(stderr, "attncap classify: not implemented yet\n");
    return 2;
}
