/* The device stage's dataset (prefetch_to_device.c). */
#ifndef CV_DEVICE_PREFETCH_TO_DEVICE_H
#define CV_DEVICE_PREFETCH_TO_DEVICE_H

#include "core/builder.h"
#include "core/dataset.h"
#include "device/cuda.h"
#include "device/device.h"

/* Elements of `input` (borrowed) copied to device (kind, index), up to
 * buffer_size ahead (CV_AUTOTUNE; 0: copied in next(), copy_to_device). For
 * CUDA the runtime must load and the device exist (cuda.h's errors). */
CvStatus cv_prefetch_to_device_dataset(CvDataset *input, CvDeviceKind kind, int index,
                                       int64_t buffer_size, CvDataset **out);
/* The same as a constructor (core/builder.h): prefetch_to_device(input,
 * kind, index, buffer_size, memory=None), kind 0 the host, 1 CUDA. */
extern const CvBuilder cv_prefetch_to_device_builder;

#endif
