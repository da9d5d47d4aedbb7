/* common.c: errors, limits, files, progress, paths, SHA-256, fp16. */
#include "attncap/common.h"
#include "attncap/version.h"
#include "common_internal.h"
#include "alloc_internal.h"

#include <cblas.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const char *ac_strerror(int e) {
    static _Thread_local char buf[128];
    snprintf(buf, sizeof buf, "%s", strerror(e));
    if (isupper((unsigned char)buf[0]) && !isupper((unsigned char)buf[1])) buf[0] = (char)tolower((unsigned char)buf[0]);
    return buf;
}

/* Messages often quote text from the file (names, ids, splits); a control byte there (a newline
 * above all) would break the one-line error contract, so it becomes '?'. */
static void err_one_line(ac_err *err) {
    for (char *p = err->msg; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
}

static void verr(ac_err *err, ac_err_code code, const char *fmt, va_list ap) {
    if (!err) return;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    err_one_line(err);
    err->code = code;
}

int ac_errf(ac_err *err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    verr(err, AC_ERR_FAILED, fmt, ap);
    va_end(ap);
    return -1;
}

int ac_errc(ac_err *err, ac_err_code code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    verr(err, code, fmt, ap);
    va_end(ap);
    return -1;
}

int ac_err_prefix(ac_err *err, const char *fmt, ...) {
    if (!err) return -1;
    char prefix[512], old[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    /* Truncation of an over-long message is acceptable; keep the compiler quiet about it. */
    int n = snprintf(err->msg, sizeof err->msg, "%s: ", prefix);
    if (n > 0 && (size_t)n < sizeof err->msg) snprintf(err->msg + n, sizeof err->msg - (size_t)n, "%.*s", (int)(sizeof err->msg - (size_t)n - 1), old);
    err_one_line(err);
    return -1;
}

static uint64_t env_u64(const char *name, uint64_t def) {
    const char *s = getenv(name);
    if (!s || !*s) return def;
    char *end;
    double v = strtod(s, &end);
    if (end == s || v <= 0) return def;
    return (uint64_t)v;
}

ac_limits ac_limits_get(void) {
    ac_limits l;
    l.max_image_pixels = env_u64("ATTNCAP_MAX_IMAGE_PIXELS", 100000000ull);
    l.max_file_bytes = env_u64("ATTNCAP_MAX_FILE_BYTES", 2ull << 30);
    l.max_tensor_elems = env_u64("ATTNCAP_MAX_TENSOR_ELEMS", 1ull << 30);
    l.max_caption_bytes = env_u64("ATTNCAP_MAX_CAPTION_BYTES", 4096);
    l.max_vocab = env_u64("ATTNCAP_MAX_VOCAB", 1ull << 20);
    return l;
}

static const char *file_kind(mode_t m) {
    return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device"
           : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

int ac_open_regular(const char *path, ac_err *err) {
    /* O_NONBLOCK: opening a FIFO would otherwise wait for a writer, forever */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return ac_errf(err, "%s: %s", path, ac_strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return ac_errf(err, "%s: %s", path, ac_strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return ac_errf(err, "%s: is %s, not a file", path, file_kind(st.st_mode));
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}

int ac_read_file(const char *path, size_t max_bytes, char **data, size_t *len, ac_err *err) {
    *data = NULL;
    if (len) *len = 0;
    int fd = ac_open_regular(path, err);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return ac_errf(err, "%s: %s", path, ac_strerror(errno));
    }
    if ((uint64_t)st.st_size > max_bytes) {
        close(fd);
        return ac_errf(err, "%s: file is %lld bytes, over the limit of %zu (raise ATTNCAP_MAX_FILE_BYTES)",
                       path, (long long)st.st_size, max_bytes);
    }
    size_t n = (size_t)st.st_size;
    char *buf = ac_malloc(n + 1);
    if (!buf) {
        close(fd);
        return ac_errf(err, "%s: out of memory reading %zu bytes", path, n);
    }
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0) {
            if (errno == EINTR) continue;
            free(buf);
            close(fd);
            return ac_errf(err, "%s: read error: %s", path, ac_strerror(errno));
        }
        if (r == 0) break;
        got += (size_t)r;
    }
    close(fd);
    buf[got] = 0;
    *data = buf;
    if (len) *len = got;
    return 0;
}

int ac_atomic_open(ac_atomic_file *af, const char *path, ac_err *err) {
    memset(af, 0, sizeof *af);
    size_t n = strlen(path) + 32;
    af->final_path = ac_strdup(path);
    af->tmp_path = ac_malloc(n);
    if (!af->final_path || !af->tmp_path) {
        free(af->final_path);
        free(af->tmp_path);
        return ac_errf(err, "%s: out of memory", path);
    }
    snprintf(af->tmp_path, n, "%s.tmp.%d", path, (int)getpid());
    af->fp = fopen(af->tmp_path, "wb");
    if (!af->fp) {
        int e = errno;
        free(af->final_path);
        free(af->tmp_path);
        af->final_path = af->tmp_path = NULL;
        return ac_errf(err, "%s: cannot write: %s", path, ac_strerror(e));
    }
    return 0;
}

int ac_atomic_write(ac_atomic_file *af, const void *data, size_t len, ac_err *err) {
    if (af->failed) return -1;
    if (len && fwrite(data, 1, len, af->fp) != len) {
        af->failed = 1;
        return ac_errf(err, "%s: write failed: %s", af->final_path, ac_strerror(errno));
    }
    return 0;
}

static void atomic_free(ac_atomic_file *af) {
    free(af->final_path);
    free(af->tmp_path);
    af->final_path = af->tmp_path = NULL;
    af->fp = NULL;
}

int ac_atomic_commit(ac_atomic_file *af, ac_err *err) {
    if (!af->fp) return ac_errf(err, "atomic file not open");
    int bad = af->failed;
    if (fflush(af->fp) != 0) bad = 1;
    if (!bad && fsync(fileno(af->fp)) != 0) bad = 1;
    int e = errno;
    if (fclose(af->fp) != 0) bad = 1, e = errno;
    af->fp = NULL;
    if (bad) {
        unlink(af->tmp_path);
        ac_errf(err, "%s: write failed: %s", af->final_path, ac_strerror(e));
        atomic_free(af);
        return -1;
    }
    if (rename(af->tmp_path, af->final_path) != 0) {
        e = errno;
        unlink(af->tmp_path);
        ac_errf(err, "%s: cannot rename into place: %s", af->final_path, ac_strerror(e));
        atomic_free(af);
        return -1;
    }
    /* Make the rename itself durable. */
    char *dir = ac_strdup(af->final_path);
    if (dir) {
        char *slash = strrchr(dir, '/');
        const char *d = ".";
        if (slash) {
            *slash = 0;
            d = slash == dir ? "/" : dir;
        }
        int dfd = open(d, O_RDONLY | O_DIRECTORY);
        if (dfd >= 0) {
            fsync(dfd);
            close(dfd);
        }
        free(dir);
    }
    atomic_free(af);
    return 0;
}

void ac_atomic_abort(ac_atomic_file *af) {
    if (af->fp) fclose(af->fp);
    if (af->tmp_path) unlink(af->tmp_path);
    atomic_free(af);
}

int ac_write_file_atomic(const char *path, const void *data, size_t len, ac_err *err) {
    ac_atomic_file af;
    if (ac_atomic_open(&af, path, err)) return -1;
    if (ac_atomic_write(&af, data, len, err)) {
        ac_atomic_abort(&af);
        return -1;
    }
    return ac_atomic_commit(&af, err);
}

int ac_mkdirs(const char *path, ac_err *err) {
    char buf[PATH_MAX];
    if (strlen(path) >= sizeof buf) return ac_errf(err, "%s: path too long", path);
    strcpy(buf, path);
    for (char *p = buf + 1; ; p++) {
        if (*p == '/' || *p == 0) {
            char c = *p;
            *p = 0;
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return ac_errf(err, "%s: cannot create directory: %s", buf, ac_strerror(errno));
            if (!ac_is_dir(buf)) return ac_errf(err, "%s: exists and is not a directory", buf);
            *p = c;
            if (!c) break;
        }
    }
    return 0;
}

const char *ac_version(void) { return AC_VERSION; }

void ac_free(void *p) { free(p); }

double ac_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int ac_is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int ac_is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

char *ac_path_join(const char *a, const char *b) {
    if (!a || !b) return NULL; /* an allocation before this one failed: so does this one */
    size_t n = strlen(a) + strlen(b) + 2;
    char *s = ac_malloc(n);
    if (!s) return NULL;
    if (!*a || a[strlen(a) - 1] == '/')
        snprintf(s, n, "%s%s", a, b);
    else
        snprintf(s, n, "%s/%s", a, b);
    return s;
}

/* ---- SHA-256 (FIPS 180-4) ---- */
typedef struct sha256_ctx {
    void (*block)(struct sha256_ctx *, const uint8_t *); /* SHA-NI's or the C version (sha256_init) */
    uint32_t h[8];
    uint64_t len;
    uint8_t buf[64];
    size_t fill;
} sha256_ctx;

static const uint32_t K256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define ROR32(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_SHA_NI_CODE 1
#include <immintrin.h>
/* One block with the SHA extensions (x86 SHA-NI: most x86 CPUs since 2017-2019): four rounds' message
 * words a vector, each sha256rnds2 two rounds. The state lives as ABEF and CDGH (the instructions'
 * order). About 8x the C version below: the encoder and the detector are hashed on every start.
 * Compiled for any x86-64 build and chosen at run time (sha256_init), so that a build for older
 * CPUs uses it where the CPU has it, and valgrind, which hides SHA-NI, gets the C version. */
__attribute__((target("sha,sse4.1,ssse3"))) static void sha256_block_ni(sha256_ctx *c, const uint8_t *p) {
    const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
    __m128i t = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&c->h[0]), 0xB1); /* b a d c */
    __m128i cdgh = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&c->h[4]), 0x1B); /* h g f e */
    __m128i abef = _mm_alignr_epi8(t, cdgh, 8);
    cdgh = _mm_blend_epi16(cdgh, t, 0xF0);
    const __m128i abef0 = abef, cdgh0 = cdgh;
    __m128i w[16]; /* the message schedule, 4 words each: w[i] holds W[4i .. 4i+3] */
    for (int i = 0; i < 16; i++) {
        if (i < 4) {
            w[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), bswap);
        } else { /* W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16] */
            __m128i x = _mm_sha256msg1_epu32(w[i - 4], w[i - 3]);
            x = _mm_add_epi32(x, _mm_alignr_epi8(w[i - 1], w[i - 2], 4));
            w[i] = _mm_sha256msg2_epu32(x, w[i - 1]);
        }
        const __m128i wk = _mm_add_epi32(w[i], _mm_loadu_si128((const __m128i *)&K256[4 * i]));
        cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);
        abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0E));
    }
    abef = _mm_add_epi32(abef, abef0);
    cdgh = _mm_add_epi32(cdgh, cdgh0);
    t = _mm_shuffle_epi32(abef, 0x1B);     /* f e b a */
    cdgh = _mm_shuffle_epi32(cdgh, 0xB1); /* d c h g */
    _mm_storeu_si128((__m128i *)&c->h[0], _mm_blend_epi16(t, cdgh, 0xF0)); /* d c b a: a b c d in memory */
    _mm_storeu_si128((__m128i *)&c->h[4], _mm_alignr_epi8(cdgh, t, 8));   /* h g f e: e f g h */
}
#endif

