/* image.c: decode photos with stb_image (JPEG, PNG, BMP, GIF), WebP and TIFF (image_formats.c), a
 * JPEG through libjpeg-turbo, with its DCT scaling when asked for a smaller size (image_jpeg.c), make them
 * upright by EXIF orientation.
 *
 * Decoding is guarded: the format is recognised by its magic bytes (stb would otherwise happily read
 * random bytes as TGA), the size comes from the header via stbi_info_from_memory and is checked
 * against the pixel limit before a single pixel is decoded (decompression bombs), and truncation is
 * detected where stb would silently pad with zeros (JPEG without EOI, BMP shorter than its rows).
 * Resizing: resize.c. */
#include "attncap/image.h"

#include <stb_image.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "image_internal.h"
#include "alloc_internal.h"

enum { FMT_UNKNOWN, FMT_JPEG, FMT_PNG, FMT_BMP, FMT_GIF, FMT_WEBP, FMT_TIFF };

static int sniff(const uint8_t *p, size_t n) {
    if (n >= 3 && p[0] == 0xFF && p[1] == 0xD8 && p[2] == 0xFF) return FMT_JPEG;
    if (n >= 8 && !memcmp(p, "\x89PNG\r\n\x1a\n", 8)) return FMT_PNG;
    if (n >= 2 && p[0] == 'B' && p[1] == 'M') return FMT_BMP;
    if (n >= 6 && (!memcmp(p, "GIF87a", 6) || !memcmp(p, "GIF89a", 6))) return FMT_GIF;
    if (n >= 12 && !memcmp(p, "RIFF", 4) && !memcmp(p + 8, "WEBP", 4)) return FMT_WEBP;
    if (n >= 4 && (!memcmp(p, "II*\0", 4) || !memcmp(p, "MM\0*", 4))) return FMT_TIFF;
    return FMT_UNKNOWN;
}

