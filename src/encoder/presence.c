/* presence.c: the presence head (presence.h): its file, forward, backward and fit. */
#include "attncap/presence.h"

#include <cblas.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncap/safetensors.h"
#include "alloc_internal.h"

#define PRESENCE_FORMAT "attncap-presence-1"
#define MAX_GROUPS 1024
#define MAX_DIM 65536

void ac_presence_groups_free(ac_presence_group *g, int k) {
    for (int i = 0; g && i < k; i++) {
        free(g[i].name);
        for (int f = 0; f < g[i].n_forms; f++) free(g[i].forms[f]);
        free(g[i].forms);
    }
    free(g);
}

void ac_presence_free(ac_presence *p) {
    if (!p) return;
    free(p->w), free(p->b), free(p->encoder_json);
    ac_presence_groups_free(p->groups, p->k);
    memset(p, 0, sizeof *p);
}

/* dst = a deep copy of src's k groups. */
static int copy_groups(const ac_presence_group *src, int k, ac_presence_group **dst, ac_err *err) {
    ac_presence_group *g = ac_calloc((size_t)k, sizeof *g);
    if (!g) return ac_errf(err, "out of memory");
    for (int i = 0; i < k; i++) {
        g[i].name = ac_strdup(src[i].name);
        g[i].prior = src[i].prior;
        g[i].forms = ac_calloc((size_t)src[i].n_forms + 1, sizeof *g[i].forms);
        if (!g[i].name || !g[i].forms) return ac_presence_groups_free(g, k), ac_errf(err, "out of memory");
        for (; g[i].n_forms < src[i].n_forms; g[i].n_forms++)
            if (!(g[i].forms[g[i].n_forms] = ac_strdup(src[i].forms[g[i].n_forms])))
                return ac_presence_groups_free(g, k), ac_errf(err, "out of memory");
    }
    *dst = g;
    return 0;
}

int ac_presence_init(ac_presence *p, int k, int dim, const ac_presence_group *groups, const char *encoder_json,
                     ac_err *err) {
    memset(p, 0, sizeof *p);
    if (k < 1 || k > MAX_GROUPS || dim < 1 || dim > MAX_DIM) return ac_errf(err, "presence: bad size %d x %d", k, dim);
    p->w = ac_calloc((size_t)k * dim, sizeof *p->w);
    p->b = ac_calloc((size_t)k, sizeof *p->b);
    p->encoder_json = ac_strdup(encoder_json ? encoder_json : "{}");
    if (!p->w || !p->b || !p->encoder_json || copy_groups(groups, k, &p->groups, err)) {
        free(p->w), free(p->b), free(p->encoder_json);
        memset(p, 0, sizeof *p);
        return ac_errf(err, "out of memory");
    }
    p->k = k, p->dim = dim;
    return 0;
}

/* "groups": [{"name": ..., "forms": [...]}, ...] -> p->groups (k of them). */
static int parse_groups(const char *json, int k, ac_presence_group **out, ac_err *err) {
    cJSON *j = json ? cJSON_Parse(json) : NULL;
    if (!cJSON_IsArray(j) || cJSON_GetArraySize(j) != k) {
        cJSON_Delete(j);
        return ac_errf(err, "metadata 'groups' is not an array of %d groups", k);
    }
    ac_presence_group *g = ac_calloc((size_t)k, sizeof *g);
    int rc = g ? 0 : ac_errf(err, "out of memory"), i = 0;
    for (const cJSON *e = j->child; !rc && e; e = e->next, i++) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name"), *forms = cJSON_GetObjectItemCaseSensitive(e, "forms"),
                    *prior = cJSON_GetObjectItemCaseSensitive(e, "prior");
        const int nf = cJSON_GetArraySize(forms);
        if (!cJSON_IsString(name) || !*name->valuestring || !cJSON_IsArray(forms) || nf < 1 || nf > AC_PRESENCE_MAX_FORMS) {
            rc = ac_errf(err, "metadata 'groups': group %d needs a name and 1..%d forms", i, AC_PRESENCE_MAX_FORMS);
            break;
        }
        if (prior && (!cJSON_IsNumber(prior) || !(prior->valuedouble >= 0 && prior->valuedouble <= 1))) {
            rc = ac_errf(err, "metadata 'groups': group %d's prior is not a number in [0, 1]", i);
            break;
        }
        g[i].prior = prior ? (float)prior->valuedouble : 0;
        g[i].name = ac_strdup(name->valuestring);
        g[i].forms = ac_calloc((size_t)nf + 1, sizeof *g[i].forms);
        if (!g[i].name || !g[i].forms) rc = ac_errf(err, "out of memory");
        for (const cJSON *f = forms->child; !rc && f; f = f->next) {
            if (!cJSON_IsString(f) || !*f->valuestring) rc = ac_errf(err, "metadata 'groups': group '%s' has an empty form", g[i].name);
            else if (!(g[i].forms[g[i].n_forms++] = ac_strdup(f->valuestring))) rc = ac_errf(err, "out of memory");
        }
    }
    cJSON_Delete(j);
    if (rc) return ac_presence_groups_free(g, k), -1;
    *out = g;
    return 0;
}

