/* decoder_pool.c: the decoder's forward and backward over a batch in data-parallel shards (decoder.h,
 * ac_dec_pool). The batch is cut into a fixed number of shards, whole photos to a shard, balanced by
 * tokens (see assign_shards; each shard stays sorted by length); each shard runs the whole
 * forward/backward (decoder_train.c) in its own thread with single-threaded BLAS, and the gradients
 * are combined as the full batch's: grad = sum_s N_s grad_s / N. The shard count, not the thread
 * count, defines the arithmetic, so results do not depend on threads. This is faster than one
 * multi-threaded BLAS call at a time: no thread hand-off inside the recurrence, and the elementwise
 * work (attention, gates) runs on every core. */
#pragma GCC optimize("O3")
#include <stdlib.h>
#include <string.h>

#include "attncap/decoder.h"
#include "decoder_internal.h"
#include "pool.h"
#include "alloc_internal.h"

struct ac_dec_pool {
    int shards, threads;
    float *pack;
    ac_dec_work **w;
    float **g; /* [shards - 1] extra gradient buffers (shard 0 writes the caller's) */
    size_t n_params;
    float *dctx; /* [shards, D]: each shard's dctx_sum */
    int dim;
};

ac_dec_pool *ac_dec_pool_new(const ac_decoder_config *cfg, int shards, int threads, int max_B, int max_T) {
    if (shards < 1) shards = 1;
    ac_dec_pool *p = ac_calloc(1, sizeof *p);
    if (!p) return NULL;
    p->shards = shards, p->threads = threads < 1 ? 1 : threads;
    ac_dec_tensor t[AC_DEC_MAX_TENSORS];
    ac_decoder_tensors(cfg, t, &p->n_params);
    p->w = ac_calloc((size_t)shards, sizeof *p->w);
    p->g = ac_calloc((size_t)shards, sizeof *p->g);
    p->pack = ac_malloc(sizeof(float) * ac_dec_pack_size(cfg));
    p->dim = cfg->dim;
    p->dctx = ac_malloc(sizeof(float) * (size_t)shards * (size_t)cfg->dim);
    if (!p->w || !p->g || !p->pack || !p->dctx) goto fail;
    for (int s = 0; s < shards; s++) {
        if (!(p->w[s] = ac_dec_work_new(cfg, (max_B + shards - 1) / shards, max_T))) goto fail;
        if (s && !(p->g[s] = ac_malloc(sizeof(float) * p->n_params))) goto fail;
    }
    return p;
fail:
    ac_dec_pool_free(p);
    return NULL;
}

void ac_dec_pool_free(ac_dec_pool *p) {
    if (!p) return;
    for (int s = 0; s < p->shards; s++) {
        if (p->w) ac_dec_work_free(p->w[s]);
        if (p->g) free(p->g[s]);
    }
    free(p->w), free(p->g), free(p->pack), free(p->dctx), free(p);
}

typedef struct shard_job {
    const ac_decoder *dec;
    ac_dec_work *w;
    ac_dec_batch b;
    int len[4096], nval[4096], nreg[4096];
    const unsigned char *rcat[4096];
    const float *rscore[4096];
    float weight[4096];
    const float *ann[4096];
    int *words; /* [n, stride] */
    int train;
    uint64_t seed;
    float *grad;
    ac_dec_stats st;
    int rc;
    ac_err err;
} shard_job;

/* Task s of the forward/backward: shard s, on its own work buffers and gradient. */
static void shard_task(void *arg, int s, int thread) {
    (void)thread;
    shard_job *j = (shard_job *)arg + s;
    j->rc = j->b.B ? ac_decoder_forward_backward(j->dec, j->w, &j->b, j->train, j->seed, j->grad, &j->st, &j->err) : 0;
}

/* Combining the shards' gradients, grad = sum_s (N_s / N) grad_s, in n_slices slices of the
 * parameters (each element is computed the same way whatever slice it falls in). */
typedef struct combine_job {
    const shard_job *jobs;
    int n_shards, n_slices;
    const ac_dec_pool *p;
    float *grad;
} combine_job;

static void combine_task(void *arg, int t, int thread) {
    (void)thread;
    const combine_job *cj = arg;
    long ntok = 0;
    for (int s = 0; s < cj->n_shards; s++) ntok += cj->jobs[s].st.ntok;
    const size_t n = cj->p->n_params, i0 = n * (size_t)t / (size_t)cj->n_slices,
                 i1 = n * (size_t)(t + 1) / (size_t)cj->n_slices;
    float *restrict g = cj->grad;
    const float k0 = (float)cj->jobs[0].st.ntok / ntok;
    for (size_t i = i0; i < i1; i++) g[i] *= k0;
    for (int s = 1; s < cj->n_shards; s++) {
        if (cj->jobs[s].st.ntok == 0) continue; /* an empty shard wrote no gradient */
        const float *restrict gs = cj->p->g[s];
        const float ks = (float)cj->jobs[s].st.ntok / ntok;
        for (size_t i = i0; i < i1; i++) g[i] += ks * gs[i];
    }
}

/* Shard assignment: whole photos (their captions share W_a a), largest photos first, each to the
 * shard with the fewest tokens so far (ties: lower shard). Within a shard the batch order is kept, so
 * each shard is still sorted by length. Deterministic. */
