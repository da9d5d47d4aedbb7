/* result.c: the core API's captioning calls and results (attncap.h). Every call, one photo or many,
 * goes through ac_captioner_batch_inputs, the path `attncap caption` takes, so a result's caption is
 * the CLI's bit for bit. A result is the public ac_result followed by what it points into: the
 * caption (beam.h) and, with AC_KEEP_PHOTO, the photo as read. */
#include "attncap/attncap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/captioner.h"
#include "attncap/font.h"
#include "attncap/imagenet_words.h"
#include "attncap/objects.h"
#include "attncap/overlay.h"
#include "attncap/regions.h"
#include "alloc_internal.h"

typedef struct result {
    ac_result pub; /* first: the caller's pointer is this */
    ac_caption cap;
    ac_image photo; /* with AC_KEEP_PHOTO */
    float *cells;   /* with regions: the attention over the grid's cells alone (pub.attention) */
    ac_result_region *regions; /* [cap.n_regions] (ac_result_regions) */
    float *region_att;         /* [n_words][cap.n_regions]: the words' rows of cap.alpha's region columns */
    double seconds[4]; /* AC_SECONDS_READ, _CNN, _SEARCH, _WAITED (ac_result_seconds) */
    char *image, *text, *error;
    char **words, **alt_text, **overlays;
    ac_alternative *alts;
    ac_result_tag *tags;
} result;

void ac_result_free(ac_result *pub) {
    result *r = (result *)pub;
    if (!r) return;
    for (int k = 0; r->words && k < r->pub.n_words; k++) free(r->words[k]);
    for (int k = 0; r->alt_text && k < r->pub.n_alternatives; k++) free(r->alt_text[k]);
    for (int k = 0; r->overlays && k < r->pub.n_overlays; k++) free(r->overlays[k]);
    free(r->words), free(r->alt_text), free(r->overlays), free(r->alts), free(r->tags);
    free(r->image), free(r->text), free(r->error), free(r->cells);
    free(r->regions), free(r->region_att);
    ac_caption_free(&r->cap);
    ac_image_free(&r->photo);
    free(r);
}

/* r->regions and r->region_att from r->cap (regions filled in, its grid known). 0, or -1 when out of memory. */
static int fill_regions(result *r, const ac_captioner *c) {
    const ac_caption *cap = &r->cap;
    const int nr = cap->n_regions, n = cap->n, stride = ac_caption_alpha_stride(cap), G = stride - nr;
    if (!(r->regions = ac_calloc((size_t)nr, sizeof *r->regions))) return -1;
    for (int k = 0; k < nr; k++) {
        const ac_region *g = &cap->regions[k];
        const char *label = ac_region_label(&c->model.imagenet, g->category);
        r->regions[k] = (ac_result_region){label ? label : "", g->score, g->x0, g->y0, g->x1, g->y1};
    }
    if (n && !(r->region_att = ac_malloc(sizeof(float) * (size_t)n * nr))) return -1;
    for (int t = 0; t < n; t++) memcpy(r->region_att + (size_t)t * nr, cap->alpha + (size_t)t * stride + G, sizeof(float) * nr);
    return 0;
}

