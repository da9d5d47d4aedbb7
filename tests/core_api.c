/* core_api.c: a program that knows only the stable core header, for tests/core_api.sh (issue #31).
 * It must compile as C99 and C++17 with -pedantic -Werror and link against libattncap.so.
 *   core_api caption PHOTO...      "PATH<TAB>caption[<TAB>confidence]" as `attncap caption` prints;
 *                                  the results' JSON lines (with attention) to JSON_OUT ($CORE_JSON);
 *                                  exit 3 if an attention row does not sum to 1 within 1e-5;
 *                                  $CORE_GIVEN: not searched, that caption's attention (set_given);
 *                                  $CORE_PRECISION, $CORE_TAGS (and $CORE_TABLE), $CORE_NAMING: the
 *                                  1.2 setters (set_precision, set_tags, then set_naming_record);
 *                                  $CORE_SEARCH: ac_captioner_set_search's flags, as a number;
 *                                  $CORE_BEAM, $CORE_NBEST: ac_captioner_opts' beam and nbest
 *   core_api bytes PHOTO...        the same photos read into memory, one ac_caption_batch call
 *   core_api stream PHOTO...       the same photos through ac_caption_stream (3 searched together at
 *                                  most; a source that has none every other call); checks the order,
 *                                  the tags and `together`
 *   core_api each DIR PHOTO...     (1.3) the photos through ac_caption_each, checking the order, each
 *                                  result's ac_result_seconds and that unknown stages are NaN; prints
 *                                  "lanes<TAB>N<TAB>T" (ac_captioner_lanes for the photos), each unknown
 *                                  word of $CORE_GIVEN ("unknown<TAB>word": ac_captioner_given_unknown,
 *                                  checked outside the vocabulary), then per photo its line as
 *                                  `attncap caption` prints it, with $CORE_NBEST > 1 as `--nbest` does
 *                                  (ac_result_alternative_confidence's column); to $CORE_ALTS each
 *                                  runner-up's confidence (%.17g); $CORE_JSON its JSON line; DIR not
 *                                  "": the overlays written from the callback into DIR/STEM
 *                                  (ac_overlay_stems) and DIR/STEM/caption.json (ac_result_write_json);
 *                                  $CORE_THREADS: ac_captioner_opts.threads
 *   core_api regions PHOTO...      (1.3) per photo one JSON line of what the regions' getters hold:
 *                                  {"image", "tokens", "regions": [{"label", "score", "box"}],
 *                                  "region_attention": [[...] per word], "copied": [...] or null}
 *                                  (%.9g); exit 3 when the getters disagree on the count, or a count
 *                                  is 0 with a pointer (or not 0 without one); $CORE_GIVEN as caption's
 *   core_api rgb FILE H W          FILE holds H x W x 3 bytes: its caption, as above
 *   core_api classify HOW PHOTO... (1.2) the top 5 classes as `attncap classify` prints them, each photo
 *                                  given as HOW: file, bytes, or rgb (then PHOTO is FILE:H:W, raw
 *                                  pixels); $CORE_PRECISION: ac_classifier_set_precision
 *   core_api overlays DIR PHOTO... overlays as `attncap caption --overlays DIR` writes them;
 *                                  $CORE_OVERLAY_FLAGS (AC_OVERLAY_* as a number), $CORE_OVERLAY_SIZE
 *   core_api eval                  stdin: "cand<TAB>text" starts an image, "ref<TAB>text" adds a reference;
 *                                  prints BLEU-1..4, ROUGE-L, CIDEr-D (%.12g)
 *   core_api errors DIR            every error path; prints "ok WHAT" or "bad WHAT: why" */
#include <attncap/attncap.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ac_captioner *open_or_die(void) {
    ac_err err;
    ac_captioner *c = NULL;
    ac_captioner_opts o;
    ac_captioner_opts_init(&o); /* the defaults, as NULL would give */
    if (getenv("CORE_BEAM")) o.beam = atoi(getenv("CORE_BEAM"));
    if (getenv("CORE_NBEST")) o.nbest = atoi(getenv("CORE_NBEST"));
    if (getenv("CORE_THREADS")) o.threads = atoi(getenv("CORE_THREADS"));
    if (ac_captioner_open(NULL, &o, &c, &err)) {
        fprintf(stderr, "open: %s\n", err.msg);
        exit(2);
    }
    return c;
}

/* Prints r as the CLI's plain line, its JSON line to json; 0, or 3 when its attention is not a
 * distribution per word. */
static int show(const ac_captioner *c, const ac_result *r, const char *name, FILE *json) {
    if (!isnan(r->confidence)) printf("%s\t%s\t%.2f\n", name, r->text, r->confidence);
    else printf("%s\t%s\n", name, r->text);
    const int cells = r->grid_h * r->grid_w;
    int bad = cells <= 0 || r->n_words <= 0 || !r->attention;
    for (int w = 0; !bad && w < r->n_words; w++) {
        double sum = 0;
        for (int k = 0; k < cells; k++) sum += r->attention[(size_t)w * cells + k];
        if (fabs(sum - 1) > 1e-5) {
            fprintf(stderr, "%s: word %d (%s): attention sums to %.8f\n", name, w, r->words[w], sum);
            bad = 1;
        }
    }
    if (json) {
        char *s = ac_result_json(c, r, name, AC_JSON_ATTENTION);
        if (!s) return 4;
        fprintf(json, "%s\n", s);
        ac_free(s);
    }
    return bad ? 3 : 0;
}

static unsigned char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *buf = NULL;
    size_t cap = 0;
    *n = 0;
    for (;;) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 1 << 16;
            unsigned char *b = (unsigned char *)realloc(buf, cap);
            if (!b) break;
            buf = b;
        }
        size_t got = fread(buf + *n, 1, cap - *n, f);
        if (!got) break;
        *n += got;
    }
    fclose(f);
    return buf;
}

/* The 1.2 setters from $CORE_SEARCH (AC_SEARCH_* flags as a number), $CORE_PRECISION, $CORE_TAGS/$CORE_TABLE and $CORE_NAMING (the tags first: the
 * record must keep them, whatever the order); exits 2 when one fails. */
