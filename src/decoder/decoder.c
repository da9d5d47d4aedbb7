/* decoder.c: the decoders' parameters, initialisation and inference step, by kind: the soft-attention
 * LSTM's here (its step's arithmetic in lstm_step.c), the transformer's in transformer.c (decoder.h's
 * functions dispatch to it).
 * Training (batched forward + backward) lives in decoder_train.c; teacher forcing of a given caption
 * (its attention, its copy account) in teacher.c.
 *
 * The LSTM's
 * Parameter tensors (one float buffer, in this order):
 *   emb      [V, E]          word embeddings E
 *   att_wa   [D, A]  att_ba [A]   W_a, b_a: the keys W_a a_i + b_a (once per photo)
 *   att_wh   [H, A]  att_we [A]   W_h, w_e: e_ti = w_e . tanh(W_a a_i + b_a + W_h h)
 *                    (the additive score's; the other scores have a subset, general's att_wa is
 *                    [D, H], cosine adds att_logtau [1] after att_wh: see decoder.h)
 *   beta_w   [H]     beta_b [1]   the scalar gate beta = sigmoid(w_b . h + b_b)
 *   init_h_w [D, H]  init_h_b [H]  h_0 = tanh(mean(a) W + b)
 *   init_c_w [D, H]  init_c_b [H]  c_0 = tanh(mean(a) W + b)
 *   lstm_w   [E + D + H, 4H]  lstm_b [4H]   gates of [E y; z; h], order i f g o
 *   out_lh   [H, E]  out_lz [D, E]  out_lo [E, V]  out_bo [V]   deep output
 *   copy_w   [H + D] copy_b [1]   the copy gate (config.copy 1 only; copy.c)
 *   ptr_we   [K]  ptr_ws [H]  ptr_bs [1]   the pointer and its sentinel (config.copy 2 only)
 *   absent_b [AC_COPY_CATEGORIES]   the priors of unseen objects' words (config.absent only)
 *   obj_h, obj_c [AC_COPY_CATEGORIES, H]  the objects' share of h_0, c_0 (config.object_init only)
 * Row-vector convention: y = x W with x [rows] and W [rows, cols]. */
#pragma GCC optimize("O3")
#include "attncap/decoder.h"
#include "attncap/regions.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention_internal.h"
#include "copy_internal.h"
#include "decoder_internal.h"
#include "pool.h"
#include "transformer_internal.h"
#include "alloc_internal.h"

static const char *const kind_names[AC_DECODER_KIND_COUNT] = {"lstm", "transformer"};

static const char *const attention_names[AC_ATTENTION_COUNT] = {"additive", "dot", "scaled-dot", "general", "cosine"};

static const char *const mode_names[AC_ATTENTION_MODE_COUNT] = {"soft", "hard"};

/* The index of name in names [n], or -1. */
static int name_index(const char *const *names, int n, const char *name) {
    for (int i = 0; name && i < n; i++)
        if (!strcmp(name, names[i])) return i;
    return -1;
}

const char *ac_decoder_kind_name(int kind) { return kind >= 0 && kind < AC_DECODER_KIND_COUNT ? kind_names[kind] : NULL; }

int ac_decoder_kind_parse(const char *name) { return name_index(kind_names, AC_DECODER_KIND_COUNT, name); }

const char *ac_decoder_attention_name(int score) {
    return score >= 0 && score < AC_ATTENTION_COUNT ? attention_names[score] : NULL;
}

int ac_decoder_attention_parse(const char *name) { return name_index(attention_names, AC_ATTENTION_COUNT, name); }

const char *ac_decoder_attention_mode_name(int mode) {
    return mode >= 0 && mode < AC_ATTENTION_MODE_COUNT ? mode_names[mode] : NULL;
}

int ac_decoder_attention_mode_parse(const char *name) { return name_index(mode_names, AC_ATTENTION_MODE_COUNT, name); }

/* Every tensor an LSTM decoder can have, in buffer order; `has` (an AC_ATTENTION_HAS_ bit) marks the
 * attention tensors that only some score functions have, HAS_COPY those of config.copy. */
