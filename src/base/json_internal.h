/* json_internal.h: JSON helpers shared by the data-set readers and the evaluation inputs. */
#ifndef ATTNCAP_JSON_INTERNAL_H
#define ATTNCAP_JSON_INTERNAL_H
#include <cjson/cJSON.h>
#include <stddef.h>

#include "attncap/common.h"

/* Reads and parses a JSON file (within the file-size limit); errors name the file and line. */
cJSON *ac_json_parse_file(const char *path, ac_err *err);
/* An id as text: integral numbers without a decimal point, non-empty strings as they are. -1 if neither. */
int ac_json_id_text(const cJSON *v, char *buf, size_t n);

struct ac_object_scores;
/* The object scores (objects_score.c): the summary, the novel counts when set, and the counts of
 * every category when per_category. */
cJSON *ac_object_scores_json(const struct ac_object_scores *o, int per_category);
/* Photo i's objects: {"candidate": [...], "truth": [...], "hallucinated": [...], "missed": [...]}. */
cJSON *ac_object_image_json(const struct ac_object_scores *o, int i);
#endif
