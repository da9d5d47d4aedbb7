/* Tests of common.c: SHA-256 against FIPS 180-4 test vectors and coreutils' sha256sum, fp16 against
 * IEEE values and the one-value conversions, atomic files. */
#include "attncap/common.h"
#include "test.h"

#include <unistd.h>

static void hex(const uint8_t *d, char *out) {
    for (int i = 0; i < 32; i++) sprintf(out + 2 * i, "%02x", d[i]);
}

static void test_sha256_vectors(void) {
    uint8_t d[32];
    char h[65];
    ac_sha256("abc", 3, d);
    hex(d, h);
    CHECK(!strcmp(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    ac_sha256("", 0, d);
    hex(d, h);
    CHECK(!strcmp(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    ac_sha256(m, strlen(m), d);
    hex(d, h);
    CHECK(!strcmp(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
}

/* Files of every length around the 64-byte block and its 56-byte padding edge, and longer ones, of
 * pseudo-random bytes: ac_sha256_file against coreutils' sha256sum (an independent implementation). */
static void test_sha256_vs_coreutils(void) {
    static const size_t lens[] = {0, 1, 3, 55, 56, 57, 63, 64, 65, 111, 119, 120, 127, 128, 129, 1000, 4095, 4096, 4097, 70001};
    char path[4096], cmd[8300], want[65], got[65];
    unsigned seed = 5;
    for (size_t k = 0; k < sizeof lens / sizeof *lens; k++) {
        snprintf(path, sizeof path, "%s/sha_%zu.bin", test_tmpdir(), lens[k]);
        FILE *f = fopen(path, "wb");
        CHECK(f != NULL);
        for (size_t i = 0; i < lens[k]; i++) {
            seed = seed * 1103515245u + 12345u;
            fputc((int)(seed >> 16) & 0xFF, f);
        }
        fclose(f);
        snprintf(cmd, sizeof cmd, "sha256sum '%s'", path);
        FILE *pp = popen(cmd, "r");
        CHECK(pp != NULL);
        const int read = fscanf(pp, "%64s", want) == 1;
        pclose(pp);
        if (!read) SKIP("sha256sum (coreutils) not found");
        ac_err err;
        CHECKF(ac_sha256_file(path, got, &err) == 0, "%s", err.msg);
        CHECKF(!strcmp(got, want), "%zu bytes: %s, sha256sum says %s", lens[k], got, want);
        unlink(path);
    }
}

static void test_fp16(void) {
    CHECK(ac_f32_to_f16(1.0f) == 0x3c00);
    CHECK(ac_f32_to_f16(-2.0f) == 0xc000);
    CHECK(ac_f32_to_f16(65504.0f) == 0x7bff);
    CHECK(ac_f32_to_f16(1e6f) == 0x7c00);
    CHECK(ac_f32_to_f16(5.9604645e-8f) == 0x0001); /* smallest subnormal */
    CHECK(ac_f32_to_f16(1.0f + 1.0f / 2048) == 0x3c00); /* tie rounds to even */
    CHECK(ac_f16_to_f32(0x3555) == 0.333251953125f);
    CHECK(ac_f16_to_f32(0x0001) == 5.9604645e-8f);
    for (uint32_t h = 0; h < 0x7c00; h++) CHECK(ac_f32_to_f16(ac_f16_to_f32((uint16_t)h)) == h);
}

/* The bulk conversions (F16C where the build has it) against the one-value functions, bit for bit:
 * every half (its NaNs and infinities too) at every offset of a group of 8 and unaligned; floats:
 * every 251st bit pattern (17 M of them, each exponent and both signs), the ties, the edges of the
 * half range and subnormals, NaNs with payloads, in runs that start anywhere in a group. */
static void test_fp16_bulk(void) {
    enum { NH = 65536 };
    uint8_t *raw = malloc(2 * NH + 2);
    float *got = malloc(sizeof *got * (NH + 1));
    for (int shift = 0; shift < 2; shift++) { /* the halves at an odd address too */
        for (uint32_t h = 0; h < NH; h++) {
            const uint16_t v = (uint16_t)h;
            memcpy(raw + shift + 2 * h, &v, 2);
        }
        for (size_t start = 0; start < 9; start++) {
            ac_f16_to_f32_n(raw + shift + 2 * start, got, NH - start);
            size_t bad = 0;
            for (size_t i = 0; i < NH - start; i++) {
                const float want = ac_f16_to_f32((uint16_t)(start + i));
                bad += memcmp(&want, &got[i], 4) != 0;
            }
            CHECKF(bad == 0, "f16 -> f32 from %zu (shift %d): %zu values differ", start, shift, bad);
        }
    }
    enum { CH = 4096 };
    float f[CH];
    uint16_t out[CH];
    size_t bad = 0, n = 0;
    const uint32_t special[] = {0x33000000u, 0x33000001u, 0x33800000u, 0x387fc000u, 0x38800000u, 0x477fe000u, 0x477fefffu,
                                0x477ff000u, 0x477fffffu, 0x3f801000u, 0x3f803000u, 0x00000001u, 0x807fffffu, 0x7f800000u,
                                0xff800000u, 0x7fc00000u, 0x7f800001u, 0xffbfffffu, 0x7fffffffu};
    for (uint64_t x = 0; x <= 0xffffffffu;) {
        int m = 0;
        if (n == 0)
            for (; m < (int)(sizeof special / sizeof *special); m++) memcpy(&f[m], &special[m], 4);
        for (; m < CH && x <= 0xffffffffu; m++, x += 251) {
            const uint32_t v = (uint32_t)x;
            memcpy(&f[m], &v, 4);
        }
        const int off = (int)(n % 8); /* runs start anywhere in a group of 8 */
        ac_f32_to_f16_n(f + off, out + off, (size_t)(m - off));
        for (int i = off; i < m; i++) bad += out[i] != ac_f32_to_f16(f[i]);
        n++;
    }
    CHECKF(bad == 0, "f32 -> f16: %zu of the sampled values differ", bad);
    free(raw), free(got);
}

static void test_atomic_write(void) {
    char path[4096];
    snprintf(path, sizeof path, "%s/atomic.bin", test_tmpdir());
    ac_err err;
    CHECK(ac_write_file_atomic(path, "hello", 5, &err) == 0);
    char *data;
    size_t n;
    CHECK(ac_read_file(path, 100, &data, &n, &err) == 0);
    CHECK(n == 5 && !memcmp(data, "hello", 5));
    free(data);
    CHECK(ac_read_file(path, 3, &data, &n, &err) == -1); /* over the limit */
    CHECK(strstr(err.msg, "ATTNCAP_MAX_FILE_BYTES"));
    CHECK(ac_read_file(test_tmpdir(), 100, &data, &n, &err) == -1);
    CHECK(strstr(err.msg, "directory"));
    CHECK(ac_write_file_atomic("/nonexistent-dir/x", "a", 1, &err) == -1);
    CHECK(strstr(err.msg, "/nonexistent-dir/x"));
    if (access("/dev/full", W_OK) == 0) {
        /* A full disk must be an error, not a silent truncation. */
        FILE *f = fopen("/dev/full", "wb");
        CHECK(f);
        char big[1 << 16] = {0};
        size_t w = fwrite(big, 1, sizeof big, f);
        int bad = fflush(f) != 0 || w != sizeof big;
        fclose(f);
        CHECK(bad);
    }
}

int main(void) {
    RUN(test_sha256_vectors);
    RUN(test_sha256_vs_coreutils);
    RUN(test_fp16);
    RUN(test_fp16_bulk);
    RUN(test_atomic_write);
    return TEST_EXIT();
}