#define N_SPEC 26
#define HAS_COPY 0x100u
#define HAS_POINTER 0x200u
#define HAS_ABSENT 0x400u
#define HAS_OBJECT_INIT 0x800u
static int tensor_spec(const ac_decoder_config *c, ac_dec_tensor *t, unsigned *has) {
    const int V = c->vocab, E = c->embed, H = c->hidden, A = c->att, D = c->dim, K = ac_attention_key_dim(c);
    const struct { const char *name; int r, k; unsigned has; } spec[N_SPEC] = {
        {"emb", V, E, 0},        {"att_wa", D, K, 0},     {"att_ba", 1, A, AC_ATTENTION_HAS_BA},
        {"att_wh", H, A, AC_ATTENTION_HAS_WH}, {"att_we", 1, A, AC_ATTENTION_HAS_WE}, {"att_logtau", 1, 1, AC_ATTENTION_HAS_LOGTAU},
        {"beta_w", 1, H, 0},     {"beta_b", 1, 1, 0},     {"init_h_w", D, H, 0},   {"init_h_b", 1, H, 0},
        {"init_c_w", D, H, 0},   {"init_c_b", 1, H, 0},   {"lstm_w", E + D + H, 4 * H, 0},
        {"lstm_b", 1, 4 * H, 0}, {"out_lh", H, E, 0},     {"out_lz", D, E, 0},     {"out_lo", E, V, 0},
        {"out_bo", 1, V, 0},     {"copy_w", 1, H + D, HAS_COPY}, {"copy_b", 1, 1, HAS_COPY},
        {"ptr_we", 1, K, HAS_POINTER}, {"ptr_ws", 1, H, HAS_POINTER}, {"ptr_bs", 1, 1, HAS_POINTER},
        {"absent_b", 1, AC_COPY_CATEGORIES, HAS_ABSENT}, {"obj_h", AC_COPY_CATEGORIES, H, HAS_OBJECT_INIT},
        {"obj_c", AC_COPY_CATEGORIES, H, HAS_OBJECT_INIT},
    };
    for (int i = 0; i < N_SPEC; i++) {
        t[i] = (ac_dec_tensor){spec[i].name, spec[i].r, spec[i].k, 0};
        has[i] = spec[i].has;
    }
    return N_SPEC;
}

int ac_decoder_tensors(const ac_decoder_config *c, ac_dec_tensor *t, size_t *n_params) {
    if (c->decoder == AC_DECODER_TRANSFORMER) return ac_tf_tensors(c, t, n_params);
    ac_dec_tensor all[N_SPEC];
    unsigned has[N_SPEC];
    const unsigned mine = ac_attention_tensors(c->attention);
    size_t off = 0;
    int n = 0;
    for (int i = 0; i < tensor_spec(c, all, has); i++) {
        if (has[i] == HAS_COPY ? c->copy != 1
            : has[i] == HAS_POINTER ? c->copy != 2
            : has[i] == HAS_ABSENT ? !c->absent
            : has[i] == HAS_OBJECT_INIT ? !c->object_init
            : has[i] && !(has[i] & mine))
            continue;
        t[n] = all[i];
        t[n++].offset = off;
        off += (size_t)all[i].rows * (size_t)all[i].cols;
    }
    if (n_params) *n_params = off;
    return n;
}

