//===- AmpRunMain.h - amp-run driver ----------------------------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#ifndef AMP_TOOLS_AMP_RUN_AMPRUNMAIN_H
#define AMP_TOOLS_AMP_RUN_AMPRUNMAIN_H

namespace amp {

/// The amp-run driver: trains an ONNX Runtime training-artifact pair (or a
/// lowered program) on the amp runtime, or runs one ONNX graph once
/// (--run). Parses the command line itself; returns the process exit code:
/// 0 on success, 1 on any error (or a --run mismatch).
int ampRunMain(int argc, char **argv);

} // namespace amp

#endif // AMP_TOOLS_AMP_RUN_AMPRUNMAIN_H
