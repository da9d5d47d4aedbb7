/* report.c: the HTML evaluation report, and the gallery of a caption run (see report.h). */
#include "attncap/report.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "strmap.h"
#include "alloc_internal.h"

typedef struct {
    char *p;
    size_t n, cap;
    int oom;
} buf;

static void put(buf *b, const char *s, size_t l) {
    if (b->oom) return;
    if (b->n + l + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 1 << 16;
        while (nc < b->n + l + 1) nc *= 2;
        char *np = ac_realloc(b->p, nc);
        if (!np) { b->oom = 1; return; }
        b->p = np, b->cap = nc;
    }
    memcpy(b->p + b->n, s, l);
    b->n += l;
    b->p[b->n] = 0;
}
static void puts_(buf *b, const char *s) { put(b, s, strlen(s)); }
static void printf_(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void printf_(buf *b, const char *fmt, ...) {
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}
/* HTML-escaped text (also fine inside double-quoted attributes). */
static void esc(buf *b, const char *s) {
    for (; s && *s; s++) {
        switch (*s) {
        case '&': puts_(b, "&amp;"); break;
        case '<': puts_(b, "&lt;"); break;
        case '>': puts_(b, "&gt;"); break;
        case '"': puts_(b, "&quot;"); break;
        case '\'': puts_(b, "&#39;"); break;
        default: put(b, s, 1);
        }
    }
}
/* A relative URL: percent-encode what is not safe in a path. */
static void url(buf *b, const char *s) {
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("-_./~", c)) put(b, s, 1);
        else printf_(b, "%%%02X", c);
    }
}
static void score(buf *b, double x) {
    if (isnan(x)) puts_(b, "&ndash;");
    else printf_(b, "%.3f", x);
}

typedef struct { double key; int i; } keyed;
static int by_key(const void *a, const void *b) {
    const keyed *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->i - y->i;
}

static const char *CSS =
    "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}"
    "h1{font-size:22px;margin:0 0 4px}.sub{color:#666;margin:0 0 16px}"
    "table.scores{border-collapse:collapse;margin:0 0 20px}"
    "table.scores td,table.scores th{border:1px solid #ccc;padding:4px 10px;text-align:center}"
    "table.scores td{font-size:18px;font-weight:600}"
    "#t{border-collapse:collapse;width:100%}#t th,#t td{border-bottom:1px solid #ddd;padding:6px;vertical-align:top;text-align:left}"
    "#t th{background:#f4f4f4;position:sticky;top:0;cursor:pointer;user-select:none;white-space:nowrap}"
    "#t th.num,#t td.num{text-align:right;font-variant-numeric:tabular-nums}"
    "#t th.asc:after{content:' \\25B2'}#t th.desc:after{content:' \\25BC'}"
    "#t img{max-width:160px;max-height:160px;display:block}"
    "td.cap{font-weight:600;max-width:320px}ul.refs{margin:0;padding-left:18px;color:#444;max-width:420px}"
    ".id{color:#888;font-size:12px}"
    ".obj{font-size:13px;max-width:220px}.obj .t{color:#17702f}.obj .h{color:#b00020;text-decoration:line-through}"
    ".obj .m{color:#888}"
    "#q{font:inherit;padding:4px 8px;width:320px;margin:0 8px 12px 0}#qn{color:#666}"
    "svg.hist{display:block;margin:0 0 16px}svg.hist text{font:11px system-ui,sans-serif;fill:#444}"
    ".model{font-weight:600}.oth{color:#555;max-width:280px}.up{color:#17702f}.down{color:#b00020}";

