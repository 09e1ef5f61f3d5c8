/* Geometric growth of malloc'd arrays (see array.h). */
#include "core/array.h"

#include <stdint.h>
#include <stdlib.h>

bool cv_array_reserve(void **items, size_t *cap, size_t need, size_t item_size, size_t first_cap)
{
    if (need <= *cap && *items)
        return true;
    size_t n = *cap ? *cap : (first_cap ? first_cap : 1);
    while (n < need) {
        if (n > SIZE_MAX / 2)
            return false;
        n *= 2;
    }
    if (item_size && n > SIZE_MAX / item_size)
        return false;
    void *grown = realloc(*items, n * item_size);
    if (!grown)
        return false;
    *items = grown;
    *cap = n;
    return true;
}