static unsigned rd16(const uint8_t *p, int be) { return be ? (unsigned)p[0] << 8 | p[1] : (unsigned)p[1] << 8 | p[0]; }
static uint32_t rd32(const uint8_t *p, int be) {
    return be ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
              : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

/* The Orientation tag (0x0112) of IFD0 in an Exif APP1 payload (after "Exif\0\0"), or 1. */
static int exif_orientation(const uint8_t *t, size_t n) {
    if (n < 8) return 1;
    int be;
    if (t[0] == 'I' && t[1] == 'I') be = 0;
    else if (t[0] == 'M' && t[1] == 'M') be = 1;
    else return 1;
    if (rd16(t + 2, be) != 42) return 1;
    uint32_t ifd = rd32(t + 4, be);
    if (ifd > n || n - ifd < 2) return 1;
    unsigned count = rd16(t + ifd, be);
    for (unsigned i = 0; i < count; i++) {
        size_t e = (size_t)ifd + 2 + 12 * (size_t)i;
        if (e + 12 > n) return 1;
        if (rd16(t + e, be) != 0x0112) continue;
        unsigned type = rd16(t + e + 2, be), v;
        if (type == 3) v = rd16(t + e + 8, be);       /* SHORT, the standard type */
        else if (type == 4) v = rd32(t + e + 8, be);  /* LONG, seen in the wild */
        else return 1;
        return v >= 1 && v <= 8 ? (int)v : 1;
    }
    return 1;
}

/* A DHT segment's tables must each hold at most 256 codes and fit the segment. Debian's stb_image
 * 2.27 trusts the counts and writes past its Huffman arrays otherwise (fixed upstream in 2.28; found
 * by fuzz/fuzz_image.c), so we check before stb sees the file. */
static int dht_ok(const uint8_t *seg, size_t len) {
    size_t i = 0;
    while (i < len) {
        if (len - i < 17) return 0;
        if ((seg[i] >> 4) > 1 || (seg[i] & 15) > 3) return 0;
        size_t n = 0;
        for (int k = 1; k <= 16; k++) n += seg[i + k];
        if (n > 256 || len - i - 17 < n) return 0;
        i += 17 + n;
    }
    return 1;
}

/* What stb_image 2.27 leaves undone without failing: it decodes with whatever its malloc'd decoder
 * state holds for a quantization or Huffman table the file never defined, never writes a component
 * no scan codes, and stops a scan early, keeping the rest of the image undecoded, when a restart
 * marker is missing. Each gives pixels from uninitialised memory (valgrind, fuzz corpus), so
 * jpeg_scan refuses such files. Only the first SOF counts: stb rejects a second one itself. */
typedef struct {
    int progressive, nc, hmax, vmax, id[4], h[4], v[4], tq[4], coded[4];
    unsigned x, y, dqt, dc, ac, dri, rst;
    uint64_t need_rst;
} jpeg_frame;

static void jpeg_sof(jpeg_frame *f, unsigned m, const uint8_t *seg, size_t len) {
    if (f->nc || (m != 0xC0 && m != 0xC1 && m != 0xC2) || len < 6 || seg[5] < 1 || seg[5] > 4) return;
    if (len < 6 + 3 * (size_t)seg[5]) return;
    f->progressive = m == 0xC2, f->y = rd16(seg + 1, 1), f->x = rd16(seg + 3, 1);
    for (int k = 0; k < seg[5]; k++) {
        const uint8_t *c = seg + 6 + 3 * k;
        f->id[k] = c[0], f->h[k] = c[1] >> 4, f->v[k] = c[1] & 15, f->tq[k] = c[2] & 3;
        if (!f->h[k] || !f->v[k]) return; /* stb refuses it */
        if (f->h[k] > f->hmax) f->hmax = f->h[k];
        if (f->v[k] > f->vmax) f->vmax = f->v[k];
    }
    f->nc = seg[5];
}

/* Checks one SOS header against the frame and the tables defined so far; sets how many restart
 * markers the scan needs. Returns 0 or -3. */
static int jpeg_sos(jpeg_frame *f, const uint8_t *seg, size_t len) {
    f->need_rst = 0, f->rst = 0;
    if (!f->nc || len < 1 || len < 4 + 2 * (size_t)seg[0] || !seg[0]) return 0; /* stb refuses it */
    int ns = seg[0], ss = seg[1 + 2 * ns], ah = seg[3 + 2 * ns] >> 4, c = 0;
    for (int k = 0; k < ns; k++) {
        for (c = 0; c < f->nc && f->id[c] != seg[1 + 2 * k]; c++) {}
        if (c == f->nc) return 0; /* stb refuses an unknown component */
        unsigned td = seg[2 + 2 * k] >> 4, ta = seg[2 + 2 * k] & 15;
        if (td > 3 || ta > 3) return 0;
        int use_dc = !f->progressive || (ss == 0 && ah == 0), use_ac = !f->progressive || ss > 0;
        if (!(f->dqt >> f->tq[c] & 1) || (use_dc && !(f->dc >> td & 1)) || (use_ac && !(f->ac >> ta & 1))) return -3;
        if (!f->progressive || (ss == 0 && ah == 0)) f->coded[c] = 1; /* a DC first scan sets every coefficient */
    }
    uint64_t mcus; /* as stb counts them: blocks of the one component, else interleaved MCUs */
    if (ns == 1)
        mcus = (((uint64_t)f->x * f->h[c] + f->hmax - 1) / f->hmax + 7) / 8 * ((((uint64_t)f->y * f->v[c] + f->vmax - 1) / f->vmax + 7) / 8);
    else
        mcus = ((uint64_t)f->x + 8 * f->hmax - 1) / (8 * f->hmax) * (((uint64_t)f->y + 8 * f->vmax - 1) / (8 * f->vmax));
    if (f->dri && mcus) f->need_rst = (mcus + f->dri - 1) / f->dri - 1;
    return 0;
}

/* Walks every JPEG marker (through the entropy-coded scans, where 0xFF is escaped as FF 00 and
 * restart markers carry no length) with bounds-checked lengths: the EXIF orientation of the first
 * Exif APP1 (1 if none), whether the file reaches its EOI marker (a truncated file does not), and
 * whether every Huffman table is sane. Returns 0, -1 for a bad Huffman table, -2 for too many scans,
 * -3 for a scan using an undefined table, -4 for missing restart markers, -5 for a component no scan
 * codes (see jpeg_frame). */
static int jpeg_scan(const uint8_t *p, size_t n, int *orientation, int *has_eoi) {
    *orientation = 1;
    *has_eoi = 0;
    size_t i = 2;
    int in_scan = 0, scans = 0;
    jpeg_frame f = {0};
    while (i + 1 < n) {
        if (in_scan) { /* skip entropy-coded data up to the next real marker (memchr: the next 0xFF) */
            const uint8_t *ff = memchr(p + i, 0xFF, n - i);
            if (!ff) break;
            i = (size_t)(ff - p);
            if (i + 1 >= n) break;
            if (p[i + 1] == 0x00 || (p[i + 1] >= 0xD0 && p[i + 1] <= 0xD7) || p[i + 1] == 0xFF) {
                if (p[i + 1] >= 0xD0 && p[i + 1] <= 0xD7) f.rst++;
                i++;
                continue;
            }
            in_scan = 0;
            if (f.rst < f.need_rst) return -4;
        }
        if (p[i] != 0xFF) { /* padding between segments: stb skips it, so must we */
            i++;
            continue;
        }
        if (p[i + 1] == 0xFF) { /* fill byte */
            i++;
            continue;
        }
        unsigned m = p[i + 1];
        if (m == 0xD9) {
            *has_eoi = 1;
            for (int c = 0; c < f.nc; c++)
                if (!f.coded[c]) return -5;
            return 0;
        }
        if (m == 0xD8 || m == 0x01 || (m >= 0xD0 && m <= 0xD7)) {
            i += 2;
            continue;
        }
        if (i + 4 > n) return 0; /* truncated: reported as no EOI */
        size_t len = (size_t)p[i + 2] << 8 | p[i + 3];
        if (len < 2) return 0; /* stb rejects it itself */
        if (len > n - i - 2) return 0;
        const uint8_t *seg = p + i + 4;
        size_t slen = len - 2;
        if (m == 0xC4 && !dht_ok(seg, slen)) return -1;
        for (size_t k = 0, codes; m == 0xC4 && k < slen; k += 17 + codes) { /* dht_ok checked the layout */
            *(seg[k] >> 4 ? &f.ac : &f.dc) |= 1u << (seg[k] & 15);
            codes = 0;
            for (int b = 1; b <= 16; b++) codes += seg[k + b];
        }
        for (size_t k = 0; m == 0xDB && k < slen && seg[k] >> 4 <= 1 && (seg[k] & 15) <= 3; k += seg[k] >> 4 ? 129 : 65)
            f.dqt |= 1u << (seg[k] & 15); /* stb refuses a bad layout itself */
        if (m == 0xDD && slen >= 2) f.dri = rd16(seg, 1);
        if (m >= 0xC0 && m <= 0xC2) jpeg_sof(&f, m, seg, slen);
        if (m == 0xE1 && slen >= 6 && !memcmp(seg, "Exif\0\0", 6) && *orientation == 1)
            *orientation = exif_orientation(seg + 6, slen - 6);
        i += 2 + len;
        /* Every scan of a progressive JPEG revisits the whole image: thousands of tiny scans make a
         * small file take minutes. Real encoders write at most a few dozen. */
        if (m == 0xDA && ++scans > 256) return -2;
        if (m == 0xDA && jpeg_sos(&f, seg, slen)) return -3;
        if (m == 0xDA) in_scan = 1;
    }
    return 0;
}

/* Uncompressed BMPs must hold all their rows: stb reads past the end as zeros. */
static int bmp_complete(const uint8_t *p, size_t n, int w, int h) {
    if (n < 34) return 0;
    uint32_t off = rd32(p + 10, 0), hsz = rd32(p + 14, 0);
    if (hsz < 40) return 1; /* OS/2 v1 header: leave it to stb */
    unsigned bpp = rd16(p + 28, 0);
    uint32_t comp = rd32(p + 30, 0);
    if (comp != 0 && comp != 3 && comp != 6) return 1; /* RLE: length unknown in advance */
    uint64_t row = ((uint64_t)bpp * (uint64_t)w + 31) / 32 * 4;
    return (uint64_t)off + row * (uint64_t)h <= n;
}

/* A palette index past the end of a BMP's or PNG's palette makes stb_image 2.27 copy a colour from
 * its uninitialised stack (valgrind). So stb gets a copy of such a file with the palette padded to
 * 256 entries of black, which is how libpng decodes such an index: *out (NULL when the palette is
 * full or stb refuses the file anyway), its length in *out_len. Returns 0, -1 when out of memory,
 * -2 for a paletted BMP whose pixels start before its palette could (stb reads no palette at all). */
static int pad_palette(const uint8_t *p, size_t n, int fmt, uint8_t **out, size_t *out_len) {
    size_t at = 0, ins = 0, plte = 0;
    *out = NULL;
    if (fmt == FMT_PNG) {
        int ct = -1;
        for (size_t i = 8; i + 12 <= n;) {
            uint32_t len = rd32(p + i, 1);
            if (len > n - i - 12 || !memcmp(p + i + 4, "IDAT", 4)) break;
            if (!memcmp(p + i + 4, "IHDR", 4) && len >= 13) ct = p[i + 17];
            if (!memcmp(p + i + 4, "PLTE", 4) && ct == 3 && len % 3 == 0 && len && len < 768) {
                plte = i, at = i + 8 + len, ins = 768 - len; /* the CRC, which stb ignores, follows the padding */
                break;
            }
            i += 12 + (size_t)len;
        }
    } else if (fmt == FMT_BMP && n >= 30) {
        /* stb reads psize entries right after the header: (offset - 14 - hsz) / 4 rounded down, or
         * for an OS/2 v1 header (offset - 38) / 3, 4 entries short of the real palette (a negative
         * count for a small one). Zeros inserted after the entries that fit before the pixels make
         * its count 256. */
        int64_t off = (int32_t)rd32(p + 10, 0), hsz = rd32(p + 14, 0), bpp = rd16(p + (hsz == 12 ? 24 : 28), 0);
        if (!(hsz == 12 || hsz == 40 || hsz == 56 || hsz == 108 || hsz == 124) || bpp > 8) return 0;
        int64_t esz = hsz == 12 ? 3 : 4, d = off - 14 - hsz, k = d >= 0 ? d / esz : -1;
        if (k < 1) return -2;
        if ((hsz == 12 ? d >= 780 : k >= 256) || 14 + hsz + k * esz > (int64_t)n) return 0; /* full, or stb refuses it */
        at = (size_t)(14 + hsz + k * esz), ins = (size_t)(hsz == 12 ? 780 - d : 1024 - 4 * k);
    }
    if (!ins || n > INT32_MAX - ins) return 0;
    uint8_t *q = ac_malloc(n + ins);
    if (!q) return -1;
    memcpy(q, p, at);
    memset(q + at, 0, ins);
    memcpy(q + at + ins, p + at, n - at);
    if (fmt == FMT_PNG) {
        q[plte] = 0, q[plte + 1] = 0, q[plte + 2] = 768 >> 8, q[plte + 3] = 768 & 255; /* PLTE length */
    } else {
        uint32_t off = rd32(p + 10, 0) + (uint32_t)ins;
        for (int b = 0; b < 4; b++) q[10 + b] = (uint8_t)(off >> 8 * b);
    }
    *out = q, *out_len = n + ins;
    return 0;
}

/* stb's failure reason, fit for a one-line message: for an unknown PNG chunk it embeds the chunk
 * type's raw bytes (fuzz finding: a newline there broke the one-line error contract). */
static const char *stb_reason(char out[64]) {
    const char *r = stbi_failure_reason();
    size_t i = 0;
    for (; r && r[i] && i < 63; i++) out[i] = (unsigned char)r[i] < 0x20 || (unsigned char)r[i] >= 0x7f ? '?' : r[i];
    out[i] = 0;
    return i ? out : "unknown error";
}

/* GIF: the first image's LZW data must be complete (stb pads a truncated stream with zeros). Walks
 * the block structure: header, global colour table, extensions, image descriptor, sub-blocks. */
static int gif_complete(const uint8_t *p, size_t n) {
    if (n < 13) return 0;
    size_t i = 13;
    if (p[10] & 0x80) i += 3u << ((p[10] & 7) + 1);
    while (i < n) {
        if (p[i] == 0x21) { /* extension: label, then sub-blocks */
            i += 2;
        } else if (p[i] == 0x2C) { /* image descriptor, local colour table, LZW code size */
            if (i + 10 > n) return 0;
            uint8_t flags = p[i + 9];
            i += 10;
            if (flags & 0x80) i += 3u << ((flags & 7) + 1);
            i += 1;
            while (i < n && p[i]) i += 1 + (size_t)p[i];
            return i < n; /* reached the zero-length terminator */
        } else {
            return 0;
        }
        while (i < n && p[i]) i += 1 + (size_t)p[i];
        i++;
    }
    return 0;
}

/* Every chunk's data up to IEND must be in the file: stb grows its IDAT buffer to a chunk's declared
 * length before reading a byte of it (fuzz finding: a 98-byte file declaring a 1.2 GB IDAT made it
 * allocate 2 GB), and fails only afterwards. */
static int png_chunks_fit(const uint8_t *p, size_t n) {
    for (size_t i = 8; i + 8 <= n; i += 12 + (size_t)rd32(p + i, 1)) {
        if (!memcmp(p + i + 4, "IEND", 4)) break; /* stb ignores IEND's length */
        if (rd32(p + i, 1) > n - i - 8) return 0;
    }
    return 1;
}

/* stb inflates a PNG's IDAT stream into a buffer it keeps doubling, whatever the header's size says:
 * a 400 KB file with a 1x1 header made it allocate 400 MB. So we inflate first into a buffer capped
 * at the size the header implies (with room for Adam7 interlacing) and refuse a stream that
 * overflows it. Returns 0 if fine, 1 for a bomb, -1 for a structure/zlib problem stb will report. */
static int png_inflate_bounded(const uint8_t *p, size_t n, uint64_t w, uint64_t h) {
    if (n < 33) return -1;
    static const int channels[7] = {1, 0, 3, 1, 2, 0, 4};
    unsigned depth = p[24], ct = p[25];
    if (ct > 6 || !channels[ct] || !depth || depth > 16) return -1;
    uint64_t row = (w * channels[ct] * depth + 7) / 8;
    uint64_t limit = h * (1 + row) / 8 * 9 + 4 * h + 1024;
    if (limit > INT32_MAX) return -1; /* over stb's own 2^30 limit: it refuses by itself */
    size_t idat_len = 0;
    for (size_t i = 8; i + 12 <= n;) { /* total IDAT payload */
        uint32_t len = rd32(p + i, 1);
        if (len > n - i - 12) return -1;
        if (!memcmp(p + i + 4, "IDAT", 4)) idat_len += len;
        i += 12 + (size_t)len;
    }
    if (!idat_len) return -1;
    char *idat = ac_malloc(idat_len), *out = ac_malloc((size_t)limit);
    int rc = -1;
    if (idat && out) {
        size_t k = 0;
        for (size_t i = 8; i + 12 <= n;) {
            uint32_t len = rd32(p + i, 1);
            if (!memcmp(p + i + 4, "IDAT", 4)) memcpy(idat + k, p + i + 8, len), k += len;
            i += 12 + (size_t)len;
        }
        if (idat_len <= INT32_MAX && stbi_zlib_decode_buffer(out, (int)limit, idat, (int)idat_len) >= 0) rc = 0;
        else rc = !strcmp(stbi_failure_reason(), "output buffer limit") ? 1 : -1;
    }
    free(idat);
    free(out);
    return rc;
}

/* Width and height from the header, parsed here rather than by stb, which refuses huge images with
 * a generic message: the pixel limit must be the one that speaks, before anything is decoded. */
static int header_size(const uint8_t *p, size_t n, int fmt, uint64_t *w, uint64_t *h) {
    if (fmt == FMT_PNG) {
        if (n < 24 || memcmp(p + 12, "IHDR", 4)) return -1;
        *w = rd32(p + 16, 1), *h = rd32(p + 20, 1);
        return 0;
    }
    if (fmt == FMT_GIF) {
        if (n < 10) return -1;
        *w = rd16(p + 6, 0), *h = rd16(p + 8, 0);
        return 0;
    }
    if (fmt == FMT_BMP) {
        if (n < 26) return -1;
        uint32_t hsz = rd32(p + 14, 0);
        if (hsz == 12) {
            *w = rd16(p + 18, 0), *h = rd16(p + 20, 0);
        } else {
            int32_t sw = (int32_t)rd32(p + 18, 0), sh = (int32_t)rd32(p + 22, 0);
            *w = sw < 0 ? 0 : (uint64_t)sw;
            *h = sh < 0 ? (uint64_t)(-(int64_t)sh) : (uint64_t)sh;
        }
        return 0;
    }
    /* JPEG: the first SOFn marker. */
    size_t i = 2;
    while (i + 4 <= n && p[i] == 0xFF) {
        unsigned m = p[i + 1];
        if (m == 0xFF) {
            i++;
            continue;
        }
        if (m == 0xD8 || m == 0x01 || (m >= 0xD0 && m <= 0xD7)) {
            i += 2;
            continue;
        }
        size_t len = (size_t)p[i + 2] << 8 | p[i + 3];
        if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) {
            if (len < 7 || i + 9 > n) return -1;
            *h = rd16(p + i + 5, 1), *w = rd16(p + i + 7, 1);
            return 0;
        }
        if (m == 0xDA || m == 0xD9 || len < 2) return -1;
        i += 2 + len;
    }
    return -1;
}

