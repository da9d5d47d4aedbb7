/* Tests of shard.c: the hash against values computed by an independent Python implementation of the
 * formula in shard.h, the shares as a partition, --shard parsing (I/N, slurm from the environment)
 * and its refusals. */
#include "attncap/shard.h"
#include "test.h"

/* From Python (arbitrary-precision ints masked to 64 bits):
 *   def h(s):
 *       x = 0xcbf29ce484222325
 *       for b in s.encode(): x = ((x ^ b) * 0x100000001b3) & M
 *       x ^= x >> 30; x = (x * 0xbf58476d1ce4e5b9) & M; x ^= x >> 27
 *       x = (x * 0x94d049bb133111eb) & M; x ^= x >> 31; return x */
static const struct {
    const char *name;
    uint64_t hash;
    int mod3, mod7;
} known[] = {
    {"", 0xf52a15e9a9b5e89bull, 0, 5},
    {"a", 0x02c0bdbf481420f8ull, 1, 3},
    {"000000000802.jpg", 0x37f02144c87c3307ull, 1, 1},
    {"dog.jpg", 0x2831f0d2ca7f49c8ull, 1, 6},
    {"1000268201_693b08cb0e.jpg", 0xb5c66f0193a516aeull, 0, 4},
};

static void test_hash_known_values(void) {
    for (size_t i = 0; i < sizeof known / sizeof *known; i++) {
        CHECKF(ac_shard_hash(known[i].name) == known[i].hash, "'%s': %016llx", known[i].name,
               (unsigned long long)ac_shard_hash(known[i].name));
        for (int k = 0; k < 7; k++) {
            ac_shard a = {k, 3}, b = {k, 7};
            if (k < 3) CHECK(ac_shard_owns(&a, known[i].name) == (k == known[i].mod3));
            CHECK(ac_shard_owns(&b, known[i].name) == (k == known[i].mod7));
        }
    }
}

/* Only the file name counts: the same photo in another directory is in the same share. */
static void test_directory_ignored(void) {
    for (int k = 0; k < 7; k++) {
        ac_shard s = {k, 7};
        CHECK(ac_shard_owns(&s, "/data/x/dog.jpg") == ac_shard_owns(&s, "dog.jpg"));
        CHECK(ac_shard_owns(&s, "rel/dog.jpg") == (k == 6));
    }
    ac_shard all = {0, 0};
    CHECK(ac_shard_owns(&all, "anything.jpg"));
}

/* N shares of 3,000 names: each name in exactly one, filter keeps order, sizes near 3000/N. */
static void test_partition(void) {
    enum { N_NAMES = 3000 };
    static char buf[N_NAMES][32];
    static char *names[N_NAMES], *work[N_NAMES];
    for (int i = 0; i < N_NAMES; i++) snprintf(buf[i], sizeof buf[i], "%012d.jpg", 7 * i + 1), names[i] = buf[i];
    for (int n = 1; n <= 13; n += 4) {
        int seen[N_NAMES] = {0}, total = 0;
        for (int k = 0; k < n; k++) {
            ac_shard s = {k, n};
            memcpy(work, names, sizeof names);
            int kept = ac_shard_filter(&s, work, N_NAMES, NULL);
            total += kept;
            /* binomial: mean 3000/n, sd < sqrt(3000/n); 5 sd is generous */
            double mean = (double)N_NAMES / n, sd = sqrt(mean * (1 - 1.0 / n));
            CHECKF(fabs(kept - mean) <= 5 * sd + 1e-9, "share %d/%d has %d names", k, n, kept);
            for (int j = 0; j < kept; j++) {
                int idx = (int)(work[j] - buf[0]) / 32;
                CHECK(j == 0 || work[j] > work[j - 1]); /* input order kept */
                seen[idx]++;
            }
        }
        CHECK(total == N_NAMES);
        for (int i = 0; i < N_NAMES; i++) CHECKF(seen[i] == 1, "%s in %d shares of %d", names[i], seen[i], n);
    }
}

static void test_parse(void) {
    ac_shard s;
    ac_err err;
    CHECK(ac_shard_parse("0/1", &s, &err) == 0 && s.index == 0 && s.count == 1);
    CHECK(ac_shard_parse("3/4", &s, &err) == 0 && s.index == 3 && s.count == 4);
    CHECK(ac_shard_parse("007/1000000", &s, &err) == 0 && s.index == 7 && s.count == 1000000);
    static const char *bad[] = {"0/0", "3/2", "2/2", "abc", "-1/2", "1/-2", "+1/2", " 1/2", "1/2 ", "1/", "/2", "1",
                                "1/2/3", "", "1.0/2", "0x1/2", "1/1000001", "99999999999/2", "slurmx", "1//2"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err.msg[0] = 0;
        CHECKF(ac_shard_parse(bad[i], &s, &err) == -1, "'%s' accepted", bad[i]);
        CHECKF(err.msg[0] && !strchr(err.msg, '\n'), "'%s': message '%s'", bad[i], err.msg);
    }
}

static void set_array(const char *id, const char *lo, const char *hi, const char *count) {
    const char *names[] = {"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX", "SLURM_ARRAY_TASK_COUNT"};
    const char *vals[] = {id, lo, hi, count};
    for (int i = 0; i < 4; i++) {
        if (vals[i]) setenv(names[i], vals[i], 1);
        else unsetenv(names[i]);
    }
}

static void test_parse_slurm(void) {
    ac_shard s;
    ac_err err;
    set_array("5", "0", "7", "8");
    CHECK(ac_shard_parse("slurm", &s, &err) == 0 && s.index == 5 && s.count == 8);
    set_array("12", "10", "13", "4"); /* --array=10-13 */
    CHECK(ac_shard_parse("slurm", &s, &err) == 0 && s.index == 2 && s.count == 4);
    set_array("3", "1", "3", NULL); /* no COUNT: MAX - MIN + 1 */
    CHECK(ac_shard_parse("slurm", &s, &err) == 0 && s.index == 2 && s.count == 3);
    set_array("3", NULL, NULL, "5"); /* ID and COUNT only: counted from 0 */
    CHECK(ac_shard_parse("slurm", &s, &err) == 0 && s.index == 3 && s.count == 5);
    set_array("5", NULL, NULL, "5");
    CHECK(ac_shard_parse("slurm", &s, &err) == -1 && strstr(err.msg, "outside"));
    set_array("1", NULL, NULL, NULL);
    CHECK(ac_shard_parse("slurm", &s, &err) == -1 && strstr(err.msg, "COUNT"));
    set_array("0", "0", "0", "1");
    CHECK(ac_shard_parse("slurm", &s, &err) == 0 && s.index == 0 && s.count == 1);
    set_array("4", "0", "10", "6"); /* --array=0-10:2 */
    CHECK(ac_shard_parse("slurm", &s, &err) == -1 && strstr(err.msg, "contiguous"));
    set_array("9", "0", "7", "8");
    CHECK(ac_shard_parse("slurm", &s, &err) == -1 && strstr(err.msg, "outside"));
    set_array("x", "0", "7", "8");
    CHECK(ac_shard_parse("slurm", &s, &err) == -1 && strstr(err.msg, "SLURM_ARRAY_TASK_ID"));
    set_array(NULL, NULL, NULL, NULL);
    CHECK(ac_shard_parse("slurm", &s, &err) == -1 && strstr(err.msg, "not set"));
}

int main(void) {
    RUN(test_hash_known_values);
    RUN(test_directory_ignored);
    RUN(test_partition);
    RUN(test_parse);
    RUN(test_parse_slurm);
    return TEST_EXIT();
}