static int from_file(const ac_st_file *f, ac_presence *p, ac_err *err) {
    const char *format = ac_st_meta(f, "format");
    if (!format || strcmp(format, PRESENCE_FORMAT)) return ac_errf(err, "not a presence head (format is not %s)", PRESENCE_FORMAT);
    const ac_st_tensor *w = ac_st_find(f, "w"), *b = ac_st_find(f, "b");
    if (!w || !b || w->ndim != 2 || b->ndim != 1 || w->shape[0] != b->shape[0] || w->shape[0] < 1 ||
        w->shape[0] > MAX_GROUPS || w->shape[1] < 1 || w->shape[1] > MAX_DIM || f->n_tensors != 2)
        return ac_errf(err, "needs exactly the tensors w [K, D] and b [K]");
    const int k = (int)w->shape[0], dim = (int)w->shape[1];
    memset(p, 0, sizeof *p);
    const char *enc = ac_st_meta(f, "encoder");
    p->w = ac_malloc(sizeof *p->w * (size_t)k * dim);
    p->b = ac_malloc(sizeof *p->b * (size_t)k);
    p->encoder_json = ac_strdup(enc ? enc : "{}");
    int rc = !p->w || !p->b || !p->encoder_json ? ac_errf(err, "out of memory") : 0;
    if (!rc) rc = ac_st_to_f32(w, p->w, (size_t)k * dim, "w", err) || ac_st_to_f32(b, p->b, (size_t)k, "b", err) ? -1 : 0;
    for (size_t i = 0; !rc && i < (size_t)k * dim; i++)
        if (!isfinite(p->w[i])) rc = ac_errf(err, "w has a value that is not finite");
    for (int i = 0; !rc && i < k; i++)
        if (!isfinite(p->b[i])) rc = ac_errf(err, "b has a value that is not finite");
    if (!rc) rc = parse_groups(ac_st_meta(f, "groups"), k, &p->groups, err);
    if (rc) {
        free(p->w), free(p->b), free(p->encoder_json);
        memset(p, 0, sizeof *p);
        return -1;
    }
    p->k = k, p->dim = dim;
    return 0;
}

int ac_presence_load(const char *path, ac_presence *p, ac_err *err) {
    ac_st_file f;
    memset(p, 0, sizeof *p);
    if (ac_st_read(path, &f, err)) return -1;
    const int rc = from_file(&f, p, err);
    ac_st_free(&f);
    if (rc) ac_err_prefix(err, "%s", path);
    return rc;
}

int ac_presence_load_mem(const void *data, size_t len, const char *name, ac_presence *p, ac_err *err) {
    ac_st_file f;
    memset(p, 0, sizeof *p);
    if (ac_st_read_mem(data, len, name, &f, err)) return -1;
    const int rc = from_file(&f, p, err);
    ac_st_free(&f);
    if (rc) ac_err_prefix(err, "%s", name);
    return rc;
}

