/* The CUDA runtime by dlopen (see cuda.h). */
#include "device/cuda.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/report.h"

#define MAX_CANDIDATES 16

static const char *const default_candidates[] = {"libcudart.so", "libcudart.so.13",
                                                 "libcudart.so.12", "libcudart.so.11.0"};

/* Written by the first cv_cuda_load (before and inside pthread_once), read-only after. */
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t candidates_mu = PTHREAD_MUTEX_INITIALIZER;
static char *candidates[MAX_CANDIDATES];
static int ncandidates = -1; /* -1: not yet given */
static CvCudaApi api;
static CvStatus load_status; /* owned, never freed: the outcome every caller copies */
static char library[512];
static int device_count;

typedef struct {
    const char *name;
    size_t offset;
} Symbol;

#define SYMBOL(field) {"cuda" #field, offsetof(CvCudaApi, field)}
static const Symbol symbols[] = {
    SYMBOL(GetDeviceCount),   SYMBOL(SetDevice),         SYMBOL(GetDevice),
            SYMBOL(HostAlloc),
    SYMBOL(FreeHost),         SYMBOL(Malloc),            SYMBOL(Free),
    SYMBOL(MemcpyAsync),      SYMBOL(StreamCreateWithFlags), SYMBOL(StreamDestroy),
    SYMBOL(StreamSynchronize), SYMBOL(StreamWaitEvent),  SYMBOL(EventCreateWithFlags),
    SYMBOL(EventDestroy),     SYMBOL(EventRecord),       SYMBOL(EventQuery),
    SYMBOL(EventSynchronize), SYMBOL(EventElapsedTime),  SYMBOL(GetErrorName),
    SYMBOL(GetErrorString),   SYMBOL(RuntimeGetVersion), SYMBOL(DriverGetVersion),
};

#ifdef CV_HAVE_CUDA_HEADERS
/* Every entry has the toolkit's prototype (no reference to the symbols is emitted). */
#define CHECK(field)                                                                          \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&cuda##field),                  \
                                                __typeof__(((CvCudaApi *)0)->field)),      \
                   "CvCudaApi." #field " differs from the CUDA toolkit's prototype")
CHECK(GetDeviceCount); CHECK(SetDevice); CHECK(GetDevice); CHECK(HostAlloc); CHECK(FreeHost); CHECK(Malloc);
CHECK(Free); CHECK(MemcpyAsync); CHECK(StreamCreateWithFlags); CHECK(StreamDestroy);
CHECK(StreamSynchronize); CHECK(StreamWaitEvent); CHECK(EventCreateWithFlags);
CHECK(EventDestroy); CHECK(EventRecord); CHECK(EventQuery); CHECK(EventSynchronize);
CHECK(EventElapsedTime); CHECK(GetErrorName); CHECK(GetErrorString);
CHECK(RuntimeGetVersion); CHECK(DriverGetVersion);
#endif

static CvStatus unavailable(const char *fmt, const char *a, const char *b)
{
    char what[1536];
    snprintf(what, sizeof(what), fmt, a, b);
    return cv_error(CV_UNAVAILABLE, "CUDA is not available: %s", what);
}

/* Resolve every symbol of `handle` into api; false (api cleared) with
 * *missing set when one is absent. */
static bool resolve(void *handle, const char **missing)
{
    for (size_t i = 0; i < sizeof(symbols) / sizeof(*symbols); i++) {
        void *fn = dlsym(handle, symbols[i].name);
        if (!fn) {
            *missing = symbols[i].name;
            memset(&api, 0, sizeof(api));
            return false;
        }
        memcpy((char *)&api + symbols[i].offset, &fn, sizeof(fn));
    }
    return true;
}

/* Try each candidate until one loads, has every symbol and sees a device
 * (a CUDA 13 runtime on a driver for CUDA 12 fails where the cu12 runtime
 * of a PyTorch wheel works). The first failure is the one reported. */