/* The public view of r->cap (moved in by the caller). 0, or -1 when out of memory. */
static int fill(result *r, const ac_captioner *c) {
    const ac_caption *cap = &r->cap;
    const ac_vocab *v = c->model.vocab;
    ac_result *p = &r->pub;
    const int n = cap->n;
    if (!(r->text = ac_caption_text(cap, v))) return -1;
    if (n && !(r->words = ac_calloc((size_t)n, sizeof *r->words))) return -1;
    for (int k = 0; k < n; k++, p->n_words = k)
        if (!(r->words[k] = ac_strdup(ac_caption_word(cap, v, k)))) return -1;
    p->n_words = n;
    p->text = r->text, p->words = (const char *const *)r->words;
    p->word_logprobs = cap->word_logp;
    p->logprob = cap->logprob, p->score = cap->score;
    p->confidence = isfinite(cap->confidence) && cap->confidence > 0 ? cap->confidence : NAN;
    p->described = cap->described;
    p->grid_h = cap->grid_h > 0 ? cap->grid_h : c->grid_h, p->grid_w = cap->grid_w > 0 ? cap->grid_w : c->grid_w;
    p->attention = cap->alpha; /* [n + 1][grid]: the words' rows first, then <end>'s, not shown */
    if (cap->n_regions > 0 && cap->regions && cap->grid_h > 0 && cap->grid_w > 0) {
        /* alpha's rows are [cells | regions]: the promise is [grid_h][grid_w] summing to 1, each
         * region's weight spread over its box's cells as the overlays and the JSON line show it */
        const size_t G = (size_t)cap->grid_h * cap->grid_w;
        if (!(r->cells = ac_malloc(sizeof(float) * G * ((size_t)n + 1)))) return -1;
        for (int k = 0; k <= n; k++) ac_caption_cell_attention(cap, k, r->cells + (size_t)k * G);
        p->attention = r->cells;
        if (fill_regions(r, c)) return -1;
    }
    if (cap->n_alt > 0) {
        if (!(r->alts = ac_calloc((size_t)cap->n_alt, sizeof *r->alts)) ||
            !(r->alt_text = ac_calloc((size_t)cap->n_alt, sizeof *r->alt_text)))
            return -1;
        for (int a = 0; a < cap->n_alt; a++, p->n_alternatives = a) {
            if (!(r->alt_text[a] = ac_caption_text(&cap->alt[a], v))) return -1;
            r->alts[a] = (ac_alternative){r->alt_text[a], cap->alt[a].logprob, cap->alt[a].score};
        }
        p->n_alternatives = cap->n_alt, p->alternatives = r->alts;
    }
    if (cap->n_tags > 0) {
        if (!(r->tags = ac_calloc((size_t)cap->n_tags, sizeof *r->tags))) return -1;
        for (int i = 0; i < cap->n_tags; i++) {
            const ac_caption_tag *t = &cap->tags[i];
            r->tags[i] = (ac_result_tag){t->word, t->cls, t->prob, t->precision, t->in_vocab, t->forced, t->named};
        }
        p->n_tags = cap->n_tags, p->tags = r->tags;
    }
    return 0;
}

typedef struct gather {
    const ac_captioner *cap;
    unsigned flags;
    result **out;
    int oom;
} gather;

/* ac_captioner_batch's callback: the photo's result, its caption and photo moved out of r. */
static void on_result(void *user, const ac_batch_result *br) {
    gather *g = user;
    result *r = ac_calloc(1, sizeof *r);
    g->out[br->index] = r;
    if (!r) {
        g->oom = 1;
        return;
    }
    if (br->path && !(r->image = ac_strdup(br->path))) g->oom = 1;
    r->pub.image = r->image;
    r->pub.text = "";
    r->seconds[AC_SECONDS_READ] = br->t_decode, r->seconds[AC_SECONDS_CNN] = br->t_cnn;
    r->seconds[AC_SECONDS_SEARCH] = br->t_search, r->seconds[AC_SECONDS_WAITED] = br->t_wait;
    if (!br->ok) {
        if (!(r->error = ac_strdup(br->err.msg))) g->oom = 1;
        r->pub.error = r->error ? r->error : "out of memory";
        r->pub.error_code = br->run_failed || br->err.code ? br->err.code : AC_ERR_BAD_IMAGE;
        return;
    }
    r->cap = *br->caption; /* moved: the batch frees what it still points to, emptied here */
    memset((ac_caption *)br->caption, 0, sizeof *br->caption);
    if ((g->flags & AC_KEEP_PHOTO) && br->photo) {
        r->photo = *br->photo;
        memset((ac_image *)br->photo, 0, sizeof *br->photo);
    }
    if (fill(r, g->cap)) g->oom = 1;
}

/* The overlays' long side: ac_captioner_set_overlay_size's, else the default (1024). A batch keeping
 * photos sets keep_min_side to it while it runs (a kept photo is read at least that large). */
