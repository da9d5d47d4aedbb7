/* report.c: the HTML evaluation report (see report.h). */
#include "attncap/report.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

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
        char *np = realloc(b->p, nc);
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
    ".obj .m{color:#888}";

static const char *JS =
    "(function(){var t=document.getElementById('t'),hs=t.tHead.rows[0].cells;"
    "for(var i=0;i<hs.length;i++)(function(i){var h=hs[i];if(!h.dataset.k)return;h.onclick=function(){"
    "var asc=!h.classList.contains('asc');for(var j=0;j<hs.length;j++)hs[j].classList.remove('asc','desc');"
    "h.classList.add(asc?'asc':'desc');var b=t.tBodies[0],rows=Array.prototype.slice.call(b.rows),k=h.dataset.k;"
    "rows.sort(function(x,y){var a=x.dataset[k],c=y.dataset[k];var p=parseFloat(a),q=parseFloat(c);"
    "var r=(isNaN(p)||isNaN(q))?(a<c?-1:a>c?1:0):p-q;return asc?r:-r;});"
    "rows.forEach(function(r){b.appendChild(r);});};})(i);})();";

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

int ac_report_write(const char *dir, const ac_report *r, ac_err *err) {
    const ac_eval_set *s = r->set;
    const ac_scores *sc = r->scores;
    if (!s || !sc || s->n != sc->n || !sc->img_cider_d || !sc->img_bleu4)
        return ac_errf(err, "%s: report needs per-image scores for every image", dir);
    if (ac_mkdirs(dir, err)) return -1;
    int n = s->n;
    keyed *order = malloc((size_t)(n ? n : 1) * sizeof *order);
    if (!order) return ac_errf(err, "%s: out of memory", dir);
    for (int i = 0; i < n; i++) order[i] = (keyed){sc->img_cider_d[i], i};
    qsort(order, (size_t)n, sizeof *order, by_key); /* worst CIDEr-D first */

    buf b = {0};
    puts_(&b, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>");
    esc(&b, r->title ? r->title : "attncap eval");
    puts_(&b, "</title>\n<style>"), puts_(&b, CSS), puts_(&b, "</style></head>\n<body>\n<h1>");
    esc(&b, r->title ? r->title : "attncap eval");
    puts_(&b, "</h1>\n<p class=\"sub\">");
    if (r->subtitle) esc(&b, r->subtitle);
    printf_(&b, "%s%d images, scored as coco-caption does.</p>\n", r->subtitle ? " &middot; " : "", n);
    puts_(&b, "<table class=\"scores\"><tr><th>BLEU-1</th><th>BLEU-2</th><th>BLEU-3</th><th>BLEU-4</th>"
              "<th>METEOR</th><th>ROUGE-L</th><th>CIDEr-D</th></tr>\n<tr>");
    for (int k = 0; k < 4; k++) puts_(&b, "<td>"), score(&b, sc->bleu[k]), puts_(&b, "</td>");
    puts_(&b, "<td>"), score(&b, sc->meteor), puts_(&b, "</td><td>"), score(&b, sc->rouge_l);
    puts_(&b, "</td><td>"), score(&b, sc->cider_d), puts_(&b, "</td></tr></table>\n");
    printf_(&b, "<p class=\"sub\">BLEU counts: testlen %lld, reflen %lld, guess [%lld, %lld, %lld, %lld], "
                "correct [%lld, %lld, %lld, %lld]. Click a column header to sort.</p>\n",
            sc->counts.testlen, sc->counts.reflen, sc->counts.guess[0], sc->counts.guess[1], sc->counts.guess[2],
            sc->counts.guess[3], sc->counts.correct[0], sc->counts.correct[1], sc->counts.correct[2],
            sc->counts.correct[3]);
    const ac_object_scores *ob = sc->objects.cand && sc->objects.n == n ? &sc->objects : NULL;
    if (ob) object_summary(&b, ob);
    puts_(&b, "<table id=\"t\"><thead><tr><th class=\"num\" data-k=\"n\">#</th><th>photo</th>"
              "<th data-k=\"s\">generated caption</th><th>references</th>"
              "<th class=\"num asc\" data-k=\"c\">CIDEr-D</th><th class=\"num\" data-k=\"b\">BLEU-4</th>"
              "<th class=\"num\" data-k=\"m\">METEOR</th><th class=\"num\" data-k=\"r\">ROUGE-L</th>");
    if (ob) puts_(&b, "<th data-k=\"h\">objects</th>");
    puts_(&b, "<th>attention</th></tr></thead>\n<tbody>\n");
    for (int q = 0; q < n; q++) {
        int i = order[q].i;
        const ac_eval_item *it = &s->items[i];
        double m = sc->img_meteor ? sc->img_meteor[i] : NAN;
        double rl = sc->img_rouge_l ? sc->img_rouge_l[i] : NAN;
        printf_(&b, "<tr data-n=\"%d\" data-c=\"%.6f\" data-b=\"%.6f\" data-m=\"%.6f\" data-r=\"%.6f\"", i + 1,
                sc->img_cider_d[i], sc->img_bleu4[i], isnan(m) ? -1.0 : m, isnan(rl) ? -1.0 : rl);
        if (ob) { /* sorts by hallucinated objects, then by missed ones */
            uint8_t hall[AC_N_OBJECTS], missed[AC_N_OBJECTS];
            int nh = 0, nm = 0;
            ac_object_scores_image(ob, i, NULL, NULL, hall, missed);
            for (int k = 0; k < AC_N_OBJECTS; k++) nh += hall[k], nm += missed[k];
            printf_(&b, " data-h=\"%d.%02d\"", nh, nm < 99 ? nm : 99);
        }
        puts_(&b, " data-s=\"");
        esc(&b, it->cand);
        printf_(&b, "\"><td class=\"num\">%d</td><td>", i + 1);
        const char *th = r->thumbs ? r->thumbs[i] : NULL;
        if (th) puts_(&b, "<img loading=\"lazy\" alt=\"\" src=\""), url(&b, th), puts_(&b, "\">");
        puts_(&b, "<div class=\"id\">");
        esc(&b, it->id ? it->id : "");
        puts_(&b, "</div></td><td class=\"cap\">");
        if (it->cand[0]) esc(&b, it->cand);
        else puts_(&b, "<i>(empty)</i>");
        puts_(&b, "</td><td><ul class=\"refs\">");
        for (int j = 0; j < it->n_refs; j++) puts_(&b, "<li>"), esc(&b, it->refs[j]), puts_(&b, "</li>");
        puts_(&b, "</ul></td><td class=\"num\">");
        score(&b, sc->img_cider_d[i]);
        puts_(&b, "</td><td class=\"num\">");
        score(&b, sc->img_bleu4[i]);
        puts_(&b, "</td><td class=\"num\">");
        score(&b, m);
        puts_(&b, "</td><td class=\"num\">");
        score(&b, rl);
        if (ob) puts_(&b, "</td><td class=\"obj\">"), object_cell(&b, ob, i);
        puts_(&b, "</td><td>");
        const char *sh = r->sheets ? r->sheets[i] : NULL;
        if (sh) puts_(&b, "<a href=\""), url(&b, sh), puts_(&b, "\">sheet</a>");
        puts_(&b, "</td></tr>\n");
    }
    puts_(&b, "</tbody></table>\n<script>"), puts_(&b, JS), puts_(&b, "</script>\n</body></html>\n");
    free(order);
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
