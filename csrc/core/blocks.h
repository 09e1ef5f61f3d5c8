/* Small blocks recycled between threads.
 *
 * DESIGN
 * A pipeline's small elements are allocated on a pool thread and freed on
 * the consumer's thread. glibc's malloc gives each thread an arena and
 * returns a freed chunk to the arena it came from, under that arena's lock:
 * the consumer's frees and the producer's mallocs contend for one lock per
 * element, and a range(n).prefetch(64) spent a third of its time asleep on
 * it. (Preloading jemalloc made it 4x faster.)
 *
 * So blocks of up to CV_BLOCK_MAX bytes, in classes of 64, come from
 * magazines, as in Bonwick's slab allocator and tcmalloc: each thread keeps
 * a magazine of CV_BLOCK_MAGAZINE blocks per class and uses it with no lock;
 * a free that finds its magazine full hands the whole magazine to the depot,
 * and an allocation that finds its magazine empty takes a full one from it,
 * one lock per magazine. The depot holds at most CV_BLOCK_DEPOT magazines
 * per class (256 KiB for the largest); beyond that blocks go back to
 * malloc. A thread's magazines go to the depot when it exits.
 *
 * Blocks are 64-byte aligned. Built with AddressSanitizer the blocks are
 * plain malloc, so it still sees every use after free.
 */
#ifndef CV_BLOCKS_H
#define CV_BLOCKS_H

#include <stddef.h>

#define CV_BLOCK_MAX 512
#define CV_BLOCK_MAGAZINE 32
#define CV_BLOCK_DEPOT 16

/* A block of at least `size` (<= CV_BLOCK_MAX) bytes, 64-byte aligned, not
 * zeroed; NULL when out of memory. Any thread. */
void *cv_block_alloc(size_t size);

/* Free a block from cv_block_alloc; `size` as asked for. Any thread. */
void cv_block_free(void *block, size_t size);

/* fork(): before_fork takes the depot's locks (pthread_atfork's prepare),
 * so no thread is half-way through a spill or refill when the process is
 * copied; the parent then releases them. In the child only the forking
 * thread runs: after_fork forgets the depot (its blocks stay allocated, a
 * bounded leak) and makes its locks anew. */
void cv_blocks_before_fork(void);
void cv_blocks_after_fork_parent(void);
void cv_blocks_after_fork(void);

#endif
