/* Vocabulary and dataset readers: small generated files for every format, malformed files
 * (error names file and line), and the real sets in ../shared when present. */
#include "attncap/dataset.h"
#include "attncap/tokenize.h"
#include "attncap/vocab.h"
#include "test.h"

#include <stdlib.h>

static const char *tmpfile_with(const char *name, const char *content) {
    static char path[8][1024];
    static int slot;
    char *p = path[slot++ % 8];
    snprintf(p, 1024, "%s/%s", test_tmpdir(), name);
    FILE *f = fopen(p, "wb");
    if (!f) return NULL;
    fputs(content, f);
    fclose(f);
    return p;
}

static void test_vocab(void) {
    const char *caps[] = {"a dog runs", "A dog sits.", "a cat", "zebra"};
    ac_tokens t[4];
    ac_err e;
    for (int i = 0; i < 4; i++) CHECK(ac_tokenize(caps[i], &t[i], &e) == 0);
    ac_vocab *v;
    CHECK(ac_vocab_build(t, 4, 2, &v, &e) == 0);
    /* a:3 dog:2 ; cat, runs, sits, zebra: 1 */
    CHECK(ac_vocab_size(v) == 6);
    CHECK(!strcmp(ac_vocab_word(v, 0), "<pad>") && !strcmp(ac_vocab_word(v, 3), "<unk>"));
    CHECK(!strcmp(ac_vocab_word(v, 4), "a") && !strcmp(ac_vocab_word(v, 5), "dog"));
    CHECK(ac_vocab_id(v, "cat") == AC_UNK);
    int ids[8];
    ac_vocab_encode(v, &t[1], ids);
    CHECK(t[1].n == 3 && ids[0] == 4 && ids[1] == 5 && ids[2] == AC_UNK);
    char *js = ac_vocab_to_json(v);
    CHECK(js && !strcmp(js, "[\"<pad>\",\"<start>\",\"<end>\",\"<unk>\",\"a\",\"dog\"]"));
    ac_vocab *v2;
    CHECK(ac_vocab_from_json(js, &v2, &e) == 0);
    CHECK(ac_vocab_size(v2) == 6 && ac_vocab_id(v2, "dog") == 5);
    free(js);
    ac_vocab_free(v2);
    ac_vocab *v3;
    CHECK(ac_vocab_build(t, 4, 1, &v3, &e) == 0);
    /* ties alphabetical: cat runs sits zebra */
    CHECK(ac_vocab_size(v3) == 10 && !strcmp(ac_vocab_word(v3, 6), "cat") && !strcmp(ac_vocab_word(v3, 9), "zebra"));
    ac_vocab_free(v3);
    ac_vocab_free(v);
    for (int i = 0; i < 4; i++) ac_tokens_free(&t[i]);
    CHECK(ac_vocab_from_json("[\"<pad>\",\"<start>\",\"<end>\"]", &v, &e) == -1);
    CHECK(ac_vocab_from_json("[\"<pad>\",\"<start>\",\"<end>\",\"<unk>\",\"a\",\"a\"]", &v, &e) == -1);
    CHECK(ac_vocab_from_json("[\"<pad>\",\"<start>\",\"<end>\",\"<unk>\",3]", &v, &e) == -1);
    CHECK(ac_vocab_from_json("{", &v, &e) == -1);
    CHECK(ac_vocab_from_json("[\"x\",\"<start>\",\"<end>\",\"<unk>\"]", &v, &e) == -1);
}

