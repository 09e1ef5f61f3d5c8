/* A fast non-cryptographic 128-bit hash of a byte range, for the pipeline
 * fingerprint (conveyor/data/checkpoint.py): it tells whether the arrays a
 * saved state was made from are the ones a pipeline holds now. Not for
 * adversaries: it detects changes, it does not resist forgery.
 *
 * The value depends only on the bytes and their count (little-endian words
 * on every machine), so a state saved in one process restores in another. */
#ifndef CV_HASH128_H
#define CV_HASH128_H

#include <stddef.h>
#include <stdint.h>

/* Writes 16 bytes to out. One pass over data; thread-safe, no allocation. */
void cv_hash128(const void *data, size_t size, unsigned char out[16]);

#endif
