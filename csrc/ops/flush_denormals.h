/* TensorFlow runs its CPU kernels with subnormal floats flushed to zero
 * (inputs read as zero, results that would be subnormal stored as zero).
 * Ops that must match it on subnormal values bracket their arithmetic with
 * these: the mode is the calling thread's own (MXCSR on x86-64), set for
 * the op's loop and restored after it; elsewhere they do nothing. */
#ifndef CV_FLUSH_DENORMALS_H
#define CV_FLUSH_DENORMALS_H

#if defined(__x86_64__) || defined(__SSE2__)
#include <xmmintrin.h>
#define CV_FTZ_DAZ 0x8040u /* flush-to-zero and denormals-are-zero */
static inline unsigned cv_flush_denormals_begin(void)
{
    unsigned saved = _mm_getcsr();
    _mm_setcsr(saved | CV_FTZ_DAZ);
    return saved;
}
static inline void cv_flush_denormals_end(unsigned saved) { _mm_setcsr(saved); }
#else
static inline unsigned cv_flush_denormals_begin(void) { return 0; }
static inline void cv_flush_denormals_end(unsigned saved) { (void)saved; }
#endif

#endif