static void test_tsv_csv(void) {
    ac_dataset ds;
    ac_err e;
    const char *p = tmpfile_with("a.tsv", "image\tcaption\nx.jpg\tA dog.\ny.jpg\tA cat.\r\n\nx.jpg\tTwo dogs.\n");
    CHECK(ac_dataset_load(p, "/imgs", &ds, &e) == 0);
    CHECK(ds.n == 2 && !strcmp(ds.format, "tsv"));
    CHECK(!strcmp(ds.images[0].key, "x.jpg") && ds.images[0].n_caps == 2 && !strcmp(ds.images[0].caps[1], "Two dogs."));
    CHECK(!strcmp(ds.images[0].path, "/imgs/x.jpg") && !strcmp(ds.images[1].id, "y.jpg"));
    CHECK(ds.images[0].split <= AC_SPLIT_TEST);
    ac_split s0 = ds.images[0].split;
    ac_dataset_free(&ds);
    p = tmpfile_with("b.csv", "image,caption\nx.jpg,\"A dog, brown \"\"Rex\"\".\"\nz.jpg,plain\n");
    CHECK(ac_dataset_load(p, NULL, &ds, &e) == 0);
    CHECK(ds.n == 2 && !strcmp(ds.images[0].caps[0], "A dog, brown \"Rex\"."));
    CHECK(ds.images[0].split == s0); /* deterministic hash split */
    ac_dataset_free(&ds);
    p = tmpfile_with("bad.tsv", "x.jpg\tok\ny.jpg no tab here\n");
    CHECK(ac_dataset_load(p, NULL, &ds, &e) == -1);
    CHECKF(strstr(e.msg, "bad.tsv:2") != NULL, "%s", e.msg);
    p = tmpfile_with("bad2.tsv", "x.jpg\tok\n\ny.jpg\t   \n");
    CHECK(ac_dataset_load(p, NULL, &ds, &e) == -1);
    CHECKF(strstr(e.msg, "bad2.tsv:3") && strstr(e.msg, "empty caption"), "%s", e.msg);
    p = tmpfile_with("bad3.tsv", "x.jpg\tbad \xff utf8\n");
    CHECK(ac_dataset_load(p, NULL, &ds, &e) == -1);
    CHECKF(strstr(e.msg, "bad3.tsv:1") && strstr(e.msg, "UTF-8"), "%s", e.msg);
    p = tmpfile_with("bad4.csv", "x.jpg,\"unterminated\n");
    CHECK(ac_dataset_load(p, NULL, &ds, &e) == -1);
    CHECKF(strstr(e.msg, "bad4.csv:1"), "%s", e.msg);
    CHECK(ac_dataset_load("/nonexistent/file.tsv", NULL, &ds, &e) == -1);
    /* hash split proportions roughly 90/5/5 */
    char buf[200000];
    size_t o = 0;
    for (int i = 0; i < 2000; i++) o += (size_t)snprintf(buf + o, sizeof buf - o, "img%d.jpg\tc\n", i);
    p = tmpfile_with("many.tsv", buf);
    CHECK(ac_dataset_load(p, NULL, &ds, &e) == 0);
    int cnt[4] = {0};
    for (int i = 0; i < ds.n; i++) cnt[ds.images[i].split]++;
    ac_dataset_free(&ds);
    CHECKF(cnt[0] > 1700 && cnt[0] < 1900 && cnt[1] > 60 && cnt[2] > 60, "%d %d %d", cnt[0], cnt[1], cnt[2]);
}

/* The optional third column: a photo's split, the same on all its lines; photos without one are
 * hashed. Hand-written cases (the hashed ones are checked against Python in tests/data_cli.sh). */
