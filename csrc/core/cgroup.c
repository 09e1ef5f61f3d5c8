#include "core/cgroup.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CV_CGROUP_PATH 1024
/* v1 reports "no limit" as a huge page-rounded number; anything above this is none. */
#define CV_CGROUP_UNLIMITED ((int64_t)1 << 62)

/* The process's place in each hierarchy, from /proc/self/cgroup. */
typedef struct {
    bool v2, v1_memory, v1_cpu;
    char v2_path[CV_CGROUP_PATH];
    char memory_path[CV_CGROUP_PATH];
    char cpu_path[CV_CGROUP_PATH];
    char cpu_dir[64]; /* the v1 mount's name: "cpu,cpuacct" or "cpu" */
} Membership;

static const char *prefix(void)
{
    const char *p = getenv("CV_CGROUP_ROOT");
    return p ? p : "";
}

/* The first line of a small file, without its newline; false if unreadable.
 * Kernel files (/proc, /sys/fs/cgroup), never a user's path: plain stdio,
 * not the file-system layer (io/fs.h). */
static bool read_line(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    bool ok = fgets(buf, (int)size, f) != NULL;
    fclose(f);
    if (ok)
        buf[strcspn(buf, "\n")] = '\0';
    return ok;
}

static bool has_controller(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, name, n) == 0)
            return true;
        p += len + (p[len] == ',');
    }
    return false;
}

/* Lines are "id:controllers:path"; "0::path" is the v2 hierarchy. */
static void read_membership(Membership *m)
{
    char path[CV_CGROUP_PATH], line[2 * CV_CGROUP_PATH];
    memset(m, 0, sizeof(*m));
    snprintf(path, sizeof(path), "%s/proc/self/cgroup", prefix());
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        char *controllers = strchr(line, ':');
        char *where = controllers ? strchr(controllers + 1, ':') : NULL;
        if (!where)
            continue;
        *controllers++ = '\0';
        *where++ = '\0';
        if (strcmp(line, "0") == 0 && *controllers == '\0') {
            m->v2 = true;
            snprintf(m->v2_path, sizeof(m->v2_path), "%s", where);
            continue;
        }
        if (has_controller(controllers, "memory")) {
            m->v1_memory = true;
            snprintf(m->memory_path, sizeof(m->memory_path), "%s", where);
        }
        if (has_controller(controllers, "cpu")) {
            m->v1_cpu = true;
            snprintf(m->cpu_path, sizeof(m->cpu_path), "%s", where);
            snprintf(m->cpu_dir, sizeof(m->cpu_dir), "%s", controllers);
        }
    }
    fclose(f);
}

/* Calls read(file path, ctx) for `file` in the cgroup at `path` under the
 * mount `mount`, in each of its ancestors, and at the mount's root. */
typedef void (*LevelReader)(const char *file_path, void *ctx);

static void each_level(const char *mount, const char *path, const char *file, LevelReader read,
                       void *ctx)
{
    char at[CV_CGROUP_PATH], file_path[2 * CV_CGROUP_PATH + 64];
    snprintf(at, sizeof(at), "%s", path);
    for (;;) {
        size_t len = strlen(at);
        while (len > 0 && at[len - 1] == '/')
            at[--len] = '\0';
        snprintf(file_path, sizeof(file_path), "%s/sys/fs/cgroup%s%s/%s", prefix(), mount, at, file);
        read(file_path, ctx);
        if (len == 0)
            break;
        char *slash = strrchr(at, '/');
        if (slash)
            *slash = '\0';
        else
            at[0] = '\0';
    }
}

static void min_bytes(const char *file_path, void *ctx)
{
    int64_t *limit = ctx;
    char buf[64], *end;
    if (!read_line(file_path, buf, sizeof(buf)) || strcmp(buf, "max") == 0)
        return;
    long long v = strtoll(buf, &end, 10);
    if (end == buf || v < 0 || v >= CV_CGROUP_UNLIMITED)
        return;
    if (*limit < 0 || v < *limit)
        *limit = v;
}

int64_t cv_cgroup_memory_limit(void)
{
    Membership m;
    int64_t limit = -1;
    read_membership(&m);
    if (m.v2)
        each_level("", m.v2_path, "memory.max", min_bytes, &limit);
    if (m.v1_memory)
        each_level("/memory", m.memory_path, "memory.limit_in_bytes", min_bytes, &limit);
    return limit;
}

/* ctx: the tightest limit so far in CPUs, -1 for none. */
static void keep_cpus(double *limit, long long quota, long long period)
{
    if (quota <= 0 || period <= 0)
        return;
    double cpus = (double)quota / (double)period;
    if (*limit < 0 || cpus < *limit)
        *limit = cpus;
}

/* v2 cpu.max: "max 100000" or "150000 100000". */
static void min_cpu_v2(const char *file_path, void *ctx)
{
    char buf[64];
    long long quota, period;
    if (read_line(file_path, buf, sizeof(buf)) && sscanf(buf, "%lld %lld", &quota, &period) == 2)
        keep_cpus(ctx, quota, period);
}

/* v1: cpu.cfs_quota_us (-1: none) beside cpu.cfs_period_us. */
static void min_cpu_v1(const char *file_path, void *ctx)
{
    char buf[64], period_path[2 * CV_CGROUP_PATH + 64];
    if (!read_line(file_path, buf, sizeof(buf)))
        return;
    long long quota = strtoll(buf, NULL, 10);
    snprintf(period_path, sizeof(period_path), "%s", file_path);
    char *slash = strrchr(period_path, '/');
    if (!slash)
        return;
    snprintf(slash + 1, sizeof(period_path) - (size_t)(slash + 1 - period_path), "cpu.cfs_period_us");
    long long period = 100000; /* the kernel's default */
    if (read_line(period_path, buf, sizeof(buf)))
        period = strtoll(buf, NULL, 10);
    keep_cpus(ctx, quota, period);
}

double cv_cgroup_cpu_limit(void)
{
    Membership m;
    double limit = -1;
    read_membership(&m);
    if (m.v2)
        each_level("", m.v2_path, "cpu.max", min_cpu_v2, &limit);
    if (m.v1_cpu) {
        /* The v1 cpu mount is named after its controllers ("cpu,cpuacct"),
         * often with a "cpu" alias: try both. */
        char mount[80];
        snprintf(mount, sizeof(mount), "/%s", m.cpu_dir);
        each_level(mount, m.cpu_path, "cpu.cfs_quota_us", min_cpu_v1, &limit);
        if (strcmp(m.cpu_dir, "cpu") != 0)
            each_level("/cpu", m.cpu_path, "cpu.cfs_quota_us", min_cpu_v1, &limit);
    }
    return limit;
}