static void apply_setters(ac_captioner *c) {
    const char *precision = getenv("CORE_PRECISION"), *tags = getenv("CORE_TAGS"), *naming = getenv("CORE_NAMING");
    const char *search = getenv("CORE_SEARCH");
    ac_err err;
    if ((search && ac_captioner_set_search(c, (unsigned)atoi(search), &err)) ||
        (precision && ac_captioner_set_precision(c, precision, &err)) ||
        ((tags || getenv("CORE_TABLE")) && ac_captioner_set_tags(c, tags, getenv("CORE_TABLE"), &err)) ||
        (naming && ac_captioner_set_naming_record(c, naming, &err))) {
        fprintf(stderr, "setters: %s\n", err.msg);
        exit(2);
    }
}

static int cmd_caption(int argc, char **argv, int bytes) {
    ac_captioner *c = open_or_die();
    apply_setters(c);
    const char *given = getenv("CORE_GIVEN");
    ac_err gerr;
    if (given && ac_captioner_set_given(c, given, &gerr)) {
        fprintf(stderr, "given: %s\n", gerr.msg);
        return 1;
    }
    const char *jp = getenv("CORE_JSON");
    FILE *json = jp ? fopen(jp, "w") : NULL;
    int rc = 0;
    if (!bytes) {
        for (int i = 0; i < argc; i++) {
            ac_result *r;
            ac_err err;
            if (ac_caption_file(c, argv[i], 0, &r, &err)) {
                fprintf(stderr, "%s\n", err.msg);
                rc = 1;
                continue;
            }
            int s = show(c, r, argv[i], json);
            if (s) rc = s;
            ac_result_free(r);
        }
    } else { /* every photo in memory, one batch */
        ac_input *in = (ac_input *)calloc((size_t)argc, sizeof *in);
        unsigned char **data = (unsigned char **)calloc((size_t)argc, sizeof *data);
        ac_result **out = (ac_result **)calloc((size_t)argc, sizeof *out);
        ac_err err;
        for (int i = 0; i < argc; i++) {
            data[i] = slurp(argv[i], &in[i].size);
            in[i].data = data[i];
        }
        if (ac_caption_batch(c, in, argc, 0, out, &err)) {
            fprintf(stderr, "batch: %s\n", err.msg);
            rc = 1;
        }
        for (int i = 0; !rc && i < argc; i++) {
            if (out[i]->error) fprintf(stderr, "%s: %s\n", argv[i], out[i]->error), rc = 1;
            else if (out[i]->image) fprintf(stderr, "%s: a photo in memory has a path\n", argv[i]), rc = 1;
            else {
                int s = show(c, out[i], argv[i], json);
                if (s) rc = s;
            }
        }
        for (int i = 0; i < argc; i++) ac_result_free(out[i]), free(data[i]);
        free(in), free(data), free(out);
    }
    if (json) fclose(json);
    ac_captioner_close(c);
    return rc;
}

/* s as a JSON string (the words and labels need no more than quotes and backslashes escaped). */
static void json_string(const char *s) {
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') putchar('\\');
        putchar(*s);
    }
    putchar('"');
}

static void json_floats(const float *x, int n) {
    putchar('[');
    for (int i = 0; i < n; i++) printf("%s%.9g", i ? "," : "", x[i]);
    putchar(']');
}

/* 1.3's getters of a result's regions, attention on them and copied shares, as one JSON line; 0, or 3
 * when they contradict each other. */
static int show_regions(const ac_result *r, const char *name) {
    const ac_result_region *g = NULL;
    const float *att = NULL, *cp = NULL;
    const int n = ac_result_regions(r, &g), na = ac_result_region_attention(r, &att), nc = ac_result_copied(r, &cp);
    int bad = n < 0 || na != n || ac_result_regions(r, NULL) != n || ac_result_region_attention(r, NULL) != na ||
              ac_result_copied(r, NULL) != nc || !n != !g || (!n || !r->n_words) != !att || !nc != !cp ||
              (nc && nc != r->n_words + 1);
    if (bad) fprintf(stderr, "%s: regions %d (%p), attention %d (%p), copied %d (%p), %d words\n", name, n, (const void *)g,
                     na, (const void *)att, nc, (const void *)cp, r->n_words);
    printf("{\"image\":");
    json_string(name);
    printf(",\"tokens\":[");
    for (int w = 0; w < r->n_words; w++) printf("%s", w ? "," : ""), json_string(r->words[w]);
    printf("],\"regions\":[");
    for (int k = 0; k < n; k++) {
        printf("%s{\"label\":", k ? "," : "");
        json_string(g[k].label);
        printf(",\"score\":%.9g,\"box\":[%.9g,%.9g,%.9g,%.9g]}", g[k].score, g[k].x0, g[k].y0, g[k].x1, g[k].y1);
    }
    printf("],\"region_attention\":[");
    for (int w = 0; att && w < r->n_words; w++) printf("%s", w ? "," : ""), json_floats(att + (size_t)w * n, n);
    printf("],\"copied\":");
    if (cp) json_floats(cp, nc);
    else printf("null");
    printf("}\n");
    return bad ? 3 : 0;
}