int ac_decoder_check_config(const ac_decoder_config *c, ac_err *err) {
    ac_limits lim = ac_limits_get();
    if (c->vocab < 5 || (uint64_t)c->vocab > lim.max_vocab)
        return ac_errf(err, "vocabulary size %d out of range [5, %llu] (limit ATTNCAP_MAX_VOCAB)", c->vocab, (unsigned long long)lim.max_vocab);
    const struct { const char *n; int v, max; } d[] = {
        {"embed", c->embed, 8192}, {"hidden", c->hidden, 8192}, {"att", c->att, 8192},
        {"dim", c->dim, 16384},    {"grid_h", c->grid_h, 256},  {"grid_w", c->grid_w, 256},
    };
    for (size_t i = 0; i < sizeof d / sizeof *d; i++)
        if (d[i].v < 1 || d[i].v > d[i].max) return ac_errf(err, "%s = %d out of range [1, %d]", d[i].n, d[i].v, d[i].max);
    if (c->regions < 0 || c->regions > AC_REGIONS_MAX || !(c->region_scale >= 0 && c->region_scale < 1e6) ||
        !(c->region_min_score >= 0 && c->region_min_score <= 1))
        return ac_errf(err, "regions %d (at most %d), region_scale %g or region_min_score %g out of range", c->regions,
                       AC_REGIONS_MAX, c->region_scale, c->region_min_score);
    if (c->n_ann != c->grid_h * c->grid_w + c->regions)
        return ac_errf(err, "n_ann = %d but grid is %dx%d with %d regions", c->n_ann, c->grid_h, c->grid_w, c->regions);
    if (!(c->dropout >= 0 && c->dropout < 1)) return ac_errf(err, "dropout %g not in [0, 1)", c->dropout);
    if (!(c->lambda >= 0 && c->lambda < 1e6)) return ac_errf(err, "lambda %g out of range", c->lambda);
    if (!ac_decoder_attention_name(c->attention)) return ac_errf(err, "attention score %d unknown", c->attention);
    if (!ac_decoder_kind_name(c->decoder)) return ac_errf(err, "decoder kind %d unknown", c->decoder);
    if (!ac_decoder_attention_mode_name(c->attention_mode)) return ac_errf(err, "attention mode %d unknown", c->attention_mode);
    if (!(c->reinforce >= 0 && c->reinforce < 1e6) || !(c->entropy >= 0 && c->entropy < 1e6) ||
        !(c->expected >= 0 && c->expected <= 1))
        return ac_errf(err, "hard attention: reinforce %g, entropy %g or expected %g out of range", c->reinforce,
                       c->entropy, c->expected);
    if (c->decoder == AC_DECODER_TRANSFORMER && c->attention_mode != AC_ATTENTION_SOFT)
        return ac_errf(err, "hard attention is the LSTM decoder's: a transformer's attention is soft");
    if (c->copy && (c->copy < 0 || c->copy > 2 || c->decoder != AC_DECODER_LSTM || c->attention_mode != AC_ATTENTION_SOFT || c->regions < 1))
        return ac_errf(err, "copy is 0, 1 or 2, and needs an LSTM with soft attention and regions");
    if (c->absent && (c->absent != 1 || !c->copy)) return ac_errf(err, "absent is 0 or 1, and needs copy");
    if (c->object_init && (c->object_init != 1 || !c->copy)) return ac_errf(err, "object_init is 0 or 1, and needs copy");
    if (c->imagenet_words && (c->imagenet_words < 0 || c->imagenet_words > AC_COPY_CATEGORIES_MAX - AC_COPY_CATEGORIES || !c->copy))
        return ac_errf(err, "imagenet_words = %d: 0 to %d, and needs copy", c->imagenet_words,
                       AC_COPY_CATEGORIES_MAX - AC_COPY_CATEGORIES);
    const int heads = ac_attention_heads(c), K = ac_attention_key_dim(c);
    if (c->heads < 0 || c->heads > 64) return ac_errf(err, "heads = %d out of range [1, 64]", c->heads);
    if (c->decoder == AC_DECODER_TRANSFORMER) {
        if (ac_tf_check_config(c, err)) return -1;
        if (c->attention != AC_ATTENTION_SCALED_DOT)
            return ac_errf(err, "transformer attention is scaled-dot, not %s", ac_decoder_attention_name(c->attention));
        if (c->embed % heads) return ac_errf(err, "%d heads do not divide the transformer's width %d", heads, c->embed);
    } else if (c->layers) {
        return ac_errf(err, "an LSTM decoder has no layers (%d given)", c->layers);
    } else if (K % heads || c->dim % heads) {
        return ac_errf(err, "%d heads do not divide the attention width %d and the annotation size %d", heads, K, c->dim);
    }
    ac_dec_tensor t[AC_DEC_MAX_TENSORS];
    size_t n;
    ac_decoder_tensors(c, t, &n);
    if (n > lim.max_tensor_elems)
        return ac_errf(err, "decoder has %zu parameters, over the limit of %llu (raise ATTNCAP_MAX_TENSOR_ELEMS)", n,
                       (unsigned long long)lim.max_tensor_elems);
    return 0;
}

/* Points the tensor views into params (in tensor_spec's order); a tensor the score lacks stays NULL. */
static void bind(ac_decoder *dec) {
    if (dec->cfg.decoder == AC_DECODER_TRANSFORMER) { /* the tensors the trainer and a warm start know by name */
        const ac_tf_view v = ac_tf_view_of(&dec->cfg, dec->params);
        ac_dec_tensor t[AC_DEC_MAX_TENSORS];
        ac_tf_tensors(&dec->cfg, t, &dec->n_params);
        dec->emb = v.emb, dec->out_lo = v.out_w, dec->out_bo = v.out_b;
        return;
    }
    ac_dec_tensor all[N_SPEC], t[AC_DEC_MAX_TENSORS];
    unsigned has[N_SPEC];
    tensor_spec(&dec->cfg, all, has);
    const int n = ac_decoder_tensors(&dec->cfg, t, &dec->n_params);
    float **v[N_SPEC] = {&dec->emb,      &dec->att_wa,   &dec->att_ba,   &dec->att_wh,   &dec->att_we,
                         &dec->att_logtau, &dec->beta_w, &dec->beta_b,   &dec->init_h_w, &dec->init_h_b,
                         &dec->init_c_w, &dec->init_c_b, &dec->lstm_w,   &dec->lstm_b,   &dec->out_lh,
                         &dec->out_lz,   &dec->out_lo,   &dec->out_bo,   &dec->copy_w,   &dec->copy_b,
                         &dec->ptr_we,   &dec->ptr_ws,   &dec->ptr_bs,   &dec->absent_b, &dec->obj_h,
                         &dec->obj_c};
    for (int i = 0, k = 0; i < N_SPEC; i++) {
        const int mine = k < n && !strcmp(t[k].name, all[i].name);
        *v[i] = mine ? dec->params + t[k++].offset : NULL;
    }
}