static int overlay_side(const ac_captioner *c) {
    return c->overlay_size > 0 ? c->overlay_size : ac_overlay_defaults().max_side;
}

int ac_captioner_set_overlay_size(ac_captioner *c, int size, ac_err *err) {
    if (size && (size < 64 || size > 8192)) return ac_errf(err, "overlays: size %d is not 0 or 64..8192", size);
    if (!c->font && ac_font_load(NULL, &c->font, err)) return -1;
    c->overlay_size = size;
    return 0;
}

int ac_caption_batch(ac_captioner *c, const ac_input *in, int n, unsigned flags, ac_result **out, ac_err *err) {
    if (n < 0 || (n && (!in || !out))) return ac_errf(err, "batch: bad input list (%d photos)", n);
    for (int i = 0; i < n; i++) out[i] = NULL;
    if (!n) return 0;
    gather g = {.cap = c, .flags = flags, .out = (result **)out};
    const int keep_min_side = c->keep_min_side;
    /* a kept photo is read at least as large as the overlays draw it, as `attncap caption --overlays` */
    if (flags & AC_KEEP_PHOTO) c->keep_min_side = overlay_side(c);
    const int rc = ac_captioner_batch_inputs(c, in, n, c->threads, (flags & AC_KEEP_PHOTO) != 0, on_result, &g, NULL, err);
    c->keep_min_side = keep_min_side;
    if (rc || g.oom) {
        for (int i = 0; i < n; i++) ac_result_free(out[i]), out[i] = NULL;
        return rc ? -1 : ac_errf(err, "out of memory");
    }
    return 0;
}

typedef struct each {
    const ac_captioner *cap;
    unsigned flags;
    ac_each_fn each;
    void *user;
} each;

/* One photo's result handed over as it is done (ac_caption_each, ac_caption_stream), built as
 * ac_caption_batch's; NULL when out of memory. */
static ac_result *one_result(const ac_captioner *cap, unsigned flags, const ac_batch_result *br) {
    result *out = NULL;
    gather g = {.cap = cap, .flags = flags, .out = &out};
    ac_batch_result one = *br;
    one.index = 0;
    on_result(&g, &one);
    if (g.oom && out) ac_result_free(&out->pub), out = NULL;
    return out ? &out->pub : NULL;
}

/* ac_captioner_batch_inputs's callback for ac_caption_each. */
static void each_result(void *user, const ac_batch_result *br) {
    const each *e = user;
    e->each(e->user, br->index, one_result(e->cap, e->flags, br));
}

int ac_caption_each(ac_captioner *c, const ac_input *in, int n, unsigned flags, ac_each_fn fn, void *user,
                    ac_err *err) {
    if (!c || !fn || n < 0 || (n && !in)) return ac_errf(err, "each: no captioner or callback, or a bad input list (%d photos)", n);
    if (!n) return 0;
    each e = {c, flags, fn, user};
    const int keep_min_side = c->keep_min_side;
    if (flags & AC_KEEP_PHOTO) c->keep_min_side = overlay_side(c);
    const int rc = ac_captioner_batch_inputs(c, in, n, c->threads, (flags & AC_KEEP_PHOTO) != 0, each_result, &e, NULL, err);
    c->keep_min_side = keep_min_side;
    return rc;
}

int ac_captioner_lanes(const ac_captioner *c, int n, int *lane_threads) {
    return ac_captioner_batch_lanes(c->threads, n, lane_threads);
}

double ac_result_alternative_confidence(const ac_result *pub, int i) {
    const result *r = (const result *)pub;
    if (i < 0 || i >= pub->n_alternatives || i >= r->cap.n_alt) return NAN;
    const double p = r->cap.alt[i].confidence;
    return isfinite(p) && p > 0 ? p : NAN;
}

double ac_result_seconds(const ac_result *pub, int stage) {
    return stage >= 0 && stage < 4 ? ((const result *)pub)->seconds[stage] : NAN;
}

/* The regions exist when fill_regions made them: a result with an error, or whose caption has none,
 * answers 0. */