static const char *JS =
    "(function(){var t=document.getElementById('t'),hs=t.tHead.rows[0].cells;"
    "for(var i=0;i<hs.length;i++)(function(i){var h=hs[i];if(!h.dataset.k)return;h.onclick=function(){"
    "var asc=!h.classList.contains('asc');for(var j=0;j<hs.length;j++)hs[j].classList.remove('asc','desc');"
    "h.classList.add(asc?'asc':'desc');var b=t.tBodies[0],rows=Array.prototype.slice.call(b.rows),k=h.dataset.k;"
    "rows.sort(function(x,y){var a=x.dataset[k],c=y.dataset[k];var p=parseFloat(a),q=parseFloat(c);"
    "var r=(isNaN(p)||isNaN(q))?(a<c?-1:a>c?1:0):p-q;return asc?r:-r;});"
    "rows.forEach(function(r){b.appendChild(r);});};})(i);"
    /* the search box: rows whose text contains every word typed; #q=WORDS in the address fills it */
    "var q=document.getElementById('q'),qn=document.getElementById('qn');"
    "function filter(){var ws=q.value.toLowerCase().split(/\\s+/).filter(Boolean),rows=t.tBodies[0].rows,k=0;"
    "for(var i=0;i<rows.length;i++){var tx=rows[i].textContent.toLowerCase(),m=ws.every(function(w){return tx.indexOf(w)>=0;});"
    "rows[i].style.display=m?'':'none';k+=m?1:0;}qn.textContent=k+' of '+rows.length+' images shown';}"
    "q.oninput=filter;var h=location.hash.match(/^#q=(.*)$/);if(h){q.value=decodeURIComponent(h[1]);}filter();})();";

/* The object scores under the metrics (objects.h). */
static void object_summary(buf *b, const ac_object_scores *ob) {
    puts_(b, "<table class=\"scores\"><tr><th>objects: precision</th><th>recall</th><th>F1</th>"
             "<th>hallucinated (CHAIR-i)</th><th>captions hallucinating (CHAIR-s)</th>");
    if (ob->novel_max > 0) puts_(b, "<th>novel recall</th>");
    puts_(b, "</tr>\n<tr>");
    double v[5] = {ob->precision, ob->recall, ob->f1, ob->chair_i, ob->chair_s};
    for (int k = 0; k < 5; k++) puts_(b, "<td>"), score(b, v[k]), puts_(b, "</td>");
    if (ob->novel_max > 0) puts_(b, "<td>"), score(b, ob->novel_recall), puts_(b, "</td>");
    printf_(b, "</tr></table>\n<p class=\"sub\">Objects: COCO's 80 categories named in the captions; truth for a "
               "photo = those at least %d of its references name (TP %lld, FP %lld, FN %lld); hallucinated = named "
               "by no reference (%lld of %lld named objects, in %d of %d captions).",
            AC_OBJECTS_TRUTH_REFS, ob->tp, ob->fp, ob->fn, ob->hallucinated, ob->mentioned, ob->captions_hallucinating,
            ob->n);
    if (ob->novel_max > 0) {
        printf_(b, " Novel: %d categories named in fewer than %d photos of the training captions (", ob->n_novel,
                ob->novel_max);
        for (int k = 0, first = 1; k < AC_N_OBJECTS; k++)
            if (ob->novel[k]) puts_(b, first ? "" : ", "), esc(b, ac_object_name(k)), first = 0;
        printf_(b, "): %lld of %lld found.", ob->novel_tp, ob->novel_truth);
    }
    puts_(b, " In the table: <span class=\"obj\"><span class=\"t\">true</span>, <span class=\"h\">hallucinated"
             "</span>, named by one reference only, <span class=\"m\">missed</span></span>.</p>\n");
}

/* Photo i's objects cell: the candidate's (true, hallucinated or neither) and the missed ones. */
static void object_cell(buf *b, const ac_object_scores *ob, int i) {
    uint8_t cand[AC_N_OBJECTS], truth[AC_N_OBJECTS], hall[AC_N_OBJECTS], missed[AC_N_OBJECTS];
    ac_object_scores_image(ob, i, cand, truth, hall, missed);
    int first = 1;
    for (int k = 0; k < AC_N_OBJECTS; k++) {
        if (!cand[k]) continue;
        printf_(b, "%s<span class=\"%s\">", first ? "" : ", ", truth[k] ? "t" : hall[k] ? "h" : "o");
        esc(b, ac_object_name(k));
        puts_(b, "</span>");
        first = 0;
    }
    for (int k = 0; k < AC_N_OBJECTS; k++) {
        if (!missed[k]) continue;
        puts_(b, first ? "<span class=\"m\">missed: " : "<span class=\"m\">, missed: ");
        for (int j = k, f2 = 1; j < AC_N_OBJECTS; j++)
            if (missed[j]) puts_(b, f2 ? "" : ", "), esc(b, ac_object_name(j)), f2 = 0;
        puts_(b, "</span>");
        break;
    }
}

