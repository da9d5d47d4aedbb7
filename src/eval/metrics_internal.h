/* metrics_internal.h (internal): word interning shared by the metric modules. */
#ifndef ATTNCAP_METRICS_INTERNAL_H
#define ATTNCAP_METRICS_INTERNAL_H
#include "strmap.h"

/* Splits s on runs of spaces (Python's str.split()) and maps each word to an id in m (new words get
 * the next id). Returns a malloc'd array (never NULL unless out of memory) and its length in *len. */
int *ac_metric_words(ac_strmap *m, const char *s, int *len);
#endif