/* out = rotate/flip of img so that EXIF orientation o becomes 1. Every orientation is a linear map:
 * the out pixel (ox, oy) is the in pixel at origin + ox * dx + oy * dy (in pixels), copied in 32x32
 * tiles so that the turned ones read and write within a few cache lines. */
static int apply_orientation(ac_image *img, int o, const char *name, ac_err *err) {
    if (o <= 1 || o > 8) return 0;
    const int w = img->w, h = img->h, swap = o >= 5;
    const int ow = swap ? h : w, oh = swap ? w : h;
    ptrdiff_t origin, dx, dy; /* the in pixel of out (0, 0), and the steps for ox and oy */
    switch (o) {
    case 2: origin = w - 1, dx = -1, dy = w; break;                            /* mirror horizontal */
    case 3: origin = (ptrdiff_t)h * w - 1, dx = -1, dy = -w; break;            /* rotate 180 */
    case 4: origin = (ptrdiff_t)(h - 1) * w, dx = 1, dy = -w; break;           /* mirror vertical */
    case 5: origin = 0, dx = w, dy = 1; break;                                 /* transpose */
    case 6: origin = (ptrdiff_t)(h - 1) * w, dx = -w, dy = 1; break;           /* rotate 90 clockwise */
    case 7: origin = (ptrdiff_t)h * w - 1, dx = -w, dy = -1; break;            /* transverse */
    default: origin = w - 1, dx = w, dy = -1; break;                           /* 8: rotate 90 counter-clockwise */
    }
    uint8_t *out = ac_malloc((size_t)w * h * 3);
    if (!out) return ac_errf(err, "%s: out of memory", name);
    enum { T = 32 };
    for (int ty = 0; ty < oh; ty += T)
        for (int tx = 0; tx < ow; tx += T) {
            const int ey = ty + T < oh ? ty + T : oh, ex = tx + T < ow ? tx + T : ow;
            for (int oy = ty; oy < ey; oy++) {
                const uint8_t *in = img->px + 3 * (origin + (ptrdiff_t)oy * dy + (ptrdiff_t)tx * dx);
                uint8_t *d = out + ((size_t)oy * ow + tx) * 3;
                for (int ox = tx; ox < ex; ox++, in += 3 * dx, d += 3) d[0] = in[0], d[1] = in[1], d[2] = in[2];
            }
        }
    free(img->px);
    img->px = out;
    img->w = ow, img->h = oh;
    return 0;
}

