/* Growing a malloc'd array geometrically: the one helper every
 * "append to a buffer" in the engine uses (cache files, the memory cache,
 * record readers), so capacity doubling and its overflow checks are written
 * once.
 */
#ifndef CV_ARRAY_H
#define CV_ARRAY_H

#include <stdbool.h>
#include <stddef.h>

/* Make *items (an array of `item_size`-byte items with room for *cap) hold at
 * least `need` items, and be allocated even when need is 0: the capacity
 * starts at `first_cap` and doubles. Returns false, leaving *items and *cap
 * as they were, when memory runs out or the size would overflow. */
bool cv_array_reserve(void **items, size_t *cap, size_t need, size_t item_size, size_t first_cap);

#endif