static int cmd_regions(int argc, char **argv) {
    ac_captioner *c = open_or_die();
    apply_setters(c);
    const char *given = getenv("CORE_GIVEN");
    ac_err err;
    if (given && ac_captioner_set_given(c, given, &err)) {
        fprintf(stderr, "given: %s\n", err.msg);
        return 1;
    }
    int rc = 0;
    for (int i = 0; i < argc; i++) {
        ac_result *r;
        if (ac_caption_file(c, argv[i], 0, &r, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            rc = 1;
            continue;
        }
        const int s = show_regions(r, argv[i]);
        if (s) rc = s;
        ac_result_free(r);
    }
    ac_captioner_close(c);
    return rc;
}

/* ac_caption_stream's source and sink: photo k is argv[k] as bytes in memory, tagged &tags[k]. */
typedef struct feed {
    int n, taken, calls, delivered, bad;
    unsigned char **data;
    size_t *size;
    int *tags;
    const char *const *names;
    const ac_captioner *c;
    FILE *json;
} feed;

static int feed_next(void *user, ac_input *in, void **tag) {
    feed *f = (feed *)user;
    if (f->taken == f->n) return -1;
    if (f->calls++ % 2) return 0; /* nothing has arrived now: the stream must wait, then ask again */
    memset(in, 0, sizeof *in);
    in->data = f->data[f->taken], in->size = f->size[f->taken];
    *tag = &f->tags[f->taken];
    f->taken++;
    return 1;
}

static void feed_wait(void *user) { (void)user; }

static void feed_done(void *user, void *tag, ac_result *r, int together) {
    feed *f = (feed *)user;
    const int k = (int)((int *)tag - f->tags);
    if (k != f->delivered || k >= f->taken) fprintf(stderr, "stream: photo %d delivered as number %d\n", k, f->delivered), f->bad = 1;
    else if (together < 1 || together > 3) fprintf(stderr, "stream: %d searched together (1..3)\n", together), f->bad = 1;
    else if (!r || r->error || r->image) fprintf(stderr, "stream: %s\n", !r ? "no result" : r->error ? r->error : "a path"), f->bad = 1;
    else if (show(f->c, r, f->names[k], f->json)) f->bad = 1;
    f->delivered++;
    ac_result_free(r);
}

static int cmd_stream(int argc, char **argv) {
    ac_captioner *c = open_or_die();
    apply_setters(c);
    const char *jp = getenv("CORE_JSON");
    feed f;
    memset(&f, 0, sizeof f);
    f.n = argc, f.names = (const char *const *)argv, f.c = c, f.json = jp ? fopen(jp, "w") : NULL;
    f.data = (unsigned char **)calloc((size_t)argc, sizeof *f.data);
    f.size = (size_t *)calloc((size_t)argc, sizeof *f.size);
    f.tags = (int *)calloc((size_t)argc, sizeof *f.tags);
    for (int i = 0; i < argc; i++) f.data[i] = slurp(argv[i], &f.size[i]);
    ac_err err;
    int rc = ac_caption_stream(c, feed_next, feed_wait, feed_done, &f, 3, 0, &err);
    if (rc) fprintf(stderr, "stream: %s\n", err.msg);
    else if (f.delivered != argc) fprintf(stderr, "stream: %d of %d delivered\n", f.delivered, argc), rc = 1;
    for (int i = 0; i < argc; i++) free(f.data[i]);
    free(f.data), free(f.size), free(f.tags);
    if (f.json) fclose(f.json);
    ac_captioner_close(c);
    return rc ? 1 : f.bad ? 3 : 0;
}

/* ac_caption_each's sink: the results must come in input order, each once. */
typedef struct each_sink {
    ac_captioner *c;
    const char *const *paths;
    char **stems;
    const char *dir;
    int next, nbest, bad;
    FILE *json, *alts;
} each_sink;

/* "0.90", or "-" (NaN): the confidence column of `attncap caption --nbest`. */
static const char *conf_text(double p, char buf[16]) {
    if (isnan(p)) snprintf(buf, 16, "-");
    else snprintf(buf, 16, "%.2f", p);
    return buf;
}

static void each_done(void *user, int index, ac_result *r) {
    each_sink *s = (each_sink *)user;
    const char *path = s->paths[index >= 0 ? index : 0];
    const double read = r ? ac_result_seconds(r, AC_SECONDS_READ) : 0, cnn = r ? ac_result_seconds(r, AC_SECONDS_CNN) : 0;
    const double search = r ? ac_result_seconds(r, AC_SECONDS_SEARCH) : 0, waited = r ? ac_result_seconds(r, AC_SECONDS_WAITED) : 0;
    char conf[16];
    if (index != s->next++) fprintf(stderr, "each: photo %d handed over as number %d\n", index, s->next - 1), s->bad = 1;
    else if (!r) fprintf(stderr, "each: %s: no result\n", path), s->bad = 1;
    else if (!isnan(ac_result_seconds(r, 4)) || !isnan(ac_result_seconds(r, -1)) || !isnan(ac_result_alternative_confidence(r, -1)) ||
             !isnan(ac_result_alternative_confidence(r, r->n_alternatives)))
        fprintf(stderr, "each: %s: an unknown stage or runner-up is not NaN\n", path), s->bad = 1;
    else if (!(read >= 0 && waited >= 0 && read < 60 && cnn < 60 && search < 60 && waited < 60))
        fprintf(stderr, "each: %s: seconds %g %g %g %g\n", path, read, cnn, search, waited), s->bad = 1;
    else if (r->error) { /* a photo that cannot be read never reached the CNN or the search */
        fprintf(stderr, "%s: %s\n", path, r->error);
        if (cnn != 0 || search != 0) fprintf(stderr, "each: %s: failed, yet CNN %g s, search %g s\n", path, cnn, search), s->bad = 1;
    } else if (!(read > 0 && cnn > 0 && search > 0)) {
        fprintf(stderr, "each: %s: captioned, yet read %g s, CNN %g s, search %g s\n", path, read, cnn, search), s->bad = 1;
    } else {
        if (s->nbest > 1) {
            printf("%s\t%s\t%s\t%.4f\n", path, r->text, conf_text(r->confidence, conf), r->score);
            for (int a = 0; a < r->n_alternatives; a++) {
                const double p = ac_result_alternative_confidence(r, a);
                printf("%s\t%s\t%s\t%.4f\n", path, r->alternatives[a].text, conf_text(p, conf), r->alternatives[a].score);
                if (s->alts) fprintf(s->alts, "%.17g\n", p);
            }
        } else if (!isnan(r->confidence)) printf("%s\t%s\t%.2f\n", path, r->text, r->confidence);
        else printf("%s\t%s\n", path, r->text);
        ac_err err;
        char where[4096];
        snprintf(where, sizeof where, "%s/%s/caption.json", s->dir, s->stems ? s->stems[index] : "");
        if (s->stems && (ac_result_write_overlays(s->c, r, s->dir, s->stems[index], 0, &err) ||
                         ac_result_write_json(s->c, r, where, NULL, 0, &err)))
            fprintf(stderr, "each: %s: %s\n", path, err.msg), s->bad = 1;
        char *line = s->json ? ac_result_json(s->c, r, NULL, 0) : NULL;
        if (line) fprintf(s->json, "%s\n", line);
        ac_free(line);
    }
    ac_result_free(r);
}

static int cmd_each(const char *dir, int argc, char **argv) {
    ac_captioner *c = open_or_die();
    apply_setters(c);
    const char *given = getenv("CORE_GIVEN"), *jp = getenv("CORE_JSON"), *ap = getenv("CORE_ALTS");
    ac_err err;
    if (given && ac_captioner_set_given(c, given, &err)) {
        fprintf(stderr, "given: %s\n", err.msg);
        return 1;
    }
    int lane_threads = 0, rc = 0;
    const int lanes = ac_captioner_lanes(c, argc, &lane_threads);
    printf("lanes\t%d\t%d\n", lanes, lane_threads);
    const char *w;
    for (int k = 0; (w = ac_captioner_given_unknown(c, k)); k++) {
        printf("unknown\t%s\n", w);
        const ac_model *m = ac_captioner_model(c);
        for (int id = 0; id < ac_model_words(m); id++)
            if (!strcmp(ac_model_word(m, id), w)) fprintf(stderr, "each: '%s' is word %d of the vocabulary\n", w, id), rc = 3;
    }
    each_sink s;
    memset(&s, 0, sizeof s);
    s.c = c, s.paths = (const char *const *)argv, s.dir = dir, s.nbest = getenv("CORE_NBEST") ? atoi(getenv("CORE_NBEST")) : 0;
    s.json = jp ? fopen(jp, "w") : NULL, s.alts = ap ? fopen(ap, "w") : NULL;
    ac_input *in = (ac_input *)calloc((size_t)argc, sizeof *in);
    for (int i = 0; i < argc; i++) in[i].path = argv[i];
    if (*dir && (!(s.stems = (char **)calloc((size_t)argc, sizeof *s.stems)) ||
                 ac_overlay_stems((const char *const *)argv, argc, s.stems, &err))) {
        fprintf(stderr, "stems: %s\n", err.msg);
        return 1;
    }
    if (ac_caption_each(c, in, argc, *dir ? AC_KEEP_PHOTO : 0u, each_done, &s, &err)) fprintf(stderr, "each: %s\n", err.msg), rc = 1;
    else if (s.next != argc) fprintf(stderr, "each: %d of %d handed over\n", s.next, argc), rc = 1;
    for (int i = 0; s.stems && i < argc; i++) ac_free(s.stems[i]);
    free(s.stems), free(in);
    if (s.json) fclose(s.json);
    if (s.alts) fclose(s.alts);
    ac_captioner_close(c);
    return rc ? rc : s.bad ? 3 : 0;
}

static int cmd_classify(const char *how, int argc, char **argv) {
    ac_classifier *cl = NULL;
    ac_err err;
    const char *precision = getenv("CORE_PRECISION");
    if (ac_classifier_open(NULL, NULL, 0, &cl, &err) || (precision && ac_classifier_set_precision(cl, precision, &err))) {
        fprintf(stderr, "classifier: %s\n", err.msg);
        ac_classifier_close(cl);
        return 2;
    }
    int rc = 0;
    for (int i = 0; i < argc; i++) {
        ac_input in;
        memset(&in, 0, sizeof in);
        unsigned char *buf = NULL;
        size_t n = 0;
        char name[4096];
        snprintf(name, sizeof name, "%s", argv[i]);
        if (!strcmp(how, "file")) in.path = argv[i];
        else if (!strcmp(how, "bytes")) in.data = buf = slurp(argv[i], &in.size);
        else { /* FILE:H:W */
            char *c1 = strchr(name, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
            if (!c2) return 2;
            *c1 = 0;
            in.height = atoi(c1 + 1), in.width = atoi(c2 + 1);
            in.rgb = buf = slurp(name, &n);
            if (!buf || n != (size_t)in.height * in.width * 3) return 2;
        }
        ac_classify_result *r;
        if (ac_classify(cl, &in, 5, &r, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            rc = 1;
        } else {
            if ((in.path != NULL) != (r->image != NULL)) rc = 1, fprintf(stderr, "%s: image %s\n", name, r->image);
            printf("%s\n", name);
            for (int j = 0; j < r->n_top; j++) {
                const char *label = ac_classifier_label(cl, r->top[j]);
                printf("  %.4f  %4d  %s\n", r->probs[r->top[j]], r->top[j], label ? label : "?");
            }
            ac_classify_result_free(r);
        }
        free(buf);
    }
    ac_classifier_close(cl);
    return rc;
}

static void expect(const char *what, int rc, const void *out, const ac_err *err, const char *want, int code);

/* The classifier's error paths (when it can be opened here: the data directory holds it). */
static void classify_errors(const char *missing) {
    ac_err err;
    ac_classifier *cl = NULL;
    if (ac_classifier_open(NULL, NULL, 1, &cl, &err)) {
        printf("skip classifier: %s\n", err.msg);
        return;
    }
    ac_classifier_close(cl), cl = NULL;
    expect("classifier_missing", ac_classifier_open("/nonexistent/c.tflite", NULL, 0, &cl, &err), cl, &err,
           "/nonexistent/c.tflite", -1);
    expect("classifier_labels_missing", ac_classifier_open(NULL, "/nonexistent/labels.txt", 0, &cl, &err), cl, &err,
           "/nonexistent/labels.txt", -1);
    expect("classifier_not_tflite", ac_classifier_open("samples/dog.jpg", NULL, 0, &cl, &err), cl, &err, "TFLite", -1);
    if (ac_classifier_open(NULL, NULL, 1, &cl, &err)) return;
    ac_classify_result *r = NULL;
    ac_input in;
    memset(&in, 0, sizeof in);
    in.path = missing;
    expect("classify_file_missing", ac_classify(cl, &in, 5, &r, &err), r, &err, missing, AC_ERR_BAD_IMAGE);
    in.path = NULL;
    expect("classify_no_input", ac_classify(cl, &in, 5, &r, &err), r, &err, NULL, AC_ERR_BAD_IMAGE);
    in.path = "samples/dog.jpg";
    expect("classify_top_negative", ac_classify(cl, &in, -1, &r, &err), r, &err, "top", -1);
    expect("classifier_precision_unknown", ac_classifier_set_precision(cl, "f64", &err), NULL, &err, "'f64'", -1);
    if (ac_classify(cl, &in, 1 << 20, &r, &err)) printf("bad classify_top_all: %s\n", err.msg);
    else {
        double sum = 0;
        for (int k = 0; k < r->n_classes; k++) sum += r->probs[k];
        int sorted = r->n_top == r->n_classes;
        for (int j = 1; sorted && j < r->n_top; j++) sorted = r->probs[r->top[j - 1]] >= r->probs[r->top[j]];
        if (!sorted || fabs(sum - 1) > 1e-3 || ac_classifier_label(cl, -1) || ac_classifier_label(cl, r->n_classes) ||
            !ac_classifier_label(cl, r->top[0]))
            printf("bad classify_top_all: %d of %d, sum %g, sorted %d\n", r->n_top, r->n_classes, sum, sorted);
        else printf("ok classify_top_all: %d classes, the best '%s'\n", r->n_classes, ac_classifier_label(cl, r->top[0]));
        ac_classify_result_free(r);
    }
    ac_classify_result_free(NULL);
    ac_classifier_close(cl);
    ac_classifier_close(NULL);
}

static int cmd_rgb(const char *path, int h, int w) {
    size_t n;
    unsigned char *px = slurp(path, &n);
    if (!px || n != (size_t)h * w * 3) {
        fprintf(stderr, "%s: not %d x %d x 3 bytes\n", path, h, w);
        return 2;
    }
    ac_captioner *c = open_or_die();
    ac_result *r;
    ac_err err;
    int rc = 1;
    if (ac_caption_rgb(c, px, h, w, 0, &r, &err) == 0) {
        rc = show(c, r, path, NULL);
        ac_result_free(r);
    } else fprintf(stderr, "%s\n", err.msg);
    ac_captioner_close(c);
    free(px);
    return rc;
}

static int cmd_overlays(const char *dir, int argc, char **argv) {
    ac_captioner *c = open_or_die();
    const char *fl = getenv("CORE_OVERLAY_FLAGS"), *size = getenv("CORE_OVERLAY_SIZE");
    const unsigned flags = fl ? (unsigned)atoi(fl) : 0u;
    ac_err serr;
    if (size && ac_captioner_set_overlay_size(c, atoi(size), &serr)) {
        fprintf(stderr, "overlay size: %s\n", serr.msg);
        ac_captioner_close(c);
        return 2;
    }
    int rc = 0;
    for (int i = 0; i < argc; i++) {
        ac_result *r;
        ac_err err;
        if (ac_caption_file(c, argv[i], AC_KEEP_PHOTO, &r, &err) ||
            (ac_result_write_overlays(c, r, dir, NULL, flags, &err) ? (ac_result_free(r), 1) : 0)) {
            fprintf(stderr, "%s\n", err.msg);
            rc = 1;
            continue;
        }
        printf("%s\t%d files\n", argv[i], r->n_overlays);
        ac_result_free(r);
    }
    ac_captioner_close(c);
    return rc;
}

static int cmd_eval(void) {
    enum { MAX_IMG = 256, MAX_REF = 16, LINE = 4096 };
    static char cand[MAX_IMG][LINE], refs[MAX_IMG][MAX_REF][LINE];
    static const char *cp[MAX_IMG], *rp[MAX_IMG][MAX_REF];
    static const char *const *rpp[MAX_IMG];
    static int nr[MAX_IMG];
    char line[LINE + 8];
    int n = 0;
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = 0;
        if (!strncmp(line, "cand\t", 5) && n < MAX_IMG) snprintf(cand[n++], LINE, "%s", line + 5);
        else if (!strncmp(line, "ref\t", 4) && n > 0 && nr[n - 1] < MAX_REF)
            snprintf(refs[n - 1][nr[n - 1]++], LINE, "%s", line + 4);
    }
    for (int i = 0; i < n; i++) {
        cp[i] = cand[i];
        for (int j = 0; j < nr[i]; j++) rp[i][j] = refs[i][j];
        rpp[i] = rp[i];
    }
    ac_metrics m;
    ac_err err;
    if (ac_evaluate(n, cp, rpp, nr, AC_EVAL_NO_METEOR, &m, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    printf("%.12g %.12g %.12g %.12g %.12g %.12g %d %d\n", m.bleu[0], m.bleu[1], m.bleu[2], m.bleu[3], m.rouge_l,
           m.cider_d, m.n, isnan(m.meteor));
    return 0;
}

/* A KEY=VALUE argument (or KEY, a switch: *value NULL) split into key [64] and *value. */
static void split_option(const char *arg, char key[64], const char **value) {
    const char *eq = strchr(arg, '=');
    snprintf(key, 64, "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
    *value = eq ? eq + 1 : NULL;
}

/* Training (1.4): KEY=VALUE (or KEY, a switch) set on a trainer, then run; prints how many events of
 * each kind came, in order (start first, finished last). */
typedef struct train_seen {
    int start, epochs, progress, evaluations, finished, out_of_order;
    long best_step;
} train_seen;

static void train_event(const ac_train_event *ev, void *user) {
    train_seen *s = (train_seen *)user;
    if (s->finished || (ev->kind != AC_TRAIN_START && !s->start && ev->kind != AC_TRAIN_RESUMED)) s->out_of_order++;
    switch (ev->kind) {
    case AC_TRAIN_START: s->start++; break;
    case AC_TRAIN_EPOCH: s->epochs++; break;
    case AC_TRAIN_PROGRESS: s->progress++; break;
    case AC_TRAIN_EVALUATION: s->evaluations++; break;
    case AC_TRAIN_FINISHED: s->finished++, s->best_step = ev->best_step; break;
    default: break;
    }
}

static int cmd_train(int argc, char **argv) {
    ac_trainer *t;
    ac_err err;
    if (ac_trainer_open(&t, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
    for (int i = 0; i < argc; i++) {
        char key[64];
        const char *value;
        split_option(argv[i], key, &value);
        if (ac_trainer_set(t, key, value, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            ac_trainer_close(t);
            return 1;
        }
    }
    train_seen s;
    memset(&s, 0, sizeof s);
    const int rc = ac_trainer_run(t, train_event, &s, &err);
    ac_trainer_close(t);
    if (rc) return fprintf(stderr, "%s\n", err.msg), 1;
    printf("start %d epochs %d evaluations %d finished %d best_step %ld out_of_order %d progress %d\n", s.start, s.epochs,
           s.evaluations, s.finished, s.best_step, s.out_of_order, s.progress > 0);
    return 0;
}

/* Feature caches (1.4): `features OUT KEY=VALUE... -- PHOTO...`, then prints the run's counts. */
static int cmd_features(int argc, char **argv) {
    ac_featurizer *f;
    ac_err err;
    if (argc < 1 || ac_featurizer_open(&f, &err)) return 1;
    int i = 1;
    for (; i < argc && strcmp(argv[i], "--"); i++) {
        char key[64];
        const char *value;
        split_option(argv[i], key, &value);
        if (ac_featurizer_set(f, key, value, &err)) {
            fprintf(stderr, "%s\n", err.msg);
            ac_featurizer_close(f);
            return 1;
        }
    }
    int progress = 0;
    ac_featurizer_stats st;
    const int n = i < argc ? argc - i - 1 : 0;
    const int rc = ac_featurizer_run(f, argv[0], (const char *const *)argv + i + 1, n, NULL, &progress, &st, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    else printf("photos %d encoded %d skipped %d failed %d grid %dx%d x %d layer %s\n", st.photos, st.encoded, st.skipped,
                st.failed, st.grid_h, st.grid_w, st.dim, ac_featurizer_get(f, "layer"));
    ac_featurizer_close(f);
    return rc ? 1 : 0;
}

/* The featurizer's refusals, as the trainer's. */
static void featurizer_errors(void) {
    ac_featurizer *f;
    ac_err err;
    if (ac_featurizer_open(&f, &err)) {
        printf("bad featurizer_open: %s\n", err.msg);
        return;
    }
    expect("featurizer_unknown_key", ac_featurizer_set(f, "lr", "1", &err), NULL, &err, "'lr'", AC_ERR_OPTIONS);
    expect("featurizer_resize", ac_featurizer_set(f, "resize", "sideways", &err), NULL, &err, "sideways", AC_ERR_OPTIONS);
    expect("featurizer_shard", ac_featurizer_set(f, "shard", "3/2", &err), NULL, &err, "shard", AC_ERR_OPTIONS);
    expect("featurizer_precision", ac_featurizer_set(f, "precision", "fp8", &err), NULL, &err, "fp8", AC_ERR_OPTIONS);
    expect("featurizer_size", ac_featurizer_set(f, "size", "8", &err), NULL, &err, "size", AC_ERR_OPTIONS);
    expect("featurizer_no_out", ac_featurizer_run(f, NULL, NULL, 0, NULL, NULL, NULL, &err), NULL, &err, "directory",
           AC_ERR_OPTIONS);
    const char *size = ac_featurizer_get(f, "size"), *resize = ac_featurizer_get(f, "resize");
    int sw = 0, flip_switch = 0;
    for (int i = 0; ac_featurizer_option(i, &sw); i++)
        if (!strcmp(ac_featurizer_option(i, NULL), "flip")) flip_switch = sw;
    if (!size || strcmp(size, "448") || !resize || *resize || !flip_switch) printf("bad featurizer_options\n");
    else printf("ok featurizer_options\n");
    ac_featurizer_close(f);
}

/* The trainer's refusals: an unknown key, a value of the wrong kind or out of range, a run without
 * its data; the defaults read back, the switches listed as such. */
static void trainer_errors(void) {
    ac_trainer *t;
    ac_err err;
    if (ac_trainer_open(&t, &err)) {
        printf("bad trainer_open: %s\n", err.msg);
        return;
    }
    expect("trainer_unknown_key", ac_trainer_set(t, "learning_rate", "0.1", &err), NULL, &err, "learning_rate", AC_ERR_OPTIONS);
    expect("trainer_not_a_number", ac_trainer_set(t, "batch", "8x", &err), NULL, &err, "batch", AC_ERR_OPTIONS);
    expect("trainer_out_of_range", ac_trainer_set(t, "lr", "2", &err), NULL, &err, "lr", AC_ERR_OPTIONS);
    expect("trainer_switch_value", ac_trainer_set(t, "fp16", "yes", &err), NULL, &err, "fp16", AC_ERR_OPTIONS);
    expect("trainer_needs_data", ac_trainer_run(t, NULL, NULL, &err), NULL, &err, "data, features and out", AC_ERR_OPTIONS);
    int sw = -1, n = 0, pointer_switch = 0, lr_value = 1;
    for (const char *k; (k = ac_trainer_option(n, &sw)); n++) {
        if (!strcmp(k, "pointer")) pointer_switch = sw;
        if (!strcmp(k, "lr")) lr_value = !sw;
    }
    const char *lr = ac_trainer_get(t, "lr"), *data = ac_trainer_get(t, "data");
    if (n < 50 || !pointer_switch || !lr_value || !lr || strcmp(lr, "0.0004") || !data || *data ||
        ac_trainer_get(t, "nope") || ac_trainer_set(t, "extra-data", "x.tsv", &err) ||
        strcmp(ac_trainer_get(t, "extra_data"), "x.tsv"))
        printf("bad trainer_options: %d options, lr '%s', data '%s'\n", n, lr ? lr : "(null)", data ? data : "(null)");
    else printf("ok trainer_options\n");
    ac_trainer_close(t);
    ac_trainer_close(NULL);
}

/* One error case: rc must be -1, *out NULL, the message non-empty and containing `want`. */
static void expect(const char *what, int rc, const void *out, const ac_err *err, const char *want, int code) {
    if (rc != -1) printf("bad %s: returned %d\n", what, rc);
    else if (out) printf("bad %s: a result on failure\n", what);
    else if (!err->msg[0] || strchr(err->msg, '\n')) printf("bad %s: message '%s'\n", what, err->msg);
    else if (want && !strstr(err->msg, want)) printf("bad %s: '%s' does not say '%s'\n", what, err->msg, want);
    else if (code >= 0 && err->code != code) printf("bad %s: code %d, not %d ('%s')\n", what, err->code, code, err->msg);
    else printf("ok %s: %s\n", what, err->msg);
}

static int cmd_errors(const char *dir) {
    char missing[4096], text[4096], trunc[4096];
    snprintf(missing, sizeof missing, "%s/missing.jpg", dir);
    snprintf(text, sizeof text, "%s/notes.jpg", dir);   /* made by the script: text named .jpg */
    snprintf(trunc, sizeof trunc, "%s/trunc.jpg", dir); /* a JPEG cut short */
    ac_err err;
    ac_model *m = NULL;
    expect("model_missing", ac_model_open("/nonexistent/attncap.safetensors", &m, &err), m, &err,
           "/nonexistent/attncap.safetensors", -1);
    ac_captioner *bad = NULL;
    expect("captioner_model_missing", ac_captioner_open("/nonexistent/m.safetensors", NULL, &bad, &err), bad, &err,
           "/nonexistent/m.safetensors", -1);
    ac_captioner_opts o;
    ac_captioner_opts_init(&o);
    o.encoder = "/nonexistent/enc.tflite";
    expect("encoder_missing", ac_captioner_open(NULL, &o, &bad, &err), bad, &err, "/nonexistent/enc.tflite", -1);
    ac_captioner_opts_init(&o);
    o.beam = -3;
    expect("bad_options", ac_captioner_open(NULL, &o, &bad, &err), bad, &err, "beam", -1);
    ac_captioner_opts_init(&o);
    o.tags = "auto", o.tag_table = "/nonexistent/words.tsv";
    expect("tag_table_missing", ac_captioner_open(NULL, &o, &bad, &err), bad, &err, "/nonexistent/words.tsv", -1);

    ac_captioner *c = open_or_die();
    if (ac_model_open(NULL, &m, &err)) printf("bad model_open: %s\n", err.msg);
    else {
        const ac_model *cm = ac_captioner_model(c);
        if (strcmp(ac_model_path(m), ac_model_path(cm)) || ac_model_words(m) != ac_model_words(cm) ||
            ac_model_words(m) < 4 || !ac_model_word(m, 3) || ac_model_word(m, -1) || ac_model_word(m, ac_model_words(m)))
            printf("bad model_queries\n");
        else printf("ok model_queries: %s, %d words\n", ac_model_path(m), ac_model_words(m));
        ac_model_close(m);
    }
    ac_result *r = NULL;
    expect("file_missing", ac_caption_file(c, missing, 0, &r, &err), r, &err, missing, AC_ERR_BAD_IMAGE);
    expect("file_not_an_image", ac_caption_file(c, text, 0, &r, &err), r, &err, text, AC_ERR_BAD_IMAGE);
    expect("file_truncated", ac_caption_file(c, trunc, 0, &r, &err), r, &err, trunc, AC_ERR_BAD_IMAGE);
    expect("file_null", ac_caption_file(c, NULL, 0, &r, &err), r, &err, NULL, AC_ERR_BAD_IMAGE);
    const char junk[] = "this is not a photo at all, just some bytes";
    expect("bytes_junk", ac_caption_bytes(c, junk, sizeof junk, 0, &r, &err), r, &err, "bytes", AC_ERR_BAD_IMAGE);
    const unsigned char jpeg_head[] = {0xff, 0xd8, 0xff, 0xe0, 0, 16, 'J', 'F', 'I', 'F', 0};
    expect("bytes_truncated_jpeg", ac_caption_bytes(c, jpeg_head, sizeof jpeg_head, 0, &r, &err), r, &err, "bytes",
           AC_ERR_BAD_IMAGE);
    expect("bytes_empty", ac_caption_bytes(c, junk, 0, 0, &r, &err), r, &err, NULL, AC_ERR_BAD_IMAGE);
    unsigned char px[12] = {0};
    expect("rgb_bad_size", ac_caption_rgb(c, px, 0, 4, 0, &r, &err), r, &err, "bad size", AC_ERR_BAD_IMAGE);
    expect("rgb_too_many_pixels", ac_caption_rgb(c, px, 1 << 20, 1 << 20, 0, &r, &err), r, &err, "limit",
           AC_ERR_BAD_IMAGE);
    expect("set_given_empty", ac_captioner_set_given(c, "   ", &err), NULL, &err, "no words", -1);

    /* the 1.2 setters: a refused setting leaves the captioner as it was */
    ac_result *before = NULL, *after = NULL;
    if (ac_caption_file(c, "samples/dog.jpg", 0, &before, &err)) printf("bad setters_caption: %s\n", err.msg);
    expect("precision_unknown", ac_captioner_set_precision(c, "f16", &err), NULL, &err, "unknown precision 'f16'", -1);
    expect("precision_unknown_name_only", ac_captioner_set_precision(NULL, "fp32", &err), NULL, &err, "'fp32'", -1);
    if (ac_captioner_set_precision(NULL, "int8", &err) || ac_captioner_set_precision(NULL, "auto", &err))
        printf("bad precision_name_only: int8/auto refused: %s\n", err.msg);
    else printf("ok precision_name_only\n");
    if (ac_captioner_set_precision(c, "bf16x2", &err) == 0) ac_captioner_set_precision(c, NULL, &err); /* AMX here */
    else expect("precision_bf16x2_without_amx", -1, NULL, &err, "AMX", -1);
    expect("overlay_size_too_small", ac_captioner_set_overlay_size(c, 63, &err), NULL, &err, "size 63", -1);
    expect("overlay_size_negative", ac_captioner_set_overlay_size(c, -1, &err), NULL, &err, "size -1", -1);
    expect("search_unknown_flag", ac_captioner_set_search(c, 4u, &err), NULL, &err, "unknown flags 0x4", -1);
    expect("naming_not_json", ac_captioner_set_naming_record(c, "{\"threshold\": 1", &err), NULL, &err, "JSON", -1);
    expect("naming_unknown_key", ac_captioner_set_naming_record(c, "{\"bogus\": 1}", &err), NULL, &err, "bogus", -1);
    expect("naming_out_of_range", ac_captioner_set_naming_record(c, "{\"threshold\": 2}", &err), NULL, &err,
           "threshold", -1);
    expect("tags_table_missing", ac_captioner_set_tags(c, "auto", "/nonexistent/words.tsv", &err), NULL, &err,
           "/nonexistent/words.tsv", -1);
    expect("tags_given_empty", ac_captioner_set_tags(c, "", NULL, &err), NULL, &err, "no words", -1);
    if (!before || ac_caption_file(c, "samples/dog.jpg", 0, &after, &err)) printf("bad setters_kept: %s\n", err.msg);
    else if (strcmp(before->text, after->text) || before->logprob != after->logprob)
        printf("bad setters_kept: '%s' after the refused settings, '%s' before\n", after->text, before->text);
    else printf("ok setters_kept: %s\n", after->text);
    ac_result_free(before), ac_result_free(after);
    expect("stream_no_callback", ac_caption_stream(c, NULL, NULL, NULL, NULL, 0, 0, &err), NULL, &err, "stream", -1);

    /* a batch with good and bad photos: results for all, errors on the bad ones only */
    ac_input in[3];
    memset(in, 0, sizeof in);
    in[0].path = missing;
    in[1].rgb = px, in[1].height = 2, in[1].width = 2;
    in[2].data = junk, in[2].size = sizeof junk;
    ac_result *out[3];
    if (ac_caption_batch(c, in, 3, 0, out, &err)) printf("bad batch_mixed: %s\n", err.msg);
    else {
        if (!out[0]->error || !strstr(out[0]->error, missing) || out[0]->error_code != AC_ERR_BAD_IMAGE ||
            strcmp(out[0]->image, missing))
            printf("bad batch_mixed: missing file: '%s'\n", out[0]->error ? out[0]->error : "(no error)");
        else if (out[1]->error || !out[1]->text[0] || out[1]->image)
            printf("bad batch_mixed: pixels: '%s'\n", out[1]->error ? out[1]->error : out[1]->text);
        else if (!out[2]->error || out[2]->error_code != AC_ERR_BAD_IMAGE)
            printf("bad batch_mixed: junk bytes got no error\n");
        else if (ac_result_json(c, out[0], NULL, 0)) printf("bad batch_mixed: JSON of a failed photo\n");
        else printf("ok batch_mixed: %s | %s | %s\n", out[0]->error, out[1]->text, out[2]->error);
        { /* 1.3's regions getters of a failed photo: nothing, NULL */
            const ac_result_region *g = (const ac_result_region *)out;
            const float *att = (const float *)out, *cp = (const float *)out;
            if (ac_result_regions(out[0], &g) || g || ac_result_region_attention(out[0], &att) || att ||
                ac_result_copied(out[2], &cp) || cp)
                printf("bad regions_of_a_failed_photo: regions, attention or copied shares\n");
            else printf("ok regions_of_a_failed_photo\n");
        }
        /* overlays of a result that kept no photo, and of a failed one */
        int rc1 = ac_result_write_overlays(c, out[1], dir, NULL, 0, &err);
        expect("overlays_no_photo", rc1, NULL, &err, "AC_KEEP_PHOTO", -1);
        expect("overlays_unknown_flag", ac_result_write_overlays(c, out[1], dir, NULL, 64u, &err), NULL, &err,
               "unknown flags 0x40", -1);
        int rc2 = ac_result_write_overlays(c, out[0], dir, NULL, 0, &err);
        expect("overlays_failed_photo", rc2, NULL, &err, "no caption", -1);
        /* caption.json (1.3): not into a missing folder (nothing left there), not of a failed photo */
        char json_path[4200];
        snprintf(json_path, sizeof json_path, "%s/no-such-folder/caption.json", dir);
        expect("json_file_no_folder", ac_result_write_json(c, out[1], json_path, NULL, 0, &err), NULL, &err, json_path, -1);
        FILE *left = fopen(json_path, "r");
        if (left) printf("bad json_file_no_folder: %s exists\n", json_path), fclose(left);
        snprintf(json_path, sizeof json_path, "%s/failed.json", dir);
        expect("json_file_failed_photo", ac_result_write_json(c, out[0], json_path, NULL, 0, &err), NULL, &err, "no caption", -1);
        if ((left = fopen(json_path, "r"))) printf("bad json_file_failed_photo: %s exists\n", json_path), fclose(left);
        if (ac_result_seconds(out[0], AC_SECONDS_CNN) != 0 || ac_result_seconds(out[0], AC_SECONDS_SEARCH) != 0 ||
            !(ac_result_seconds(out[1], AC_SECONDS_CNN) > 0) || !isnan(ac_result_alternative_confidence(out[1], 0)))
            printf("bad seconds_of_a_failed_photo: CNN %g, search %g; the pixels' CNN %g\n", ac_result_seconds(out[0], AC_SECONDS_CNN),
                   ac_result_seconds(out[0], AC_SECONDS_SEARCH), ac_result_seconds(out[1], AC_SECONDS_CNN));
        else printf("ok seconds_of_a_failed_photo\n");
        for (int i = 0; i < 3; i++) ac_result_free(out[i]);
    }
    expect("batch_null_inputs", ac_caption_batch(c, NULL, 2, 0, out, &err), NULL, &err, "batch", -1);
    expect("each_null_inputs", ac_caption_each(c, NULL, 2, 0, each_done, NULL, &err), NULL, &err, "each", -1);
    expect("each_no_callback", ac_caption_each(c, in, 3, 0, NULL, NULL, &err), NULL, &err, "each", -1);
    if (ac_captioner_given_unknown(c, 0)) printf("bad given_unknown_none: '%s'\n", ac_captioner_given_unknown(c, 0));
    else printf("ok given_unknown_none\n");
    ac_metrics mt;
    expect("eval_empty", ac_evaluate(0, NULL, NULL, NULL, 0, &mt, &err), NULL, &err, "no captions", -1);
    const char *cands[1] = {"a dog"};
    const char *const *refs[1] = {NULL};
    const int nref[1] = {1};
    expect("eval_null_reference", ac_evaluate(1, cands, refs, nref, 0, &mt, &err), NULL, &err, "image 0", -1);
    classify_errors(missing);
    trainer_errors();
    featurizer_errors();
    ac_result_free(NULL), ac_captioner_close(NULL), ac_model_close(NULL), ac_free(NULL); /* no-ops */
    ac_captioner_close(c);
    printf("version %s %s\n", AC_VERSION, ac_version());
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 3 && !strcmp(argv[1], "caption")) return cmd_caption(argc - 2, argv + 2, 0);
    if (argc >= 3 && !strcmp(argv[1], "bytes")) return cmd_caption(argc - 2, argv + 2, 1);
    if (argc >= 3 && !strcmp(argv[1], "stream")) return cmd_stream(argc - 2, argv + 2);
    if (argc >= 4 && !strcmp(argv[1], "each")) return cmd_each(argv[2], argc - 3, argv + 3);
    if (argc >= 3 && !strcmp(argv[1], "regions")) return cmd_regions(argc - 2, argv + 2);
    if (argc == 5 && !strcmp(argv[1], "rgb")) return cmd_rgb(argv[2], atoi(argv[3]), atoi(argv[4]));
    if (argc >= 4 && !strcmp(argv[1], "classify")) return cmd_classify(argv[2], argc - 3, argv + 3);
    if (argc >= 4 && !strcmp(argv[1], "overlays")) return cmd_overlays(argv[2], argc - 3, argv + 3);
    if (argc == 2 && !strcmp(argv[1], "eval")) return cmd_eval();
    if (argc == 3 && !strcmp(argv[1], "errors")) return cmd_errors(argv[2]);
    if (argc >= 2 && !strcmp(argv[1], "train")) return cmd_train(argc - 2, argv + 2);
    if (argc >= 3 && !strcmp(argv[1], "features")) return cmd_features(argc - 2, argv + 2);
    fprintf(stderr, "usage: core_api caption|bytes|stream|each|rgb|classify|overlays|eval|errors|train|features ...\n");
    return 2;
}