static void test_tsv_split_column(void) {
    ac_dataset ds;
    ac_err e;
    const char *p = tmpfile_with("s.tsv", "image\tcaption\tsplit\na.jpg\tA dog.\ttest\nb.jpg\tA cat.\tval \n"
                                          "a.jpg\tTwo dogs.\ttest\nc.jpg\tA bird.\ttrain\nc.jpg\tBirds.\n");
    CHECKF(ac_dataset_load(p, NULL, &ds, &e) == 0, "%s", e.msg);
    CHECK(ds.n == 3 && ds.images[0].n_caps == 2 && !strcmp(ds.images[0].caps[1], "Two dogs."));
    CHECK(ds.images[0].split == AC_SPLIT_TEST && ds.images[1].split == AC_SPLIT_VAL && ds.images[2].split == AC_SPLIT_TRAIN);
    ac_dataset_free(&ds);
    p = tmpfile_with("s.csv", "image,caption,split\na.jpg,\"A dog, brown.\",dev\nb.jpg,A cat.\n");
    CHECKF(ac_dataset_load(p, NULL, &ds, &e) == 0, "%s", e.msg);
    CHECK(ds.n == 2 && ds.images[0].split == AC_SPLIT_VAL && !strcmp(ds.images[0].caps[0], "A dog, brown."));
    ac_dataset_free(&ds);
    p = tmpfile_with("conflict.tsv", "a.jpg\tA dog.\ttrain\nb.jpg\tx\na.jpg\tA dog again.\ttest\n");
    CHECK(ac_dataset_load(p, NULL, &ds, &e) == -1);
    CHECKF(strstr(e.msg, "conflict.tsv:3") && strstr(e.msg, "a.jpg") && strstr(e.msg, "test") && strstr(e.msg, "train"),
           "%s", e.msg);
    p = tmpfile_with("unknown.tsv", "image\tcaption\tsplit\na.jpg\tA dog.\tholdout\n");
    CHECK(ac_dataset_load(p, NULL, &ds, &e) == -1);
    CHECKF(strstr(e.msg, "unknown.tsv:2") && strstr(e.msg, "holdout"), "%s", e.msg);
    /* without the header's split column, a tab inside a caption stays the caption's (as it was) */
    p = tmpfile_with("tab.tsv", "a.jpg\tA dog\t .\nb.jpg\tA cat.\ttest\n");
    CHECKF(ac_dataset_load(p, NULL, &ds, &e) == 0, "%s", e.msg);
    CHECK(ds.n == 2 && !strcmp(ds.images[0].caps[0], "A dog\t .") && ds.images[1].split == AC_SPLIT_TEST);
    ac_dataset_free(&ds);
}

static void test_json(void) {
    ac_dataset ds;
    ac_err e;
    const char *p = tmpfile_with("c.json",
        "{\"images\":[{\"id\":7,\"file_name\":\"a.jpg\"},{\"id\":9,\"file_name\":\"b.jpg\"}],"
        "\"annotations\":[{\"image_id\":9,\"caption\":\"B one\"},{\"image_id\":7,\"caption\":\"A one\"},"
        "{\"image_id\":9,\"caption\":\"B two\"}]}");
    CHECK(ac_dataset_load(p, NULL, &ds, &e) == 0);
    CHECK(!strcmp(ds.format, "coco") && ds.n == 2);
    CHECK(!strcmp(ds.images[0].id, "7") && !strcmp(ds.images[0].key, "a.jpg") && ds.images[1].n_caps == 2);
    CHECK(strstr(ds.images[0].path, "/images/a.jpg") != NULL);
    ac_dataset_free(&ds);
    p = tmpfile_with("k.json",
        "{\"images\":[{\"filepath\":\"val2014\",\"filename\":\"a.jpg\",\"split\":\"restval\",\"cocoid\":5,"
        "\"sentences\":[{\"raw\":\"A cat.\",\"tokens\":[\"a\",\"cat\"]}]},"
        "{\"filename\":\"b.jpg\",\"split\":\"test\",\"sentences\":[{\"raw\":\"B.\"}]}]}");
    CHECK(ac_dataset_load(p, "/x", &ds, &e) == 0);
    CHECK(!strcmp(ds.format, "karpathy") && ds.n == 2);
    CHECK(ds.images[0].split == AC_SPLIT_TRAIN && ds.images[1].split == AC_SPLIT_TEST);
    CHECK(!strcmp(ds.images[0].path, "/x/val2014/a.jpg") && !strcmp(ds.images[0].id, "5") && !strcmp(ds.images[1].id, "b.jpg"));
    ac_dataset_free(&ds);
    p = tmpfile_with("bad.json", "{\"images\": [\n{\"id\": 1,\n \"file_name\": \"a.jpg\"},\n oops]}");
    CHECK(ac_dataset_load(p, NULL, &ds, &e) == -1);
    CHECKF(strstr(e.msg, "bad.json:4") != NULL, "%s", e.msg);
    p = tmpfile_with("bad2.json", "{\"images\":[{\"id\":1,\"file_name\":\"a.jpg\"}],\"annotations\":[{\"image_id\":2,\"caption\":\"x\"}]}");
    CHECK(ac_dataset_load(p, NULL, &ds, &e) == -1);
    CHECKF(strstr(e.msg, "annotations[0]") != NULL, "%s", e.msg);
    p = tmpfile_with("bad3.json", "[1,2]");
    CHECK(ac_dataset_load(p, NULL, &ds, &e) == -1);
}