static void sha256_block_c(sha256_ctx *c, const uint8_t *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROR32(w[i - 15], 7) ^ ROR32(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROR32(w[i - 2], 17) ^ ROR32(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = c->h[0], b = c->h[1], cc = c->h[2], d = c->h[3], e = c->h[4], f = c->h[5], g = c->h[6], h = c->h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t S1 = ROR32(e, 6) ^ ROR32(e, 11) ^ ROR32(e, 25);
        uint32_t ch = (e & f) ^ (~e & g);
        uint32_t t1 = h + S1 + ch + K256[i] + w[i];
        uint32_t S0 = ROR32(a, 2) ^ ROR32(a, 13) ^ ROR32(a, 22);
        uint32_t mj = (a & b) ^ (a & cc) ^ (b & cc);
        uint32_t t2 = S0 + mj;
        h = g, g = f, f = e, e = d + t1, d = cc, cc = b, b = a, a = t1 + t2;
    }
    c->h[0] += a, c->h[1] += b, c->h[2] += cc, c->h[3] += d;
    c->h[4] += e, c->h[5] += f, c->h[6] += g, c->h[7] += h;
}

static void sha256_init(sha256_ctx *c) {
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(c->h, h0, sizeof h0);
    c->block = sha256_block_c;
#if defined(HAVE_SHA_NI_CODE)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sha") && __builtin_cpu_supports("sse4.1") && __builtin_cpu_supports("ssse3"))
        c->block = sha256_block_ni;
#endif
    c->len = 0;
    c->fill = 0;
}

static void sha256_update(sha256_ctx *c, const uint8_t *p, size_t n) {
    c->len += n;
    while (n) {
        size_t take = 64 - c->fill < n ? 64 - c->fill : n;
        memcpy(c->buf + c->fill, p, take);
        c->fill += take, p += take, n -= take;
        if (c->fill == 64) {
            c->block(c, c->buf);
            c->fill = 0;
        }
    }
}

static void sha256_final(sha256_ctx *c, uint8_t out[32]) {
    uint64_t bits = c->len * 8;
    uint8_t pad = 0x80, zero = 0;
    sha256_update(c, &pad, 1);
    while (c->fill != 56) sha256_update(c, &zero, 1);
    uint8_t lenb[8];
    for (int i = 0; i < 8; i++) lenb[i] = (uint8_t)(bits >> (56 - 8 * i));
    sha256_update(c, lenb, 8);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)(c->h[i] >> 24), out[4 * i + 1] = (uint8_t)(c->h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(c->h[i] >> 8), out[4 * i + 3] = (uint8_t)c->h[i];
    }
}

