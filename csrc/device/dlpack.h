/* DLPack export of a tensor: the managed tensor a consumer takes over
 * (dlpack.h v1.0: legacy DLManagedTensor and DLManagedTensorVersioned),
 * and the dtype codes DLPack and CUDA's __cuda_array_interface__ use.
 *
 * Ownership: an exported managed tensor owns one reference to the tensor's
 * buffer (or to a host copy of its own) and its shape; its deleter drops
 * that reference and frees it. The deleter needs no GIL and runs on any
 * thread, even after the interpreter has finalized. The binding wraps the
 * pointer in a capsule ("dltensor" / "dltensor_versioned") and calls
 * cv_dlpack_delete from the capsule's destructor when nobody consumed it.
 */
#ifndef CV_DEVICE_DLPACK_H
#define CV_DEVICE_DLPACK_H

#include <stdbool.h>

#include "core/status.h"
#include "core/tensor.h"

#define CV_DLPACK_CAPSULE "dltensor"
#define CV_DLPACK_VERSIONED_CAPSULE "dltensor_versioned"
#define CV_DLPACK_MAJOR 1

/* A managed tensor over t (no copy; `copy`: host memory of its own, only
 * for host tensors) on (device_type, device_id); versioned: a
 * DLManagedTensorVersioned, else a legacy DLManagedTensor. */
CvStatus cv_dlpack_export(const CvTensor *t, int device_type, int device_id, bool versioned,
                          bool copy, void **managed);
/* Call the deleter of a managed tensor nobody consumed (NULL-safe). */
void cv_dlpack_delete(void *managed, bool versioned);
/* NumPy's array-interface type string of dtype ("<f4", ...). */
const char *cv_dlpack_typestr(CvDtype dtype);

#endif