/* The corpus scores as one table row: BLEU-1..4, METEOR, ROUGE-L, CIDEr-D. */
static void score_row(buf *b, const char *label, const ac_scores *sc) {
    puts_(b, "<tr><th>"), esc(b, label), puts_(b, "</th>");
    for (int k = 0; k < 4; k++) puts_(b, "<td>"), score(b, sc->bleu[k]), puts_(b, "</td>");
    puts_(b, "<td>"), score(b, sc->meteor), puts_(b, "</td><td>"), score(b, sc->rouge_l);
    puts_(b, "</td><td>"), score(b, sc->cider_d), printf_(b, "</td><td>%d</td></tr>\n", sc->n);
}

/* An inline SVG histogram of the per-image CIDEr-D (and the other run's beside it). */
static void histogram(buf *b, const ac_scores *sc, const ac_scores *other) {
    enum { BINS = 20, W = 640, H = 150, X0 = 40, Y0 = 10 };
    double hi = 1;
    const ac_scores *runs[2] = {sc, other};
    int counts[2][BINS] = {{0}}, top = 1, n_runs = other ? 2 : 1;
    for (int r = 0; r < n_runs; r++)
        for (int i = 0; i < runs[r]->n; i++) hi = fmax(hi, ceil(runs[r]->img_cider_d[i]));
    for (int r = 0; r < n_runs; r++)
        for (int i = 0; i < runs[r]->n; i++) {
            int k = (int)(runs[r]->img_cider_d[i] / hi * BINS);
            k = k < 0 ? 0 : k >= BINS ? BINS - 1 : k;
            if (++counts[r][k] > top) top = counts[r][k];
        }
    static const char *colour[2] = {"#3b6fb6", "#e08a1e"};
    printf_(b, "<svg class=\"hist\" width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"histogram of per-image CIDEr-D\">",
            W + X0 + 10, H + Y0 + 34);
    double bw = (double)W / BINS;
    for (int r = 0; r < n_runs; r++)
        for (int k = 0; k < BINS; k++) {
            double h = (double)counts[r][k] / top * H, x = X0 + k * bw + 1 + r * (bw - 2) / n_runs;
            printf_(b, "<rect class=\"bin%d\" data-count=\"%d\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                       "fill=\"%s\"><title>CIDEr-D %.2f to %.2f: %d images</title></rect>",
                    r, counts[r][k], x, Y0 + H - h, (bw - 2) / n_runs, h, colour[r], hi * k / BINS, hi * (k + 1) / BINS,
                    counts[r][k]);
        }
    printf_(b, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#888\"/>", X0, Y0 + H, X0 + W, Y0 + H);
    for (int k = 0; k <= 4; k++)
        printf_(b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.3g</text>", X0 + W * k / 4.0, Y0 + H + 14,
                hi * k / 4);
    printf_(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%d</text><text x=\"%d\" y=\"%d\">per-image CIDEr-D "
               "(images per bin)%s</text></svg>\n",
            X0 - 4, Y0 + 10, top, X0, Y0 + H + 30, other ? ": blue this run, orange the other" : "");
}

/* other_of[i]: the other run's item for image i (matched by id), or -1. NULL when out of memory. */
static int *match_other(const ac_eval_set *s, const ac_eval_set *o) {
    int *m = ac_malloc((size_t)(s->n ? s->n : 1) * sizeof *m);
    ac_strmap ids = {0};
    int oom = !m;
    for (int j = 0; !oom && j < o->n; j++)
        if (o->items[j].id && ac_strmap_put(&ids, o->items[j].id, j) == -2) oom = 1;
    for (int i = 0; !oom && i < s->n; i++) m[i] = s->items[i].id ? ac_strmap_get(&ids, s->items[i].id) : -1;
    ac_strmap_free(&ids);
    if (oom) free(m);
    return oom ? NULL : m;
}

static const char *cand_text(const ac_eval_item *it) { return it->cand_raw ? it->cand_raw : it->cand; }

static void header(buf *b, const ac_report *r, int n) {
    const char *title = r->title ? r->title : "attncap eval";
    puts_(b, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>");
    esc(b, title);
    puts_(b, "</title>\n<style>"), puts_(b, CSS), puts_(b, "</style></head>\n<body>\n<h1>");
    esc(b, title);
    puts_(b, "</h1>\n<p class=\"sub\">");
    if (r->model) puts_(b, "model <span class=\"model\">"), esc(b, r->model), puts_(b, "</span> &middot; ");
    if (r->subtitle) esc(b, r->subtitle), puts_(b, " &middot; ");
    printf_(b, "%d images, scored as coco-caption does.</p>\n", n);
}

int ac_report_write(const char *dir, const ac_report *r, ac_err *err) {
    const ac_eval_set *s = r->set;
    const ac_scores *sc = r->scores;
    if (!s || !sc || s->n != sc->n || !sc->img_cider_d || !sc->img_bleu4_smooth)
        return ac_errf(err, "%s: report needs per-image scores for every image", dir);
    const ac_eval_set *os = r->other_set;
    const ac_scores *osc = r->other_scores;
    if (os && (!osc || os->n != osc->n || !osc->img_cider_d))
        return ac_errf(err, "%s: the compared run needs per-image scores for every image", dir);
    if (ac_mkdirs(dir, err)) return -1;
    int n = s->n;
    keyed *order = ac_malloc((size_t)(n ? n : 1) * sizeof *order);
    int *other_of = os ? match_other(s, os) : NULL;
    if (!order || (os && !other_of)) {
        free(order), free(other_of);
        return ac_errf(err, "%s: out of memory", dir);
    }
    for (int i = 0; i < n; i++) order[i] = (keyed){sc->img_cider_d[i], i};
    qsort(order, (size_t)n, sizeof *order, by_key); /* worst CIDEr-D first */

    buf b = {0};
    header(&b, r, n);
    puts_(&b, "<table class=\"scores\"><tr><th></th><th>BLEU-1</th><th>BLEU-2</th><th>BLEU-3</th><th>BLEU-4</th>"
              "<th>METEOR</th><th>ROUGE-L</th><th>CIDEr-D</th><th>images</th></tr>\n");
    score_row(&b, os ? "this run" : "", sc);
    if (os) {
        char label[600];
        snprintf(label, sizeof label, "other: %s%s%s", r->other_name ? r->other_name : "", r->other_model ? ", model " : "",
                 r->other_model ? r->other_model : "");
        score_row(&b, label, osc);
    }
    puts_(&b, "</table>\n");
    printf_(&b, "<p class=\"sub\">BLEU counts: testlen %lld, reflen %lld, guess [%lld, %lld, %lld, %lld], "
                "correct [%lld, %lld, %lld, %lld]. Per image, BLEU-4 is the sentence BLEU smoothed as Lin &amp; Och "
                "2004 (one added to the 2- to 4-gram matches and guesses): coco-caption's unsmoothed per-image "
                "BLEU-4 (in the per-image files) is 0 whenever no 4-gram matches. Captions and references are shown "
                "as written and scored tokenized. Click a column header to sort.</p>\n",
            sc->counts.testlen, sc->counts.reflen, sc->counts.guess[0], sc->counts.guess[1], sc->counts.guess[2],
            sc->counts.guess[3], sc->counts.correct[0], sc->counts.correct[1], sc->counts.correct[2],
            sc->counts.correct[3]);
    const ac_object_scores *ob = sc->objects.cand && sc->objects.n == n ? &sc->objects : NULL;
    if (ob) object_summary(&b, ob);
    histogram(&b, sc, os ? osc : NULL);
    puts_(&b, "<input id=\"q\" type=\"search\" placeholder=\"search captions, references, ids, objects\" "
              "aria-label=\"search\"><span id=\"qn\"></span>\n");
    puts_(&b, "<table id=\"t\"><thead><tr><th class=\"num\" data-k=\"n\">#</th><th>photo</th>"
              "<th data-k=\"s\">generated caption</th><th>references</th>"
              "<th class=\"num asc\" data-k=\"c\">CIDEr-D</th>"
              "<th class=\"num\" data-k=\"b\" title=\"sentence BLEU-4, add-one smoothed (Lin &amp; Och 2004)\">BLEU-4</th>"
              "<th class=\"num\" data-k=\"m\">METEOR</th><th class=\"num\" data-k=\"r\">ROUGE-L</th>");
    if (os) puts_(&b, "<th>other run's caption</th><th class=\"num\" data-k=\"d\">&Delta; CIDEr-D</th>");
    if (ob) puts_(&b, "<th data-k=\"h\">objects</th>");
    puts_(&b, "<th>attention</th></tr></thead>\n<tbody>\n");
    for (int q = 0; q < n; q++) {
        int i = order[q].i, j = other_of ? other_of[i] : -1;
        const ac_eval_item *it = &s->items[i];
        double m = sc->img_meteor ? sc->img_meteor[i] : NAN;
        double rl = sc->img_rouge_l ? sc->img_rouge_l[i] : NAN;
        double delta = j >= 0 ? sc->img_cider_d[i] - osc->img_cider_d[j] : NAN;
        printf_(&b, "<tr data-n=\"%d\" data-c=\"%.6f\" data-b=\"%.6f\" data-m=\"%.6f\" data-r=\"%.6f\"", i + 1,
                sc->img_cider_d[i], sc->img_bleu4_smooth[i], isnan(m) ? -1.0 : m, isnan(rl) ? -1.0 : rl);
        if (os) printf_(&b, " data-d=\"%.6f\"", isnan(delta) ? -1e9 : delta);
        if (ob) { /* sorts by hallucinated objects, then by missed ones */
            uint8_t hall[AC_N_OBJECTS], missed[AC_N_OBJECTS];
            int nh = 0, nm = 0;
            ac_object_scores_image(ob, i, NULL, NULL, hall, missed);
            for (int k = 0; k < AC_N_OBJECTS; k++) nh += hall[k], nm += missed[k];
            printf_(&b, " data-h=\"%d.%02d\"", nh, nm < 99 ? nm : 99);
        }
        puts_(&b, " data-s=\"");
        esc(&b, cand_text(it));
        printf_(&b, "\"><td class=\"num\">%d</td><td>", i + 1);
        const char *th = r->thumbs ? r->thumbs[i] : NULL;
        if (th) puts_(&b, "<img loading=\"lazy\" alt=\"\" src=\""), url(&b, th), puts_(&b, "\">");
        puts_(&b, "<div class=\"id\">");
        esc(&b, it->id ? it->id : "");
        puts_(&b, "</div></td><td class=\"cap\">");
        if (it->cand[0]) esc(&b, cand_text(it));
        else puts_(&b, "<i>(empty)</i>");
        puts_(&b, "</td><td><ul class=\"refs\">");
        for (int k = 0; k < it->n_refs; k++)
            puts_(&b, "<li>"), esc(&b, it->refs_raw ? it->refs_raw[k] : it->refs[k]), puts_(&b, "</li>");
        const double cells[4] = {sc->img_cider_d[i], sc->img_bleu4_smooth[i], m, rl};
        puts_(&b, "</ul></td>");
        for (int k = 0; k < 4; k++) puts_(&b, "<td class=\"num\">"), score(&b, cells[k]), puts_(&b, "</td>");
        if (os) {
            puts_(&b, "<td class=\"oth\">");
            if (j >= 0) esc(&b, cand_text(&os->items[j])), printf_(&b, " <span class=\"id\">(%.3f)</span>", osc->img_cider_d[j]);
            printf_(&b, "</td><td class=\"num %s\">", isnan(delta) ? "" : delta > 0 ? "up" : delta < 0 ? "down" : "");
            if (!isnan(delta)) printf_(&b, "%+.3f", delta);
            else puts_(&b, "&ndash;");
            puts_(&b, "</td>");
        }
        if (ob) puts_(&b, "<td class=\"obj\">"), object_cell(&b, ob, i), puts_(&b, "</td>");
        puts_(&b, "<td>");
        const char *sh = r->sheets ? r->sheets[i] : NULL;
        if (sh) puts_(&b, "<a href=\""), url(&b, sh), puts_(&b, "\">sheet</a>");
        puts_(&b, "</td></tr>\n");
    }
    puts_(&b, "</tbody></table>\n<script>"), puts_(&b, JS), puts_(&b, "</script>\n</body></html>\n");
    free(order);
    free(other_of);
    if (b.oom) {
        free(b.p);
        return ac_errf(err, "%s: out of memory", dir);
    }
    char *path = ac_path_join(dir, "index.html");
    int rc = path ? ac_write_file_atomic(path, b.p, b.n, err) : ac_errf(err, "%s: out of memory", dir);
    free(path);
    free(b.p);
    return rc;
}

int ac_gallery_write(const char *dir, const ac_gallery *g, ac_err *err) {
    if (ac_mkdirs(dir, err)) return -1;
    const char *title = g->title ? g->title : "attncap caption";
    buf b = {0};
    puts_(&b, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>");
    esc(&b, title);
    puts_(&b, "</title>\n<style>"), puts_(&b, CSS), puts_(&b, "</style></head>\n<body>\n<h1>");
    esc(&b, title);
    puts_(&b, "</h1>\n<p class=\"sub\">");
    if (g->subtitle) esc(&b, g->subtitle), puts_(&b, " &middot; ");
    printf_(&b, "%d photos. Click a column header to sort.</p>\n", g->n);
    puts_(&b, "<input id=\"q\" type=\"search\" placeholder=\"search captions and photos\" aria-label=\"search\">"
              "<span id=\"qn\"></span>\n<table id=\"t\"><thead><tr><th class=\"num asc\" data-k=\"n\">#</th>"
              "<th>photo</th><th data-k=\"s\">caption</th><th class=\"num\" data-k=\"c\">confidence</th>"
              "<th>attention</th></tr></thead>\n<tbody>\n");
    for (int i = 0; i < g->n; i++) {
        const double c = g->confidence ? g->confidence[i] : NAN;
        printf_(&b, "<tr data-n=\"%d\" data-c=\"%.6f\" data-s=\"", i + 1, isnan(c) ? -1.0 : c);
        esc(&b, g->captions[i]);
        printf_(&b, "\"><td class=\"num\">%d</td><td>", i + 1);
        const char *th = g->thumbs ? g->thumbs[i] : NULL;
        if (th) puts_(&b, "<img loading=\"lazy\" alt=\"\" src=\""), url(&b, th), puts_(&b, "\">");
        puts_(&b, "<div class=\"id\">"), esc(&b, g->photos[i]), puts_(&b, "</div></td><td class=\"cap\">");
        esc(&b, g->captions[i]);
        puts_(&b, "</td><td class=\"num\">"), score(&b, c), puts_(&b, "</td><td>");
        const char *sh = g->sheets ? g->sheets[i] : NULL;
        if (sh) puts_(&b, "<a href=\""), url(&b, sh), puts_(&b, "\">sheet</a>");
        puts_(&b, "</td></tr>\n");
    }
    puts_(&b, "</tbody></table>\n<script>"), puts_(&b, JS), puts_(&b, "</script>\n</body></html>\n");
    if (b.oom) {
        free(b.p);
        return ac_errf(err, "%s: out of memory", dir);
    }
    char *path = ac_path_join(dir, "index.html");
    int rc = path ? ac_write_file_atomic(path, b.p, b.n, err) : ac_errf(err, "%s: out of memory", dir);
    free(path);
    free(b.p);
    return rc;
}