int ac_result_regions(const ac_result *pub, const ac_result_region **out) {
    const result *r = (const result *)pub;
    const int n = r->regions ? r->cap.n_regions : 0;
    if (out) *out = n ? r->regions : NULL;
    return n;
}

int ac_result_region_attention(const ac_result *pub, const float **out) {
    const result *r = (const result *)pub;
    const int n = r->regions ? r->cap.n_regions : 0;
    if (out) *out = n && pub->n_words ? r->region_att : NULL;
    return n;
}

int ac_result_copied(const ac_result *pub, const float **out) {
    const result *r = (const result *)pub;
    const int n = r->cap.copied && !r->error ? pub->n_words + 1 : 0;
    if (out) *out = n ? r->cap.copied : NULL;
    return n;
}

typedef struct stream {
    const ac_captioner *cap;
    unsigned flags;
    ac_stream_next_fn next;
    ac_stream_wait_fn wait;
    ac_stream_done_fn done;
    void *user;
} stream;

static int stream_next(void *user, ac_input *in, void **tag) {
    const stream *s = user;
    return s->next(s->user, in, tag);
}

static void stream_wait(void *user) {
    const stream *s = user;
    s->wait(s->user);
}

/* ac_captioner_batch_stream's callback. */
static void stream_result(void *user, const ac_batch_result *br) {
    const stream *s = user;
    s->done(s->user, br->tag, one_result(s->cap, s->flags, br), br->searched_with);
}

int ac_caption_stream(ac_captioner *c, ac_stream_next_fn next, ac_stream_wait_fn wait, ac_stream_done_fn done,
                      void *user, int max_together, unsigned flags, ac_err *err) {
    if (!c || !next || !wait || !done) return ac_errf(err, "stream: no captioner, or a callback missing");
    if (max_together < 0) return ac_errf(err, "stream: max_together %d is negative", max_together);
    stream s = {c, flags, next, wait, done, user};
    const ac_batch_source src = {stream_next, stream_wait, &s, max_together};
    const int keep_min_side = c->keep_min_side;
    if (flags & AC_KEEP_PHOTO) c->keep_min_side = overlay_side(c);
    const int rc = ac_captioner_batch_stream(c, &src, c->threads, (flags & AC_KEEP_PHOTO) != 0, stream_result, &s, err);
    c->keep_min_side = keep_min_side;
    return rc;
}

/* One photo: a batch of one; its failure is the call's. */
static int caption_one(ac_captioner *c, const ac_input *in, unsigned flags, ac_result **out, ac_err *err) {
    *out = NULL;
    ac_result *r;
    if (ac_caption_batch(c, in, 1, flags, &r, err)) return -1;
    if (r->error) {
        const int code = r->error_code;
        ac_errc(err, (ac_err_code)code, "%s", r->error);
        ac_result_free(r);
        return -1;
    }
    *out = r;
    return 0;
}

int ac_caption_file(ac_captioner *c, const char *path, unsigned flags, ac_result **out, ac_err *err) {
    if (!path) {
        *out = NULL;
        return ac_errc(err, AC_ERR_BAD_IMAGE, "no photo path given");
    }
    const ac_input in = {.path = path};
    return caption_one(c, &in, flags, out, err);
}

int ac_caption_bytes(ac_captioner *c, const void *data, size_t size, unsigned flags, ac_result **out, ac_err *err) {
    if (!data || !size) {
        *out = NULL;
        return ac_errc(err, AC_ERR_BAD_IMAGE, "photo in memory: no bytes given");
    }
    const ac_input in = {.data = data, .size = size};
    return caption_one(c, &in, flags, out, err);
}

int ac_caption_rgb(ac_captioner *c, const unsigned char *rgb, int height, int width, unsigned flags, ac_result **out,
                   ac_err *err) {
    if (!rgb) {
        *out = NULL;
        return ac_errc(err, AC_ERR_BAD_IMAGE, "pixels: none given");
    }
    const ac_input in = {.rgb = rgb, .height = height, .width = width};
    return caption_one(c, &in, flags, out, err);
}