int ac_decoder_alloc(ac_decoder *dec, const ac_decoder_config *cfg, ac_err *err) {
    memset(dec, 0, sizeof *dec);
    if (ac_decoder_check_config(cfg, err)) return -1;
    dec->cfg = *cfg;
    ac_dec_tensor t[AC_DEC_MAX_TENSORS];
    ac_decoder_tensors(cfg, t, &dec->n_params);
    dec->params = ac_calloc(dec->n_params, sizeof(float));
    if (!dec->params) return ac_errf(err, "out of memory for %zu decoder parameters", dec->n_params);
    bind(dec);
    return 0;
}

int ac_decoder_init(ac_decoder *dec, const ac_decoder_config *cfg, unsigned long long seed, ac_err *err) {
    if (ac_decoder_alloc(dec, cfg, err)) return -1;
    if (cfg->decoder == AC_DECODER_TRANSFORMER) {
        ac_tf_init(dec, seed);
        return 0;
    }
    ac_dec_tensor t[AC_DEC_MAX_TENSORS];
    const int nt = ac_decoder_tensors(cfg, t, NULL);
    uint64_t s = seed * 0x2545F4914F6CDD1Dull + 12345;
    for (int i = 0; i < nt; i++) {
        float *p = dec->params + t[i].offset;
        size_t n = (size_t)t[i].rows * t[i].cols;
        double r;
        if (!strcmp(t[i].name, "emb")) r = 0.1;                         /* small, as in arctic-captions */
        else if (!strcmp(t[i].name, "att_we") || !strcmp(t[i].name, "ptr_we")) r = sqrt(6.0 / (t[i].cols + 1));
        else if (!strcmp(t[i].name, "beta_w")) r = sqrt(6.0 / (t[i].cols + 1));
        else if (t[i].rows == 1 || !strncmp(t[i].name, "obj_", 4)) r = 0; /* biases; the objects' share starts at 0 */
        else r = sqrt(6.0 / (t[i].rows + t[i].cols)); /* Glorot uniform */
        for (size_t j = 0; j < n; j++) p[j] = r ? (float)((2 * ac_uniform01(&s) - 1) * r) : 0.0f;
    }
    if (dec->att_logtau) dec->att_logtau[0] = (float)AC_ATTENTION_LOGTAU_INIT;
    /* Forget-gate bias 1: remember by default early in training. */
    for (int j = 0; j < cfg->hidden; j++) dec->lstm_b[cfg->hidden + j] = 1.0f;
    /* The copy gate starts nearly shut (g = 0.05): a warm start from a model without copy begins
     * close to that model's distribution. */
    if (dec->copy_b) dec->copy_b[0] = -3.0f;
    if (dec->ptr_bs) dec->ptr_bs[0] = 3.0f; /* the same for the pointer: g = n / (n + e^3) for n regions */
    return 0;
}

int ac_decoder_add_absent(ac_decoder *dec, ac_err *err) {
    if (dec->absent_b) return 0;
    ac_decoder_config c = dec->cfg;
    c.absent = 1;
    if (ac_decoder_check_config(&c, err)) return -1;
    ac_dec_tensor t[AC_DEC_MAX_TENSORS], old[AC_DEC_MAX_TENSORS];
    size_t n;
    const int n_new = ac_decoder_tensors(&c, t, &n), n_old = ac_decoder_tensors(&dec->cfg, old, NULL);
    float *p = ac_calloc(n, sizeof *p);
    if (!p) return ac_errf(err, "out of memory for %zu decoder parameters", n);
    /* every tensor to its place in the new layout, by name (absent_b comes before object_init's) */
    for (int i = 0, j = 0; i < n_new; i++)
        if (j < n_old && !strcmp(t[i].name, old[j].name)) {
            memcpy(p + t[i].offset, dec->params + old[j].offset, sizeof *p * (size_t)t[i].rows * t[i].cols);
            j++;
        }
    free(dec->params);
    dec->params = p, dec->cfg = c;
    bind(dec);
    return 0;
}

