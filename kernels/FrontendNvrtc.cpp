//===- FrontendNvrtc.cpp - the cuDNN frontend's NVRTC calls, refused ------===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The cuDNN frontend's headers (AttentionGraph.cpp) carry an experimental
// engine of their own that compiles CUDA source at run time with NVRTC
// (cudnn_frontend/experimental/sm100_rms_norm_silu_engine.h). Fused
// attention never builds it, but its calls are in the headers' inline code,
// so linking them would make libAmpRuntime need libnvrtc (110 MB, not
// installed with every cuDNN). These definitions, hidden in the library,
// stand in for NVRTC: each fails, so that engine would report it cannot
// compile and nothing else changes. Built only with the frontend
// (kernels/CMakeLists.txt).
//
//===----------------------------------------------------------------------===//

#include <nvrtc.h>

#define AMPRT_NVRTC_REFUSED __attribute__((visibility("hidden")))

extern "C" {

AMPRT_NVRTC_REFUSED nvrtcResult nvrtcCreateProgram(nvrtcProgram *prog,
                                                   const char *, const char *,
                                                   int, const char *const *,
                                                   const char *const *) {
  if (prog)
    *prog = nullptr;
  return NVRTC_ERROR_INTERNAL_ERROR;
}

AMPRT_NVRTC_REFUSED nvrtcResult nvrtcDestroyProgram(nvrtcProgram *prog) {
  if (prog)
    *prog = nullptr;
  return NVRTC_SUCCESS;
}

AMPRT_NVRTC_REFUSED nvrtcResult nvrtcCompileProgram(nvrtcProgram, int,
                                                    const char *const *) {
  return NVRTC_ERROR_INTERNAL_ERROR;
}

AMPRT_NVRTC_REFUSED nvrtcResult nvrtcGetCUBINSize(nvrtcProgram, size_t *size) {
  if (size)
    *size = 0;
  return NVRTC_ERROR_INTERNAL_ERROR;
}

AMPRT_NVRTC_REFUSED nvrtcResult nvrtcGetCUBIN(nvrtcProgram, char *) {
  return NVRTC_ERROR_INTERNAL_ERROR;
}

AMPRT_NVRTC_REFUSED nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram,
                                                       size_t *size) {
  if (size)
    *size = 1;
  return NVRTC_SUCCESS;
}

AMPRT_NVRTC_REFUSED nvrtcResult nvrtcGetProgramLog(nvrtcProgram, char *log) {
  if (log)
    *log = '\0';
  return NVRTC_SUCCESS;
}

} // extern "C"