int ac_result_write_overlays(ac_captioner *c, ac_result *pub, const char *dir, const char *stem, unsigned flags,
                             ac_err *err) {
    const unsigned known = AC_OVERLAY_FORCE | AC_OVERLAY_SHEET_ONLY | AC_OVERLAY_STYLE_SPOT | AC_OVERLAY_BASE_COLOUR |
                           AC_OVERLAY_SCALE_ABSOLUTE | AC_OVERLAY_FORMAT_JPEG;
    if (flags & ~known) return ac_errf(err, "overlays: unknown flags 0x%x", flags & ~known);
    result *r = (result *)pub;
    if (r->error) return ac_errf(err, "overlays: the photo has no caption (%s)", r->error);
    if (!r->photo.px) return ac_errf(err, "overlays: the result keeps no photo (caption it with AC_KEEP_PHOTO)");
    if (!dir) return ac_errf(err, "overlays: no folder given");
    ac_overlay_opts oo = ac_overlay_defaults(); /* as cli_overlay_flags_apply sets them from the flags */
    oo.force = (flags & AC_OVERLAY_FORCE) != 0, oo.sheet_only = (flags & AC_OVERLAY_SHEET_ONLY) != 0;
    if (flags & AC_OVERLAY_STYLE_SPOT) oo.style = AC_OVERLAY_SPOT;
    if (flags & AC_OVERLAY_BASE_COLOUR) oo.base = AC_OVERLAY_COLOUR;
    oo.scale_absolute = (flags & AC_OVERLAY_SCALE_ABSOLUTE) != 0, oo.jpeg = (flags & AC_OVERLAY_FORMAT_JPEG) != 0;
    if (c->overlay_size > 0) oo.max_side = c->overlay_size, oo.upscale = 1; /* set_overlay_size's */
    oo.threads = c->threads;
    char *own_stem = NULL;
    if (!stem && r->image) {
        const char *paths[1] = {r->image};
        if (ac_overlay_stems(paths, 1, &own_stem, err)) return -1;
    }
    int rc = -1;
    if (ac_mkdirs(dir, err) || (!c->font && ac_font_load(NULL, &c->font, err))) goto done;
    char **files = NULL;
    int n_files = 0;
    if (ac_overlays_write(dir, stem ? stem : own_stem ? own_stem : "photo", &r->photo, &r->cap, c->model.vocab,
                          c->grid_h, c->grid_w, &oo, c->font, &files, &n_files, err))
        goto done;
    for (int k = 0; r->overlays && k < r->pub.n_overlays; k++) free(r->overlays[k]);
    free(r->overlays);
    r->overlays = files, r->pub.overlays = (const char *const *)files, r->pub.n_overlays = n_files;
    rc = 0;
done:
    free(own_stem);
    return rc;
}

char *ac_result_json(const ac_captioner *c, const ac_result *pub, const char *image, unsigned flags) {
    const result *r = (const result *)pub;
    if (r->error) return NULL;
    return ac_caption_json(image ? image : r->image ? r->image : "", &r->cap, &c->model,
                           (const char *const *)r->overlays, r->pub.n_overlays, (flags & AC_JSON_ATTENTION) != 0,
                           c->grid_h, c->grid_w);
}

int ac_result_write_json(const ac_captioner *c, const ac_result *pub, const char *path, const char *image,
                         unsigned flags, ac_err *err) {
    const result *r = (const result *)pub;
    if (r->error) return ac_errf(err, "%s: the photo has no caption (%s)", path, r->error);
    char *line = ac_result_json(c, pub, image, flags);
    if (!line) return ac_errf(err, "%s: out of memory", path);
    ac_atomic_file af;
    int rc = ac_atomic_open(&af, path, err);
    if (!rc && (ac_atomic_write(&af, line, strlen(line), err) || ac_atomic_write(&af, "\n", 1, err))) {
        ac_atomic_abort(&af);
        rc = -1;
    } else if (!rc) rc = ac_atomic_commit(&af, err);
    free(line);
    return rc;
}
