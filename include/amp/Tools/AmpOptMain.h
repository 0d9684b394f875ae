//===- AmpOptMain.h - amp-opt driver ----------------------------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#ifndef AMP_TOOLS_AMPOPTMAIN_H
#define AMP_TOOLS_AMPOPTMAIN_H

#include "mlir/IR/DialectRegistry.h"

namespace amp {

/// The version string printed by `--version` of every amp tool.
const char *getVersionString();

/// Adds the amp version to `--version` output.
void registerVersionPrinter();

/// The amp-opt driver: mlir-opt's options and behaviour, plus `.onnx` input
/// (imported) and `-o *.onnx` output (exported). Returns the process exit
/// code: 0 on success, 1 on any error (nothing is written then).
int ampOptMain(int argc, char **argv, mlir::DialectRegistry &registry);

} // namespace amp

#endif // AMP_TOOLS_AMPOPTMAIN_H