int ac_image_load_mem_min(const void *data, size_t len, const char *name, int min_w, int min_h, ac_image *img,
                          ac_err *err) {
    memset(img, 0, sizeof *img);
    const uint8_t *p = data;
    char why[64];
    if (!name) name = "image";
    if (len == 0) return ac_errf(err, "%s: empty file, not an image", name);
    int fmt = sniff(p, len);
    if (fmt == FMT_UNKNOWN) return ac_errf(err, "%s: not an image (JPEG, PNG, BMP, GIF, WebP or TIFF expected)", name);
    if (len > INT32_MAX) return ac_errf(err, "%s: file too large to decode", name);
    uint64_t maxpx = ac_limits_get().max_image_pixels, hw, hh;
    if (fmt == FMT_WEBP) return ac_image_webp_decode(p, len, name, maxpx, img, err);
    if (fmt == FMT_TIFF) return ac_image_tiff_decode(p, len, name, maxpx, img, err);
    if (header_size(p, len, fmt, &hw, &hh) == 0 && hw * hh > maxpx)
        return ac_errf(err, "%s: image too large: %llux%llu = %llu pixels, over the limit of %llu (raise ATTNCAP_MAX_IMAGE_PIXELS)",
                       name, (unsigned long long)hw, (unsigned long long)hh, (unsigned long long)(hw * hh),
                       (unsigned long long)maxpx);
    /* Before stb sees the file at all: its header parser already builds the Huffman tables. */
    int orientation = 1;
    if (fmt == FMT_JPEG) {
        int eoi;
        int js = jpeg_scan(p, len, &orientation, &eoi);
        if (js == -1) return ac_errf(err, "%s: corrupt JPEG (bad Huffman table)", name);
        if (js == -2) return ac_errf(err, "%s: corrupt JPEG (more than 256 scans)", name);
        if (js == -3) return ac_errf(err, "%s: corrupt JPEG (a scan uses an undefined quantization or Huffman table)", name);
        if (js == -4) return ac_errf(err, "%s: corrupt JPEG (restart markers missing: part of the image would stay undecoded)", name);
        if (js == -5) return ac_errf(err, "%s: corrupt JPEG (a colour component is never coded)", name);
        if (!eoi) return ac_errf(err, "%s: truncated JPEG (no end-of-image marker)", name);
    }
    int w, h, comp;
    if (!stbi_info_from_memory(p, (int)len, &w, &h, &comp))
        return ac_errf(err, "%s: corrupt or truncated image header (%s)", name, stb_reason(why));
    if (w <= 0 || h <= 0) return ac_errf(err, "%s: not an image (size %dx%d)", name, w, h);
    if ((uint64_t)w * (uint64_t)h > maxpx) /* in case stb and our header parse disagree */
        return ac_errf(err, "%s: image too large: %dx%d = %llu pixels, over the limit of %llu (raise ATTNCAP_MAX_IMAGE_PIXELS)",
                       name, w, h, (unsigned long long)w * (unsigned long long)h, (unsigned long long)maxpx);
    if (fmt == FMT_PNG && !png_chunks_fit(p, len)) return ac_errf(err, "%s: truncated PNG (a chunk runs past the end of the file)", name);
    if (fmt == FMT_PNG && png_inflate_bounded(p, len, (uint64_t)w, (uint64_t)h) == 1)
        return ac_errf(err, "%s: corrupt PNG: its data inflates to more than its %dx%d header allows (decompression bomb)", name, w, h);
    if (fmt == FMT_BMP && !bmp_complete(p, len, w, h)) return ac_errf(err, "%s: truncated BMP (pixel rows missing)", name);
    if (fmt == FMT_GIF && !gif_complete(p, len)) return ac_errf(err, "%s: truncated GIF (image data incomplete)", name);
    if (fmt == FMT_JPEG) { /* libjpeg-turbo, reduced when asked for less; stb_image where it declines */
        int rc = orientation >= 5 ? ac_image_jpeg_decode(p, len, name, min_h, min_w, img, err) /* stored sideways */
                                  : ac_image_jpeg_decode(p, len, name, min_w, min_h, img, err);
        if (rc < 0) return -1;
        if (rc == 0) {
            if (apply_orientation(img, orientation, name, err)) {
                ac_image_free(img);
                return -1;
            }
            return 0;
        }
    }
    int alpha = comp == 2 || comp == 4, want = alpha ? 4 : 3;
    size_t npx = (size_t)w * (size_t)h;
    size_t qlen = len;
    uint8_t *padded, *rgb = NULL;
    int pal = pad_palette(p, len, fmt, &padded, &qlen);
    if (pal == -2) return ac_errf(err, "%s: corrupt BMP (its pixel data offset leaves no room for its palette)", name);
    if (pal == 0) rgb = ac_malloc(npx * 3);
    if (!rgb) {
        free(padded);
        return ac_errf(err, "%s: out of memory for %dx%d pixels", name, w, h);
    }
    const uint8_t *q = padded ? padded : p;
    int dw, dh, dc;
    if (fmt == FMT_PNG && stbi_is_16_bit_from_memory(q, (int)qlen)) {
        /* Round 16 -> 8 bits ourselves (stb truncates), compositing alpha at full precision. */
        uint16_t *s = stbi_load_16_from_memory(q, (int)qlen, &dw, &dh, &dc, want);
        free(padded);
        if (!s || dw != w || dh != h) {
            stbi_image_free(s);
            free(rgb);
            return ac_errf(err, "%s: corrupt or truncated PNG (%s)", name, s ? "size changed" : stb_reason(why));
        }
        for (size_t i = 0; i < npx; i++)
            for (int c = 0; c < 3; c++) {
                double v = s[i * want + c] / 65535.0;
                if (alpha) {
                    double a = s[i * want + 3] / 65535.0;
                    v = v * a + (1.0 - a);
                }
                rgb[i * 3 + c] = (uint8_t)(v * 255.0 + 0.5);
            }
        stbi_image_free(s);
    } else {
        uint8_t *s = stbi_load_from_memory(q, (int)qlen, &dw, &dh, &dc, want);
        free(padded);
        if (!s || dw != w || dh != h) {
            stbi_image_free(s);
            free(rgb);
            return ac_errf(err, "%s: corrupt or truncated image (%s)", name, s ? "size changed" : stb_reason(why));
        }
        if (!alpha) {
            memcpy(rgb, s, npx * 3);
        } else {
            for (size_t i = 0; i < npx; i++) { /* alpha over white, exact rounding (255 is odd: no ties) */
                unsigned a = s[i * 4 + 3];
                for (int c = 0; c < 3; c++) rgb[i * 3 + c] = (uint8_t)((s[i * 4 + c] * a + 255 * (255 - a) + 127) / 255);
            }
        }
        stbi_image_free(s);
    }
    img->w = w, img->h = h, img->px = rgb;
    if (apply_orientation(img, orientation, name, err)) {
        ac_image_free(img);
        return -1;
    }
    return 0;
}

