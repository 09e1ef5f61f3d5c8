#include "core/blocking.h"

#include "core/clock.h"

static _Thread_local CvBlockingHooks hooks;
static _Thread_local int depth;
static _Thread_local int64_t since, total, contended;

void cv_blocking_set_hooks(CvBlockingHooks h)
{
    hooks = h;
}

int cv_blocking_depth(void)
{
    return depth;
}

bool cv_blocking_cancelled(void)
{
    return hooks.cancelled && hooks.cancelled(hooks.owner);
}

void cv_blocking_begin(void)
{
    if (!hooks.enter || depth++ > 0)
        return;
    since = cv_now_ns();
    hooks.enter(hooks.owner);
}

void cv_blocking_end(void)
{
    if (!hooks.enter || --depth > 0)
        return;
    total += cv_now_ns() - since;
    hooks.leave(hooks.owner);
}

int64_t cv_blocking_ns(void)
{
    return total;
}

void cv_blocking_contended(int64_t ns)
{
    if (ns > 0)
        contended += ns;
}

int64_t cv_blocking_contended_ns(void)
{
    return contended;
}