void ac_sha256(const void *data, size_t len, uint8_t out[32]) {
    sha256_ctx c;
    sha256_init(&c);
    sha256_update(&c, data, len);
    sha256_final(&c, out);
}

int ac_sha256_file(const char *path, char hex[65], ac_err *err) {
    int fd = ac_open_regular(path, err);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "rb");
    if (!f) {
        if (fd >= 0) close(fd);
        return fd < 0 ? -1 : ac_errf(err, "%s: %s", path, ac_strerror(errno));
    }
    sha256_ctx c;
    sha256_init(&c);
    uint8_t buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) sha256_update(&c, buf, n);
    int bad = ferror(f);
    fclose(f);
    if (bad) return ac_errf(err, "%s: read error", path);
    uint8_t out[32];
    sha256_final(&c, out);
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", out[i]);
    return 0;
}

const char *ac_default_precision(void) {
    const char *s = getenv("ATTNCAP_PRECISION");
    return s && *s ? s : "auto";
}

int ac_default_threads(void) {
    const char *s = getenv("ATTNCAP_THREADS");
    if (s && atoi(s) > 0) return atoi(s);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

void ac_set_threads(int n) {
    /* only a change: OpenBLAS's call also restarts its worker threads if they were stopped (the CLI
     * stops them, main.c), and they spin for 0.1 s when started */
    if (n < 1) n = 1;
    if (openblas_get_num_threads() != n) openblas_set_num_threads(n);
}
