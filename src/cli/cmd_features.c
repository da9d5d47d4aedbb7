/* attncap features: placeholder until its issue lands. */
#include <stdio.h>

#include "commands.h"

int cmd_features(int argc, char **argv) {
    (void)argc, (void)argv;
    fprintf(stderr, "attncap features: not implemented yet\n");
    return 2;
}
