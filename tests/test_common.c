/* Tests of common.c: SHA-256 against FIPS 180-4 test vectors, fp16 against IEEE values, atomic files. */
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
    RUN(test_fp16);
    RUN(test_atomic_write);
    return TEST_EXIT();
}
