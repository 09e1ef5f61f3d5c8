/* What the Linux cgroups of this process allow: a memory limit and a CPU
 * quota, from cgroup v2 (memory.max, cpu.max) or v1 (memory.limit_in_bytes,
 * cpu.cfs_quota_us / cpu.cfs_period_us), whichever the process is in.
 *
 * The process's cgroup paths come from /proc/self/cgroup; limits are read
 * under /sys/fs/cgroup at that path and at each ancestor (the tightest one
 * applies), and at the mount's root (inside a container the mount is the
 * container's own cgroup). Files are read afresh on every call: callers
 * cache what they need.
 *
 * Test hook: when the environment variable CV_CGROUP_ROOT is set, it is put
 * in front of both paths ($CV_CGROUP_ROOT/proc/self/cgroup,
 * $CV_CGROUP_ROOT/sys/fs/cgroup/...), so tests parse a fake tree of real
 * files.
 */
#ifndef CV_CGROUP_H
#define CV_CGROUP_H

#include <stdint.h>

/* Bytes, or -1 when no cgroup limits memory. */
int64_t cv_cgroup_memory_limit(void);
/* CPUs the quota allows (quota / period, not rounded), or -1 when none. */
double cv_cgroup_cpu_limit(void);

#endif