int ac_image_load_mem(const void *data, size_t len, const char *name, ac_image *img, ac_err *err) {
    return ac_image_load_mem_min(data, len, name, 0, 0, img, err);
}

int ac_image_load_min(const char *path, int min_w, int min_h, ac_image *img, ac_err *err) {
    memset(img, 0, sizeof *img);
    char *data;
    size_t len;
    if (ac_read_file(path, ac_limits_get().max_file_bytes, &data, &len, err)) return -1;
    int rc = ac_image_load_mem_min(data, len, path, min_w, min_h, img, err);
    free(data);
    return rc;
}

int ac_image_load(const char *path, ac_image *img, ac_err *err) { return ac_image_load_min(path, 0, 0, img, err); }

void ac_image_free(ac_image *img) {
    if (!img) return;
    free(img->px);
    img->px = NULL;
    img->w = img->h = 0;
}

void ac_image_flip_h(ac_image *img) {
    for (int y = 0; y < img->h; y++) {
        uint8_t *row = img->px + (size_t)y * img->w * 3;
        for (int a = 0, b = img->w - 1; a < b; a++, b--)
            for (int c = 0; c < 3; c++) {
                uint8_t t = row[a * 3 + c];
                row[a * 3 + c] = row[b * 3 + c];
                row[b * 3 + c] = t;
            }
    }
}
