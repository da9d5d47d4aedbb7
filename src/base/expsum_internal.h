/* expsum_internal.h: the sum over a row of exp(x_i - m), the heart of every softmax over the
 * vocabulary (8,916 words a row, a row per hypothesis per step). Not a public header.
 *
 * Computed with the very bits of the C library's expf, so a softmax gives the same numbers (and the
 * search the same captions) with it as with a loop of expf calls: on x86-64 with AVX2 and FMA (AVX-512
 * 16 at a time, else AVX2 8) each value is glibc's expf algorithm (the one its FMA build runs: ARM's
 * optimized-routines, 32-entry table of 2^(i/32), a degree-3 polynomial in double, the same fused
 * operations in the same order, the same under- and overflow results), checked against expf over
 * every float (tests/test_expsum.c); elsewhere the loop of expf calls itself. The sum is taken in
 * double, value by value in index order (as the loop does), so it is the same bits too. */
#ifndef ATTNCAP_EXPSUM_INTERNAL_H
#define ATTNCAP_EXPSUM_INTERNAL_H
#include <stddef.h>

/* The sum over i < n, in order, in double, of (double)expf(x[i] - m) (the difference in float); if
 * out is not NULL, out[i] = expf(x[i] - m) too (out may be x). */
double ac_exp_sum(const float *x, size_t n, float m, float *out);

/* The largest of x[0..n) as the loop "m = x[0]; m = x[i] > m ? x[i] : m" finds it (a NaN is passed
 * over unless it is x[0]; of +0 and -0 the first seen), vectorised. n >= 1. */
float ac_max_row(const float *x, size_t n);
#endif