static void assign_shards(const ac_dec_batch *b, int S, int *shard_of) {
    int *img = ac_malloc(sizeof(int) * (size_t)b->B * 3);
    if (!img) { /* fall back to interleaving */
        for (int i = 0; i < b->B; i++) shard_of[i] = i % S;
        return;
    }
    int *tok = img + b->B, *order = tok + b->B, U = 0;
    for (int i = 0; i < b->B; i++) {
        int u = 0;
        while (u < U && b->ann[order[u]] != b->ann[i]) u++;
        if (u == U) order[U] = i, tok[U] = 0, U++;
        img[i] = u, tok[u] += b->len[i];
    }
    int ord[4096], ush[4096];
    long load[64] = {0};
    for (int u = 0; u < U; u++) ord[u] = u;
    for (int a = 1; a < U; a++) { /* insertion sort by tokens descending, stable */
        int k = ord[a], j = a - 1;
        while (j >= 0 && tok[ord[j]] < tok[k]) ord[j + 1] = ord[j], j--;
        ord[j + 1] = k;
    }
    for (int a = 0; a < U; a++) {
        int best = 0;
        for (int s = 1; s < S; s++)
            if (load[s] < load[best]) best = s;
        ush[ord[a]] = best, load[best] += tok[ord[a]];
    }
    for (int i = 0; i < b->B; i++) shard_of[i] = ush[img[i]];
    free(img);
}

int ac_dec_pool_forward_backward(ac_dec_pool *p, const ac_decoder *dec, const ac_dec_batch *b, int train,
                                 unsigned long long seed, float *grad, ac_dec_stats *st, ac_err *err) {
    if (b->B > 4096) return ac_errf(err, "decoder batch: over 4096 captions");
    const int S = p->shards < b->B ? p->shards : b->B;
    shard_job *jobs = ac_calloc((size_t)S, sizeof *jobs);
    int *shard_of = ac_malloc(sizeof(int) * (size_t)b->B), *words = ac_malloc(sizeof(int) * (size_t)b->B * b->stride + 1);
    if (!jobs || !shard_of || !words) {
        free(jobs), free(shard_of), free(words);
        return ac_errf(err, "out of memory");
    }
    const float *pk[4];
    ac_dec_pack_weights(dec, p->pack, pk);
    for (int s = 0; s < S; s++) ac_dec_work_use_packed(p->w[s], pk);
    assign_shards(b, S, shard_of);
    int *wp = words;
    for (int s = 0; s < S; s++) {
        shard_job *j = &jobs[s];
        j->dec = dec, j->w = p->w[s], j->train = train, j->grad = grad ? (s ? p->g[s] : grad) : NULL;
        j->seed = ac_mix64(seed + (uint64_t)s * 0x9E3779B97F4A7C15ull);
        j->words = wp;
        int n = 0;
        for (int i = 0; i < b->B; i++) {
            if (shard_of[i] != s) continue;
            j->len[n] = b->len[i], j->ann[n] = b->ann[i], j->nval[n] = b->n_valid ? b->n_valid[i] : 0;
            j->nreg[n] = b->n_regions ? b->n_regions[i] : 0, j->rcat[n] = b->region_cat ? b->region_cat[i] : NULL;
            j->rscore[n] = b->region_score ? b->region_score[i] : NULL;
            j->weight[n] = b->weight ? b->weight[i] : 1.0f;
            memcpy(wp, b->words + (size_t)i * b->stride, sizeof(int) * (size_t)b->stride);
            wp += b->stride, n++;
        }
        j->b = (ac_dec_batch){n, j->len, j->words, b->stride, j->ann, b->dctx_sum ? p->dctx + (size_t)s * p->dim : NULL,
                              b->baseline, b->n_valid ? j->nval : NULL, b->n_regions ? j->nreg : NULL,
                              b->region_cat ? j->rcat : NULL, b->region_score ? j->rscore : NULL,
                              b->weight ? j->weight : NULL};
    }
    /* The shards in parallel (single-threaded BLAS inside each: ac_parallel_for holds it so). */
    ac_parallel_for(S, p->threads, shard_task, jobs);
    int rc = 0;
    ac_dec_stats tot = {0};
    for (int s = 0; s < S; s++) {
        if (jobs[s].rc) {
            if (err) *err = jobs[s].err;
            rc = -1;
            break;
        }
        const ac_dec_stats *t = &jobs[s].st;
        tot.ce_sum += t->ce_sum, tot.pen_sum += t->pen_sum, tot.switch_sum += t->switch_sum, tot.ntok += t->ntok;
        tot.weighted_sum += t->weighted_sum;
        tot.hard_captions += t->hard_captions, tot.hard_ntok += t->hard_ntok, tot.hard_ce_sum += t->hard_ce_sum;
        tot.ent_sum += t->ent_sum, tot.score_sum += t->score_sum;
    }
    if (!rc) {
        const ac_decoder_config *c = &dec->cfg;
        tot.loss = (tot.weighted_sum + c->lambda * tot.pen_sum - c->entropy * tot.ent_sum + c->reinforce * tot.score_sum) /
                   tot.ntok;
        if (st) *st = tot;
        if (grad && S > 1) {
            const int T2 = p->threads < 64 ? p->threads : 64;
            combine_job cj = {jobs, S, T2, p, grad};
            ac_parallel_for(T2, T2, combine_task, &cj);
        }
        if (grad && b->dctx_sum) { /* combined as the gradient: sum_s (N_s / N) dctx_s */
            memset(b->dctx_sum, 0, sizeof(float) * (size_t)p->dim);
            for (int s = 0; s < S; s++) {
                if (jobs[s].st.ntok == 0) continue;
                const float ks = (float)jobs[s].st.ntok / tot.ntok;
                for (int d = 0; d < p->dim; d++) b->dctx_sum[d] += ks * p->dctx[(size_t)s * p->dim + d];
            }
        }
    }
    free(jobs), free(shard_of), free(words);
    return rc;
}