void ac_decoder_free(ac_decoder *dec) {
    if (!dec) return;
    free(dec->params);
    free(dec->lstm_w16), free(dec->out_lo16), free(dec->att_wh16), free(dec->out_lh16), free(dec->out_lz16);
    free(dec->emb16);
    ac_pool_free(dec->step_pool);
    ac_decoder_free_copy_words(dec);
    memset(dec, 0, sizeof *dec);
}

/* dst = src [rows, cols] as float16 in ac_smm_pack_h's panels, if every value converts exactly; else
 * NULL (also out of memory: *oom set). */
static uint16_t *pack_f16_exact(const float *src, int rows, int cols, int *oom) {
    const size_t n = (size_t)rows * cols;
    uint16_t *h = ac_malloc(n * sizeof *h), *packed = ac_malloc(ac_smm_packed_size(rows, cols) * sizeof *packed);
    int exact = h && packed;
    enum { CHUNK = 1024 };
    float back[CHUNK];
    for (size_t i0 = 0; exact && i0 < n; i0 += CHUNK) {
        const size_t m = n - i0 < CHUNK ? n - i0 : CHUNK;
        ac_f32_to_f16_n(src + i0, h + i0, m);
        ac_f16_to_f32_n(h + i0, back, m);
        int differ = 0; /* no early exit, so that the test vectorizes (11 M weights at every start) */
        for (size_t i = 0; i < m; i++) differ |= back[i] != src[i0 + i] && src[i0 + i] == src[i0 + i];
        exact = !differ; /* a NaN stays a NaN: not a difference */
    }
    if (exact) ac_smm_pack_h(rows, cols, h, cols, packed);
    else free(packed), packed = NULL;
    if (!h) *oom = 1;
    free(h);
    return packed;
}

/* The weights the inference step streams, with their float16 copies. */
typedef struct streamed {
    const char *name;
    const float *w;
    int rows, cols;
    uint16_t **dst;
} streamed;

static int streamed_weights(ac_decoder *dec, streamed *t) {
    const ac_decoder_config *c = &dec->cfg;
    const int E = c->embed, H = c->hidden, A = c->att, D = c->dim, X = E + D + H;
    t[0] = (streamed){"lstm_w", dec->lstm_w, X, 4 * H, &dec->lstm_w16};
    t[1] = (streamed){"out_lo", dec->out_lo, E, c->vocab, &dec->out_lo16};
    t[2] = (streamed){"att_wh", dec->att_wh, H, A, &dec->att_wh16}; /* (a score without W_h: general) */
    t[3] = (streamed){"out_lh", dec->out_lh, H, E, &dec->out_lh16};
    t[4] = (streamed){"out_lz", dec->out_lz, D, E, &dec->out_lz16};
    return 5;
}

static int f16_usable(const ac_decoder *dec) { return ac_smm_has_f16() && dec->cfg.decoder == AC_DECODER_LSTM; }

int ac_decoder_take_f16(ac_decoder *dec, const char *name, const uint16_t *src) {
    if (!f16_usable(dec)) return 0;
    if (!strcmp(name, "emb") && dec->emb && !dec->emb16) { /* looked up a row at a time: kept as stored */
        const size_t n = (size_t)dec->cfg.vocab * dec->cfg.embed;
        if (!(dec->emb16 = ac_malloc(n * sizeof *dec->emb16))) return -1;
        memcpy(dec->emb16, src, n * sizeof *dec->emb16);
        dec->f16_only = 1;
        return 1;
    }
    streamed t[5];
    const int n = streamed_weights(dec, t);
    for (int i = 0; i < n; i++) {
        if (strcmp(t[i].name, name) || !t[i].w || *t[i].dst) continue;
        uint16_t *packed = ac_malloc(ac_smm_packed_size(t[i].rows, t[i].cols) * sizeof *packed);
        if (!packed) return -1;
        ac_smm_pack_h(t[i].rows, t[i].cols, src, t[i].cols, packed);
        *t[i].dst = packed;
        dec->f16_only = 1;
        return 1;
    }
    return 0;
}

