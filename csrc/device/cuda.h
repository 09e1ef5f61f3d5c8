/* The CUDA runtime, loaded at run time.
 *
 * conveyor never links against CUDA: the package builds and imports on
 * machines without it. The first device pipeline calls cv_cuda_load(),
 * which dlopen()s libcudart once per process (pthread_once) and resolves
 * the few functions below into a table. Everything after that calls
 * through cv_cuda(). The declarations are our own (the runtime's C ABI for
 * these calls has not changed since CUDA 10); when setup.py finds the
 * toolkit's headers (CV_HAVE_CUDA_HEADERS), the toolkit's types are used
 * and cuda.c checks every entry against its prototype at compile time.
 *
 * Thread-safety: the table is written once, inside pthread_once, and read
 * only afterwards. The runtime's current device is per thread: a thread
 * calls cv_cuda()->SetDevice before its first call for a device.
 */
#ifndef CV_DEVICE_CUDA_H
#define CV_DEVICE_CUDA_H

#include <stddef.h>

#include "core/status.h"

#ifdef CV_HAVE_CUDA_HEADERS /* the toolkit's types: cuda.c checks the table against its prototypes */
#include <cuda_runtime_api.h>
typedef cudaError_t cvCudaError;
typedef cudaStream_t cvCudaStream;
typedef cudaEvent_t cvCudaEvent;
typedef enum cudaMemcpyKind cvCudaMemcpyKind;
#else /* the same ABI, declared here */
typedef int cvCudaError;
typedef struct CUstream_st *cvCudaStream;
typedef struct CUevent_st *cvCudaEvent;
typedef int cvCudaMemcpyKind;
#endif

/* The runtime's values (macros: they compare with the toolkit's enums). */
#define CV_CUDA_SUCCESS 0
#define CV_CUDA_ERROR_MEMORY_ALLOCATION 2
#define CV_CUDA_ERROR_NOT_READY 600
#define CV_CUDA_MEMCPY_HOST_TO_DEVICE 1
#define CV_CUDA_MEMCPY_DEVICE_TO_HOST 2
#define CV_CUDA_STREAM_NON_BLOCKING 1u
#define CV_CUDA_EVENT_DISABLE_TIMING 2u
/* The stream handles the runtime reserves (cudaStreamLegacy, cudaStreamPerThread). */
#define CV_CUDA_STREAM_LEGACY ((cvCudaStream)0x1)
#define CV_CUDA_STREAM_PER_THREAD ((cvCudaStream)0x2)

typedef struct CvCudaApi {
    cvCudaError (*GetDeviceCount)(int *count);
    cvCudaError (*SetDevice)(int device);
    cvCudaError (*GetDevice)(int *device);
    cvCudaError (*HostAlloc)(void **ptr, size_t size, unsigned int flags);
    cvCudaError (*FreeHost)(void *ptr);
    cvCudaError (*Malloc)(void **ptr, size_t size);
    cvCudaError (*Free)(void *ptr);
    cvCudaError (*MemcpyAsync)(void *dst, const void *src, size_t n, cvCudaMemcpyKind kind, cvCudaStream s);
    cvCudaError (*StreamCreateWithFlags)(cvCudaStream *s, unsigned int flags);
    cvCudaError (*StreamDestroy)(cvCudaStream s);
    cvCudaError (*StreamSynchronize)(cvCudaStream s);
    cvCudaError (*StreamWaitEvent)(cvCudaStream s, cvCudaEvent e, unsigned int flags);
    cvCudaError (*EventCreateWithFlags)(cvCudaEvent *e, unsigned int flags);
    cvCudaError (*EventDestroy)(cvCudaEvent e);
    cvCudaError (*EventRecord)(cvCudaEvent e, cvCudaStream s);
    cvCudaError (*EventQuery)(cvCudaEvent e);
    cvCudaError (*EventSynchronize)(cvCudaEvent e);
    cvCudaError (*EventElapsedTime)(float *ms, cvCudaEvent start, cvCudaEvent end);
    const char *(*GetErrorName)(cvCudaError err);
    const char *(*GetErrorString)(cvCudaError err);
    cvCudaError (*RuntimeGetVersion)(int *version);
    cvCudaError (*DriverGetVersion)(int *version);
} CvCudaApi;

/* Load the runtime (first call only; later calls return the first one's
 * outcome). `candidates`: library paths or sonames to try in order, one
 * a line, NULL for the default list (libcudart.so, .so.13, .so.12, .so.11.0); the
 * first call copies them. Then count the devices. UNAVAILABLE, naming what
 * is missing: no library ("could not load the CUDA runtime: tried ..."),
 * a symbol ("<library> has no cudaMemcpyAsync"), no usable device (the
 * runtime's own error, e.g. no driver). Thread-safe. */
CvStatus cv_cuda_load(const char *candidates);
/* The table; only after cv_cuda_load returned OK. */
const CvCudaApi *cv_cuda(void);
/* Devices found by the load (0 when it failed), and what was loaded. */
int cv_cuda_device_count(void);
const char *cv_cuda_library(void);
/* {library (null before a load), device_count, runtime_version,
 * driver_version} as a report (core/report.h). */
struct CvReport;
CvStatus cv_cuda_report(struct CvReport *r);
/* UNAVAILABLE/INVALID_ARGUMENT unless device `index` exists (loading first). */
CvStatus cv_cuda_check_device(int index);
/* A failed call as a status: "<what>: cudaErrorX: <text> (on cuda:<index>)". */
CvStatus cv_cuda_error(cvCudaError err, const char *what, int index);

#endif
