/* CRC-32C (Castagnoli), as TFRecord framing uses it (LevelDB's crc32c).
 *
 * The SSE4.2 `crc32` instruction is used when the CPU has it (checked once at
 * run time); otherwise a portable slicing-by-8 table gives the same result.
 * Plain C, thread-safe, no allocation.
 */
#ifndef CV_CRC32C_H
#define CV_CRC32C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Extend `crc` (0 to start) over n bytes: crc32c(a + b) == extend(crc32c(a), b). */
uint32_t cv_crc32c_extend(uint32_t crc, const void *data, size_t n);
static inline uint32_t cv_crc32c(const void *data, size_t n)
{
    return cv_crc32c_extend(0, data, n);
}
/* The portable path, whatever the CPU (for tests and benchmarks). */
uint32_t cv_crc32c_extend_software(uint32_t crc, const void *data, size_t n);
/* True when cv_crc32c_extend uses the hardware instruction. */
bool cv_crc32c_hardware(void);
/* Force the software path (on = true) or go back to run-time detection.
 * Process-wide; meant for tests. */
void cv_crc32c_force_software(bool on);

/* TFRecord's masking: rotate right by 15 and add a constant, so that a CRC
 * stored inside checksummed data does not checksum to itself. */
#define CV_CRC32C_MASK_DELTA 0xa282ead8u
static inline uint32_t cv_crc32c_mask(uint32_t crc)
{
    return ((crc >> 15) | (crc << 17)) + CV_CRC32C_MASK_DELTA;
}
static inline uint32_t cv_crc32c_unmask(uint32_t masked)
{
    uint32_t rot = masked - CV_CRC32C_MASK_DELTA;
    return (rot >> 17) | (rot << 15);
}
static inline uint32_t cv_crc32c_masked(const void *data, size_t n)
{
    return cv_crc32c_mask(cv_crc32c(data, n));
}

#endif