int ac_decoder_use_f16(ac_decoder *dec) {
    if (!f16_usable(dec)) return dec->lstm_w16 != NULL;
    streamed t[5];
    const int n = streamed_weights(dec, t);
    uint16_t *made[5] = {0};
    int oom = 0, all = 1;
    for (int i = 0; i < n; i++) /* those taken from the file (ac_decoder_take_f16) are kept */
        if (t[i].w && !*t[i].dst) all &= (made[i] = pack_f16_exact(t[i].w, t[i].rows, t[i].cols, &oom)) != NULL;
    /* all or none, unless some have no float32 copy: those stay in float16 whatever the others do */
    const int keep = all || dec->f16_only;
    for (int i = 0; i < n; i++)
        if (keep && made[i]) *t[i].dst = made[i];
        else free(made[i]);
    return oom ? -1 : all;
}

/* ---- inference ---- */

int ac_decoder_check_grid(const ac_decoder_config *cfg, int grid_h, int grid_w, ac_err *err) {
    if (grid_h < 1 || grid_w < 1 || (long)grid_h * grid_w > cfg->n_ann)
        return ac_errf(err, "a photo's grid of %dx%d cells does not fit the model's %d annotation vectors (%dx%d)",
                       grid_h, grid_w, cfg->n_ann, cfg->grid_h, cfg->grid_w);
    return 0;
}

ac_dec_image *ac_decoder_prepare_grid(const ac_decoder *dec, const float *ann, int gh, int gw) {
    return ac_decoder_prepare_regions(dec, ann, gh, gw, 0);
}

/* The attention's keys of cells [l0, l1): att_ba + a_l W_a (every row the same bits whatever the split). */
typedef struct project_job {
    const ac_decoder *dec;
    ac_dec_image *im;
} project_job;

static void project_chunk(void *arg, int t, int n) {
    const project_job *j = arg;
    const int A = j->im->A, D = j->im->D;
    int l0, l1;
    ac_pool_chunk(j->im->n, 1, t, n, &l0, &l1);
    float *proj = j->im->proj + (size_t)l0 * A;
    for (int l = 0; l < l1 - l0; l++)
        if (j->dec->att_ba) memcpy(proj + (size_t)l * A, j->dec->att_ba, sizeof(float) * A);
        else memset(proj + (size_t)l * A, 0, sizeof(float) * A);
    ac_smm_nn(l1 - l0, A, D, j->im->ann + (size_t)l0 * D, D, j->dec->att_wa, A, proj, A);
}

ac_dec_image *ac_decoder_prepare_regions(const ac_decoder *dec, const float *ann, int gh, int gw, int regions) {
    if (ac_decoder_check_grid(&dec->cfg, gh, gw, NULL) || regions < 0 || regions > dec->cfg.regions) return NULL;
    if (dec->cfg.decoder == AC_DECODER_TRANSFORMER) {
        ac_dec_image *im = ac_tf_prepare(dec, ann, gh * gw + regions);
        if (im) im->gh = gh, im->gw = gw, im->regions = regions;
        return im;
    }
    const int L = dec->cfg.n_ann, D = dec->cfg.dim, A = ac_attention_key_dim(&dec->cfg);
    const int n = gh * gw + regions;
    ac_dec_image *im = ac_calloc(1, sizeof *im);
    if (!im) return NULL;
    im->L = L, im->D = D, im->A = A, im->n = n, im->gh = gh, im->gw = gw, im->regions = regions;
    im->ann = ac_malloc(sizeof(float) * (size_t)n * D);
    im->proj = ac_malloc(sizeof(float) * (size_t)n * A);
    im->mean = ac_calloc((size_t)D, sizeof(float));
    if (!im->ann || !im->proj || !im->mean) {
        ac_dec_image_free(im);
        return NULL;
    }
    memcpy(im->ann, ann, sizeof(float) * (size_t)n * D);
    const project_job job = {dec, im};
    ac_pool_run(dec->step_pool, project_chunk, (void *)&job);
    for (int l = 0; l < n; l++)
        for (int d = 0; d < D; d++) im->mean[d] += ann[(size_t)l * D + d];
    for (int d = 0; d < D; d++) im->mean[d] /= (float)n;
    return im;
}

ac_dec_image *ac_decoder_prepare(const ac_decoder *dec, const float *ann) {
    return ac_decoder_prepare_grid(dec, ann, dec->cfg.grid_h, dec->cfg.grid_w);
}

void ac_dec_image_grid(const ac_dec_image *im, int *grid_h, int *grid_w) {
    *grid_h = im->gh, *grid_w = im->gw;
}

int ac_dec_image_regions(const ac_dec_image *im) { return im->regions; }

