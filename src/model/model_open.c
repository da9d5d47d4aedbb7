/* model_open.c: a model for captioning, found where the CLI finds it (model.h). Apart from model.c so
 * that reading the file format needs no knowledge of where files are. */
#include <stdlib.h>

#include "attncap/locate.h"
#include "attncap/model.h"

int ac_model_init_at(const char *path, ac_model *m, ac_err *err) {
    if (ac_model_load_for_captions(path, m, err)) return -1;
    if (ac_decoder_use_f16(&m->dec) < 0) {
        ac_model_free(m);
        return ac_errf(err, "out of memory");
    }
    return 0;
}

int ac_model_init(const char *model_flag, ac_model *m, ac_err *err) {
    char *path = NULL;
    if (ac_find_model(model_flag, &path, err)) return -1;
    const int rc = ac_model_init_at(path, m, err);
    free(path);
    return rc;
}