static char *groups_json(const ac_presence *p) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < p->k; i++) {
        cJSON *g = cJSON_CreateObject(), *forms = cJSON_CreateArray();
        cJSON_AddItemToArray(a, g);
        cJSON_AddStringToObject(g, "name", p->groups[i].name);
        cJSON_AddItemToObject(g, "forms", forms);
        for (int f = 0; f < p->groups[i].n_forms; f++) cJSON_AddItemToArray(forms, cJSON_CreateString(p->groups[i].forms[f]));
        if (p->groups[i].prior > 0) cJSON_AddNumberToObject(g, "prior", round(p->groups[i].prior * 1e6) / 1e6);
    }
    char *s = a ? cJSON_PrintUnformatted(a) : NULL;
    cJSON_Delete(a);
    return s;
}

int ac_presence_save(const ac_presence *p, const char *path, int fp16, const char *training_json, ac_err *err) {
    const size_t nw = (size_t)p->k * p->dim;
    uint16_t *h = fp16 ? ac_malloc(sizeof *h * (nw + (size_t)p->k)) : NULL;
    char *groups = groups_json(p);
    ac_st_writer w;
    ac_st_writer_init(&w);
    int rc = !groups || (fp16 && !h) ? ac_errf(err, "%s: out of memory", path) : 0;
    if (!rc && fp16) ac_f32_to_f16_n(p->w, h, nw), ac_f32_to_f16_n(p->b, h + nw, (size_t)p->k);
    const int64_t ws[2] = {p->k, p->dim}, bs[1] = {p->k};
    const ac_st_dtype dt = fp16 ? AC_ST_F16 : AC_ST_F32;
    if (!rc)
        rc = ac_st_writer_add(&w, "w", dt, 2, ws, fp16 ? (const void *)h : (const void *)p->w, err) ||
                     ac_st_writer_add(&w, "b", dt, 1, bs, fp16 ? (const void *)(h + nw) : (const void *)p->b, err) ||
                     ac_st_writer_meta(&w, "format", PRESENCE_FORMAT, err) ||
                     ac_st_writer_meta(&w, "encoder", p->encoder_json ? p->encoder_json : "{}", err) ||
                     ac_st_writer_meta(&w, "groups", groups, err) ||
                     (training_json && ac_st_writer_meta(&w, "training", training_json, err))
                 ? -1
                 : 0;
    if (!rc) rc = ac_st_write(&w, path, err);
    ac_st_writer_free(&w);
    free(h), free(groups);
    return rc;
}

static float sigmoidf(float z) { return z >= 0 ? 1 / (1 + expf(-z)) : expf(z) / (1 + expf(z)); }

void ac_presence_forward(const ac_presence *p, const float *x, int n, float *prob) {
    /* prob[n, k] = x[n, dim] w[k, dim]^T, then + b and the sigmoid */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, p->k, p->dim, 1, x, p->dim, p->w, p->dim, 0, prob, p->k);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < p->k; j++) prob[(size_t)i * p->k + j] = sigmoidf(prob[(size_t)i * p->k + j] + p->b[j]);
}

double ac_presence_backward(const ac_presence *p, const float *x, const float *prob, const uint8_t *y, int n,
                            float l2, float *dw, float *db) {
    const size_t nk = (size_t)n * p->k;
    const double scale = 1.0 / (double)nk;
    float *g = ac_malloc(sizeof *g * (nk ? nk : 1)); /* d loss / d logit = (p - y) / (n k) */
    double loss = 0;
    for (size_t i = 0; i < nk; i++) {
        const double q = prob[i] < 1e-7f ? 1e-7 : prob[i] > 1 - 1e-7f ? 1 - 1e-7 : prob[i];
        loss -= y[i] ? log(q) : log(1 - q);
        if (g) g[i] = (float)((prob[i] - (y[i] ? 1.0 : 0.0)) * scale);
    }
    loss *= scale;
    for (size_t i = 0; i < (size_t)p->k * p->dim; i++) loss += 0.5 * l2 * (double)p->w[i] * p->w[i];
    if (!g) return NAN;
    /* dw[k, dim] = g[n, k]^T x[n, dim] + l2 w; db[k] = sum over n of g */
    memcpy(dw, p->w, sizeof *dw * (size_t)p->k * p->dim);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, p->k, p->dim, n, 1, g, p->k, x, p->dim, l2, dw, p->dim);
    for (int j = 0; j < p->k; j++) {
        double s = 0;
        for (int i = 0; i < n; i++) s += g[(size_t)i * p->k + j];
        db[j] = (float)s;
    }
    free(g);
    return loss;
}