void ac_dec_image_set_categories(ac_dec_image *im, const int *category, const float *score) {
    for (int r = 0; r < im->regions; r++) {
        im->cat[r] = (unsigned char)(category[r] >= 0 && category[r] < AC_COPY_CATEGORIES_MAX ? category[r] : 255);
        im->score[r] = score ? score[r] : 1.0f;
    }
    im->has_categories = 1;
}

void ac_dec_image_set_regions(ac_dec_image *im, const ac_region *regions) {
    int cat[AC_REGIONS_MAX];
    float score[AC_REGIONS_MAX];
    for (int r = 0; r < im->regions; r++) cat[r] = regions[r].category, score[r] = regions[r].score;
    ac_dec_image_set_categories(im, cat, score);
}

void ac_decoder_objects_vector(const unsigned char *cat, const float *score, int n, float *o) {
    memset(o, 0, sizeof(float) * AC_COPY_CATEGORIES);
    for (int r = 0; r < n; r++)
        if (cat[r] < AC_COPY_CATEGORIES) {
            const float s = score ? score[r] : 1.0f;
            if (s > o[cat[r]]) o[cat[r]] = s;
        }
}

void ac_decoder_objects_init(const ac_decoder *dec, const unsigned char *cat, const float *score, int n, float *h,
                             float *c) {
    const int H = dec->cfg.hidden;
    float o[AC_COPY_CATEGORIES];
    ac_decoder_objects_vector(cat, score, n, o);
    for (int k = 0; k < AC_COPY_CATEGORIES; k++)
        if (o[k] != 0)
            for (int j = 0; j < H; j++) {
                h[j] += o[k] * dec->obj_h[(size_t)k * H + j];
                c[j] += o[k] * dec->obj_c[(size_t)k * H + j];
            }
}

void ac_dec_image_free(ac_dec_image *im) {
    if (!im) return;
    free(im->ann);
    free(im->proj);
    free(im->mean);
    free(im->kv);
    free(im);
}

void ac_decoder_initial_state(const ac_decoder *dec, const ac_dec_image *im, float *h, float *c) {
    if (dec->cfg.decoder != AC_DECODER_LSTM) return;
    const int D = dec->cfg.dim, H = dec->cfg.hidden;
    memcpy(h, dec->init_h_b, sizeof(float) * H);
    memcpy(c, dec->init_c_b, sizeof(float) * H);
    ac_smm_nn(1, H, D, im->mean, D, dec->init_h_w, H, h, H);
    ac_smm_nn(1, H, D, im->mean, D, dec->init_c_w, H, c, H);
    if (dec->obj_h && im->has_categories) ac_decoder_objects_init(dec, im->cat, im->score, im->regions, h, c);
    for (int j = 0; j < H; j++) h[j] = ac_tanhf(h[j]), c[j] = ac_tanhf(c[j]);
}

size_t ac_decoder_step_scratch(const ac_decoder_config *cf, int K) {
    const size_t X = (size_t)cf->embed + cf->dim + cf->hidden, heads = (size_t)ac_attention_heads(cf);
    return (size_t)K * ac_attention_key_dim(cf) + (size_t)K * X + (size_t)K * 4 * cf->hidden + (size_t)K * cf->embed +
           (heads > 1 ? (size_t)K * heads * cf->n_ann : 0);
}

int ac_decoder_show_head(ac_decoder *dec, int head, ac_err *err) {
    const int heads = ac_attention_heads(&dec->cfg);
    if (head < 0 || head > heads)
        return ac_errf(err, "attention head %d: the model has %d head%s", head, heads, heads > 1 ? "s" : "");
    dec->shown_head = head;
    return 0;
}

int ac_decoder_hard_context(ac_decoder *dec, const char *context, ac_err *err) {
    const int expected = context && !strcmp(context, "expected");
    if (!expected && !(context && !strcmp(context, "argmax")))
        return ac_errf(err, "hard-attention context '%s': argmax or expected", context ? context : "");
    if (dec->cfg.attention_mode != AC_ATTENTION_HARD)
        return ac_errf(err, "hard-attention context %s: the model has soft attention", context);
    dec->hard_expected = expected;
    return 0;
}

int ac_decoder_fix_attention(ac_decoder *dec, const char *how, ac_err *err) {
    static const char *const names[] = {"model", "uniform", "peak"};
    for (int i = 0; i < 3; i++)
        if (how && !strcmp(how, names[i])) {
            if (i != FIX_MODEL && dec->cfg.decoder == AC_DECODER_TRANSFORMER)
                return ac_errf(err, "attention %s: the LSTM's only (the model is a transformer)", how);
            dec->fixed_attention = i;
            return 0;
        }
    return ac_errf(err, "attention '%s': model, uniform or peak", how ? how : "");
}

