//===- HostDevice.h - host and device compilation of the math ---*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// AMPRT_HD marks a function of include/amp/Runtime/Math that the CPU backend
// (lib/Runtime, a host compiler) and the CUDA kernels (kernels/, nvcc) both
// call: __host__ __device__ under nvcc, nothing otherwise. Such a function
// is the one definition of its formula; the two backends round alike
// because they run the same expression (the kernels are compiled with
// -fmad=false, so nvcc contracts nothing into an FMA either).
//
//===----------------------------------------------------------------------===//

#ifndef AMP_RUNTIME_MATH_HOSTDEVICE_H
#define AMP_RUNTIME_MATH_HOSTDEVICE_H

#ifdef __CUDACC__
#define AMPRT_HD __host__ __device__
#else
#define AMPRT_HD
#endif

#endif // AMP_RUNTIME_MATH_HOSTDEVICE_H