ac_presence_fit_opts ac_presence_fit_defaults(void) {
    return (ac_presence_fit_opts){.steps = 400, .lr = 0.01f, .l2 = 1e-3f};
}

int ac_presence_fit(ac_presence *p, const float *x, const uint8_t *y, int n, const ac_presence_fit_opts *o,
                    double *final_loss, ac_err *err) {
    const size_t nw = (size_t)p->k * p->dim, np = nw + (size_t)p->k;
    float *prob = ac_malloc(sizeof *prob * (size_t)n * p->k), *grad = ac_malloc(sizeof *grad * np);
    double *m = ac_calloc(np, sizeof *m), *v = ac_calloc(np, sizeof *v);
    int rc = !prob || !grad || !m || !v ? ac_errf(err, "out of memory") : 0;
    double loss = NAN;
    const double b1 = 0.9, b2 = 0.999;
    for (int t = 1; !rc && t <= o->steps; t++) {
        ac_presence_forward(p, x, n, prob);
        loss = ac_presence_backward(p, x, prob, y, n, o->l2, grad, grad + nw);
        if (isnan(loss)) {
            rc = ac_errf(err, "out of memory");
            break;
        }
        const double c1 = 1 - pow(b1, t), c2 = 1 - pow(b2, t);
        for (size_t i = 0; i < np; i++) {
            m[i] = b1 * m[i] + (1 - b1) * grad[i];
            v[i] = b2 * v[i] + (1 - b2) * (double)grad[i] * grad[i];
            float *param = i < nw ? &p->w[i] : &p->b[i - nw];
            *param -= (float)(o->lr * (m[i] / c1) / (sqrt(v[i] / c2) + 1e-8));
        }
        if (o->progress && o->progress(o->ctx, t, o->steps, loss)) rc = ac_errf(err, "stopped");
    }
    if (!rc) { /* the loss of the head as returned (steps 0: as given) */
        ac_presence_forward(p, x, n, prob);
        loss = ac_presence_backward(p, x, prob, y, n, o->l2, grad, grad + nw);
        if (isnan(loss)) rc = ac_errf(err, "out of memory");
    }
    if (!rc && final_loss) *final_loss = loss;
    free(prob), free(grad), free(m), free(v);
    return rc;
}

void ac_presence_pool(const float *ann, int grid_w, int dim, const ac_grid_window *win, float *x) {
    memset(x, 0, sizeof *x * (size_t)dim);
    for (int yy = win->y; yy < win->y + win->h; yy++)
        for (int xx = win->x; xx < win->x + win->w; xx++) {
            const float *a = ann + ((size_t)yy * grid_w + xx) * dim;
            for (int d = 0; d < dim; d++) x[d] += a[d];
        }
    const float inv = 1.0f / (float)(win->h * win->w);
    for (int d = 0; d < dim; d++) x[d] *= inv;
}

int ac_presence_rows(const ac_presence *p, const float *ann, int grid_h, int grid_w, const ac_grid_window *win,
                     int n_win, float *prob, ac_err *err) {
    if (grid_h < 1 || grid_w < 1 || n_win < 0 || (n_win && !win)) return ac_errf(err, "presence: bad grid or windows");
    float *x = ac_malloc(sizeof *x * (size_t)(1 + n_win) * p->dim);
    if (!x) return ac_errf(err, "out of memory");
    const ac_grid_window whole = {0, 0, grid_h, grid_w};
    for (int r = 0; r <= n_win; r++) {
        const ac_grid_window *wi = r ? &win[r - 1] : &whole;
        if (wi->y < 0 || wi->x < 0 || wi->h < 1 || wi->w < 1 || wi->y + wi->h > grid_h || wi->x + wi->w > grid_w) {
            free(x);
            return ac_errf(err, "presence: window %d outside the %dx%d grid", r - 1, grid_h, grid_w);
        }
        ac_presence_pool(ann, grid_w, p->dim, wi, x + (size_t)r * p->dim);
    }
    ac_presence_forward(p, x, 1 + n_win, prob);
    free(x);
    return 0;
}