int ac_decoder_set_threads(ac_decoder *dec, int threads) {
    ac_pool_free(dec->step_pool);
    dec->step_pool = NULL;
    if (threads <= 1) return 0;
    dec->step_pool = ac_pool_create(threads);
    return dec->step_pool ? 0 : -1;
}

void ac_decoder_step_photos(const ac_decoder *dec, int n_photos, const ac_dec_image *const *img, const int *rows,
                            const int *prev, const float *h, const float *c, float *h_out, float *c_out, float *logp,
                            float *alpha, float *beta, float *buf) {
    const int H = dec->cfg.hidden;
    if (dec->cfg.decoder == AC_DECODER_LSTM)
        ac_lstm_step(dec, n_photos, img, rows, prev, h, H, c, H, h_out, c_out, H, logp, alpha, beta, NULL, buf);
}

void ac_decoder_step(const ac_decoder *dec, const ac_dec_image *im, int K, const int *prev, const float *h,
                     const float *c, float *h_out, float *c_out, float *logp, float *alpha, float *beta,
                     float *buf) {
    ac_decoder_step_photos(dec, 1, &im, &K, prev, h, c, h_out, c_out, logp, alpha, beta, buf);
}

/* ---- any decoder kind ---- */

size_t ac_decoder_state_size(const ac_decoder_config *c) {
    return c->decoder == AC_DECODER_TRANSFORMER ? 0 : 2 * (size_t)c->hidden;
}

size_t ac_decoder_hist_size(const ac_decoder_config *c) {
    return c->decoder == AC_DECODER_TRANSFORMER ? (size_t)c->layers * 2 * (size_t)c->embed : 0;
}

void ac_decoder_start(const ac_decoder *dec, const ac_dec_image *img, float *state) {
    if (dec->cfg.decoder == AC_DECODER_LSTM) ac_decoder_initial_state(dec, img, state, state + dec->cfg.hidden);
}

size_t ac_decoder_advance_scratch(const ac_decoder_config *c, int K, int t_max) {
    return c->decoder == AC_DECODER_TRANSFORMER ? ac_tf_step_scratch(c, K, t_max) : ac_decoder_step_scratch(c, K);
}

void ac_decoder_advance(const ac_decoder *dec, int n_photos, const ac_dec_image *const *img, const int *rows, int t,
                        const int *prev, const float *state, const float *const *hist, float *state_out,
                        float *hist_out, float *logp, float *alpha, float *beta, float *scratch) {
    ac_decoder_advance_account(dec, n_photos, img, rows, t, prev, state, hist, state_out, hist_out, logp, alpha, beta,
                               NULL, scratch);
}

void ac_decoder_advance_account(const ac_decoder *dec, int n_photos, const ac_dec_image *const *img, const int *rows,
                                int t, const int *prev, const float *state, const float *const *hist,
                                float *state_out, float *hist_out, float *logp, float *alpha, float *beta,
                                float *account, float *scratch) {
    const int H = dec->cfg.hidden;
    if (dec->cfg.decoder == AC_DECODER_TRANSFORMER) {
        ac_tf_step(dec, n_photos, img, rows, t, prev, hist, hist_out, logp, alpha, beta, scratch);
        int K = 0;
        for (int p = 0; p < n_photos; p++) K += rows[p];
        if (account) memset(account, 0, sizeof(float) * (size_t)K * AC_DECODER_ACCOUNT_ROW); /* it never copies */
    } else {
        ac_lstm_step(dec, n_photos, img, rows, prev, state, 2 * H, state + H, 2 * H, state_out, state_out + H, 2 * H,
                  logp, alpha, beta, account, scratch);
    }
}

_Static_assert(AC_DECODER_ACCOUNT_ROW == 2 * AC_REGIONS_MAX, "a row of the account: shares, then regions' parts");

float ac_decoder_account_word(const ac_decoder *dec, const ac_dec_image *img, const float *account, int w,
                              float *region) {
    if (!img->has_categories) { /* nothing to copy from: its rows are 0 */
        for (int r = 0; region && r < img->regions; r++) region[r] = 0;
        return 0;
    }
    return ac_copy_account_of_word(dec, img->cat, img->regions, account, account + AC_REGIONS_MAX, w, region);
}
