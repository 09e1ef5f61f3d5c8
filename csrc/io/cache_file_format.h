/* The cache file format's constants and byte helpers (the layout is
 * described in io/cache_file.h), shared by the writer (cache_file_writer.c)
 * and the reader (cache_file.c); no other file includes this. */
#ifndef CV_CACHE_FILE_FORMAT_H
#define CV_CACHE_FILE_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define PROLOGUE_BYTES 32
#define CHUNK_HEADER_BYTES 32
#define FOOTER_BYTES 32
#define BYTE_ORDER_MARK 0x01020304u
#define CHUNK_MAGIC 0x4b435643u   /* "CVCK" */
#define TRAILER_MAGIC 0x52545643u /* "CVTR" */
#define MAX_COMPONENTS 65536
#define MAX_STRUCTURE_BYTES ((uint64_t)64 << 20)

static const char prologue_magic[8] = "CVCACHE";
static const char footer_magic[8] = "CVCEND";

static inline size_t pad8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

static inline void put32(char *p, uint32_t v)
{
    memcpy(p, &v, 4);
}

static inline void put64(char *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

static inline uint32_t get32(const char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline uint64_t get64(const char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

#endif
