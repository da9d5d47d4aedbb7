/* Captions photos with attncap's library and says where the model looked for each word.
 * Builds as C or C++:  cc caption_photos.c $(pkg-config --cflags --libs attncap)
 * Run:  ./a.out PHOTO...   (the model: $ATTNCAP_MODEL, else models/ here or beside the program) */
#include <attncap/attncap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    ac_err err;
    ac_captioner cap;
    /* NULL, NULL: search for the model, and for the encoder it was trained with (checked by SHA-256);
     * or give their paths. 0 threads: all cores. */
    if (ac_captioner_open(&cap, NULL, NULL, 0, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        ac_image photo;
        ac_caption c;
        memset(&photo, 0, sizeof photo);
        memset(&c, 0, sizeof c);
        if (ac_image_load(argv[i], &photo, &err) || ac_captioner_run(&cap, &photo, &c, NULL, NULL, &err)) {
            fprintf(stderr, "%s\n", err.msg); /* one line naming the file and the problem */
            rc = 1;
        } else {
            char *text = ac_caption_text(&c, cap.model.vocab);
            printf("%s: %s (log-probability %.2f)\n", argv[i], text, c.logprob);
            for (int w = 0; w < c.n; w++) { /* alpha: each word's attention over the grid_h x grid_w cells */
                const float *a = c.alpha + (size_t)w * cap.L;
                int best = 0;
                for (int l = 1; l < cap.L; l++)
                    if (a[l] > a[best]) best = l;
                printf("  %-12s row %2d col %2d (%.0f%% of the attention)\n", ac_caption_word(&c, cap.model.vocab, w),
                       best / cap.grid_w, best % cap.grid_w, 100 * a[best]);
            }
            free(text);
        }
        ac_caption_free(&c);
        ac_image_free(&photo);
    }
    ac_captioner_close(&cap);
    return rc;
}
