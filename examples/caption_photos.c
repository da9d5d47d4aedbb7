/* Captions photos with attncap's library and says where the model looked for each word.
 * Builds as C or C++:  cc caption_photos.c $(pkg-config --cflags --libs attncap)
 * Run:  ./a.out PHOTO...   (the model: $ATTNCAP_MODEL, else models/ here or beside the program) */
#include <attncap/attncap.h>
#include <stdio.h>

int main(int argc, char **argv) {
    ac_err err;
    ac_captioner *cap;
    /* NULL: search for the model (and the encoder it was trained with, checked by SHA-256);
     * NULL options: caption exactly as `attncap caption` does. */
    if (ac_captioner_open(NULL, NULL, &cap, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        ac_result *r;
        if (ac_caption_file(cap, argv[i], 0, &r, &err)) {
            fprintf(stderr, "%s\n", err.msg); /* one line naming the file and the problem */
            rc = 1;
            continue;
        }
        printf("%s: %s (log-probability %.2f)\n", argv[i], r->text, r->logprob);
        const int cells = r->grid_h * r->grid_w;
        for (int w = 0; w < r->n_words; w++) { /* each word's attention over the grid_h x grid_w cells */
            const float *a = r->attention + (size_t)w * cells;
            int best = 0;
            for (int l = 1; l < cells; l++)
                if (a[l] > a[best]) best = l;
            printf("  %-12s row %2d col %2d (%.0f%% of the attention)\n", r->words[w], best / r->grid_w,
                   best % r->grid_w, 100 * a[best]);
        }
        ac_result_free(r);
    }
    ac_captioner_close(cap);
    return rc;
}