static void load(void)
{
    char tried[1024] = "", first_error[512] = "";
    CvStatus first = NULL;
    int n = ncandidates;
    const char *const *names = (const char *const *)candidates;
    if (n < 0) {
        n = (int)(sizeof(default_candidates) / sizeof(*default_candidates));
        names = default_candidates;
    }
    for (int i = 0; i < n; i++) {
        void *handle = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!handle) {
            const char *err = dlerror();
            if (!first_error[0] && err)
                snprintf(first_error, sizeof(first_error), "%s", err);
            size_t used = strlen(tried);
            snprintf(tried + used, sizeof(tried) - used, "%s%s", used ? ", " : "", names[i]);
            continue;
        }
        const char *missing = NULL;
        if (!resolve(handle, &missing)) {
            if (!first)
                first = unavailable("%s has no symbol %s: it is not a CUDA runtime library "
                                    "(libcudart) of CUDA 11 or later",
                                    names[i], missing);
            dlclose(handle);
            continue;
        }
        int count = 0;
        cvCudaError err = api.GetDeviceCount(&count);
        if (err == CV_CUDA_SUCCESS && count > 0) {
            /* Stays loaded for the life of the process (no dlclose): buffers
             * handed to frameworks may be freed at any time, even at exit. */
            snprintf(library, sizeof(library), "%s", names[i]);
            device_count = count;
            cv_status_free(first);
            return;
        }
        if (!first) {
            char text[640];
            if (err != CV_CUDA_SUCCESS)
                snprintf(text, sizeof(text), "cudaGetDeviceCount: %s: %s", api.GetErrorName(err),
                         api.GetErrorString(err));
            else
                snprintf(text, sizeof(text), "no CUDA device found");
            first = unavailable("no usable CUDA device (%s; runtime %s)", text, names[i]);
        }
        /* Not closed: a runtime that initialized may have started threads. */
        memset(&api, 0, sizeof(api));
    }
    load_status = first ? first
                        : unavailable("could not load the CUDA runtime library (tried %s: %s); "
                                      "install the CUDA runtime (pip install "
                                      "nvidia-cuda-runtime-cu12) or set CONVEYOR_CUDART to the path "
                                      "of libcudart.so",
                                      tried, first_error[0] ? first_error : "not found");
}

CvStatus cv_cuda_load(const char *names)
{
    pthread_mutex_lock(&candidates_mu);
    if (ncandidates < 0 && names) { /* one a line */
        int kept = 0;
        for (const char *p = names, *end; *p && kept < MAX_CANDIDATES; p = *end ? end + 1 : end) {
            end = p + strcspn(p, "\n");
            if (end > p && (candidates[kept] = strndup(p, (size_t)(end - p))))
                kept++;
        }
        ncandidates = kept;
    }
    pthread_mutex_unlock(&candidates_mu);
    pthread_once(&load_once, load);
    return load_status ? cv_status_copy(load_status) : CV_STATUS_OK;
}

const CvCudaApi *cv_cuda(void)
{
    return &api;
}

int cv_cuda_device_count(void)
{
    return device_count;
}

const char *cv_cuda_library(void)
{
    return library;
}

/* cuda_info's fields (a report, core/report.h). */
typedef struct {
    const char *library;
    int device_count, runtime_version, driver_version;
} CudaInfo;

#define INFO_FIELD(name, kind) {#name, kind, offsetof(CudaInfo, name)}
static const CvField cuda_info_fields[] = {
    INFO_FIELD(library, CV_FIELD_STRING),      INFO_FIELD(device_count, CV_FIELD_INT),
    INFO_FIELD(runtime_version, CV_FIELD_INT), INFO_FIELD(driver_version, CV_FIELD_INT),
    {NULL, CV_FIELD_INT, 0},
};

CvStatus cv_cuda_report(CvReport *r)
{
    CudaInfo info = {cv_cuda_library(), cv_cuda_device_count(), 0, 0};
    if (info.device_count > 0) {
        cv_cuda()->RuntimeGetVersion(&info.runtime_version);
        cv_cuda()->DriverGetVersion(&info.driver_version);
    }
    cv_report_fields(r, &info, cuda_info_fields);
    return r->failed ? cv_error_nomem() : CV_STATUS_OK;
}

CvStatus cv_cuda_check_device(int index)
{
    CvStatus s = cv_cuda_load(NULL);
    if (s)
        return s;
    if (index < 0 || index >= device_count)
        return cv_error(CV_INVALID_ARGUMENT,
                        "device cuda:%d does not exist: this machine has %d CUDA device%s "
                        "(cuda:0%s%.0d)", index, device_count, device_count == 1 ? "" : "s",
                        device_count > 1 ? " to cuda:" : "", device_count > 1 ? device_count - 1 : 0);
    return CV_STATUS_OK;
}

CvStatus cv_cuda_error(cvCudaError err, const char *what, int index)
{
    return cv_error(err == CV_CUDA_ERROR_MEMORY_ALLOCATION ? CV_RESOURCE_EXHAUSTED : CV_INTERNAL,
                    "%s on cuda:%d failed: %s: %s", what, index, api.GetErrorName(err),
                    api.GetErrorString(err));
}