static void test_flickr8k_generated(void) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/f8k", test_tmpdir());
    ac_err e;
    CHECK(ac_mkdirs(dir, &e) == 0);
    char p[1200];
    snprintf(p, sizeof p, "%s/Flickr8k.token.txt", dir);
    FILE *f = fopen(p, "w");
    CHECK(f);
    fputs("1.jpg#0\tA dog .\n1.jpg#1\tA brown dog .\n2.jpg#0\tA cat .\n3.jpg#0\tA bird .\n", f);
    fclose(f);
    snprintf(p, sizeof p, "%s/Flickr_8k.trainImages.txt", dir);
    f = fopen(p, "w");
    fputs("1.jpg\n3.jpg\n", f);
    fclose(f);
    snprintf(p, sizeof p, "%s/Flickr_8k.devImages.txt", dir);
    f = fopen(p, "w");
    fputs("2.jpg\n", f);
    fclose(f);
    ac_dataset ds;
    CHECK(ac_dataset_load(dir, NULL, &ds, &e) == 0);
    CHECK(ds.n == 3 && ds.images[0].n_caps == 2 && !strcmp(ds.images[0].key, "1.jpg"));
    CHECK(ds.images[0].split == AC_SPLIT_TRAIN && ds.images[1].split == AC_SPLIT_VAL && ds.images[2].split == AC_SPLIT_TRAIN);
    ac_dataset_free(&ds);
}

static void test_shared_sets(void) {
    const char *d = test_data_dir();
    if (!d) SKIP("needs ../shared");
    ac_dataset ds;
    ac_err e;
    char p[1024];
    snprintf(p, sizeof p, "%s/data/flickr8k", d);
    if (ac_is_dir(p)) {
        CHECKF(ac_dataset_load(p, NULL, &ds, &e) == 0, "%s", e.msg);
        int tr = 0, va = 0, caps = 0;
        for (int i = 0; i < ds.n; i++) {
            tr += ds.images[i].split == AC_SPLIT_TRAIN;
            va += ds.images[i].split == AC_SPLIT_VAL;
            caps += ds.images[i].n_caps;
        }
        CHECKF(ds.n == 7000 && tr == 6000 && va == 1000 && caps == 35000, "%d %d %d %d", ds.n, tr, va, caps);
        CHECK(ac_is_file(ds.images[0].path));
        ac_dataset_free(&ds);
    }
    snprintf(p, sizeof p, "%s/data/coco/captions.json", d);
    if (ac_is_file(p)) {
        CHECKF(ac_dataset_load(p, NULL, &ds, &e) == 0, "%s", e.msg);
        CHECK(ds.n == 100 && ds.images[0].n_caps >= 5 && !strcmp(ds.images[0].id, "802"));
        CHECK(ac_is_file(ds.images[0].path));
        ac_dataset_free(&ds);
    }
    snprintf(p, sizeof p, "%s/data/vi/captions.tsv", d);
    if (ac_is_file(p)) {
        CHECKF(ac_dataset_load(p, NULL, &ds, &e) == 0, "%s", e.msg);
        int caps = 0;
        for (int i = 0; i < ds.n; i++) caps += ds.images[i].n_caps;
        CHECKF(caps == 14660 && ds.n > 2800, "%d %d", caps, ds.n);
        ac_dataset_free(&ds);
    }
}

int main(void) {
    RUN(test_vocab);
    RUN(test_tsv_csv);
    RUN(test_tsv_split_column);
    RUN(test_json);
    RUN(test_flickr8k_generated);
    RUN(test_shared_sets);
    return TEST_EXIT();
}
