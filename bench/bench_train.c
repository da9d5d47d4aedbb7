/* bench_train.c: training throughput (target tokens per second) of one decoder training step
 * (forward + backward + Adam-free: the step's FLOPs are in forward/backward) at the shipped size:
 * batch 32, 7x7x1280 annotations, vocabulary 2500, E = H = A = 512, caption lengths as in Flickr8k,
 * five captions per photo (training batches hold whole photos; GROUP=0 gives every caption its own).
 * bench/train.sh runs this next to tools/torch_decoder.py --bench in the same run.
 * ATTENTION=dot (any score of decoder.h) and HEADS=N time another attention.
 * Usage: bench_train [seconds] [E H A V B] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "attncap/decoder.h"

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 10;
    int E = argc > 2 ? atoi(argv[2]) : 512, H = argc > 3 ? atoi(argv[3]) : 512, A = argc > 4 ? atoi(argv[4]) : 512;
    int V = argc > 5 ? atoi(argv[5]) : 2500, B = argc > 6 ? atoi(argv[6]) : 32;
    ac_decoder_config c = {.vocab = V, .embed = E, .hidden = H, .att = A, .dim = 1280, .n_ann = 49, .grid_h = 7,
                           .grid_w = 7, .dropout = 0.5f, .lambda = 1.0f,
                           .attention = getenv("ATTENTION") ? ac_decoder_attention_parse(getenv("ATTENTION")) : 0,
                           .heads = getenv("HEADS") ? atoi(getenv("HEADS")) : 0};
    ac_decoder dec;
    ac_err err;
    if (ac_decoder_init(&dec, &c, 1, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
    float *ann = malloc(sizeof(float) * 49 * 1280 * B);
    for (size_t i = 0; i < (size_t)49 * 1280 * B; i++) ann[i] = (float)((i * 2654435761u >> 7) % 1000) / 500.0f;
    const float **annp = malloc(sizeof(float *) * B);
    int *len = malloc(sizeof(int) * B), *words = malloc(sizeof(int) * B * 40);
    /* Flickr8k-like lengths: 11.8 words on average (+1 for <end>), sorted descending. */
    /* Five captions per photo, as Flickr8k and COCO batches of whole photos have (GROUP=0: one each). */
    const int per_photo = getenv("GROUP") && !atoi(getenv("GROUP")) ? 1 : 5;
    for (int i = 0; i < B; i++) {
        annp[i] = ann + (size_t)(i % ((B + per_photo - 1) / per_photo)) * 49 * 1280;
        len[i] = 1 + 20 - (i * 14) / B;
    }
    for (int i = 0; i < B * 40; i++) words[i] = 4 + (i * 7919) % (V - 4);
    ac_dec_batch bt = {.B = B, .len = len, .words = words, .stride = 40, .ann = annp};
    const int threads = ac_default_threads(), shards = getenv("SHARDS") ? atoi(getenv("SHARDS")) : 2;
    ac_set_threads(shards > 1 ? 1 : threads);
    ac_dec_pool *w = ac_dec_pool_new(&c, shards, threads, B, 40);
    float *grad = malloc(sizeof(float) * dec.n_params);
    ac_dec_stats st;
    ac_dec_pool_forward_backward(w, &dec, &bt, 1, 1, grad, &st, &err); /* warm up */
    double t0 = ac_now(), t, c0 = (double)clock() / CLOCKS_PER_SEC;
    long toks = 0;
    int steps = 0;
    do {
        if (ac_dec_pool_forward_backward(w, &dec, &bt, 1, (unsigned)steps, grad, &st, &err))
            return fprintf(stderr, "%s\n", err.msg), 1;
        toks += st.ntok, steps++;
        t = ac_now() - t0;
    } while (t < secs);
    double cpu = (double)clock() / CLOCKS_PER_SEC - c0;
    printf("attncap   train step: %d steps, %.0f target tokens/s, %.0f per CPU-second (batch %d, E=H=A=%d/%d/%d, V=%d, %d threads, %d shards, %d captions/photo, %s x%d)\n", steps,
           toks / t, toks / cpu, B, E, H, A, V, threads, shards, per_photo, ac_decoder_attention_name(c.attention),
           c.heads > 1 ? c.heads : 1);
    return 0;
}
