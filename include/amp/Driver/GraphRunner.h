//===- GraphRunner.h - run one ONNX graph once on given inputs -*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// amp-run --run: an ONNX model's graph imported, its inputs' shapes taken
// from the data, lowered (convert-train-to-runtime) and run once on a
// runtime backend; its outputs written as TensorProto files and/or compared
// with expected ones. The data folder is an ONNX test data set
// (input_<i>.pb, output_<j>.pb, as the ONNX backend tests and
// onnx.backend.test's generate-data lay them out) or holds <name>.pb /
// <name>.npy files named after the graph's inputs and outputs.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DRIVER_GRAPHRUNNER_H
#define AMP_DRIVER_GRAPHRUNNER_H

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace amp::driver {

struct RunOptions {
  std::string model;  ///< the .onnx model
  std::string data;   ///< folder with the inputs (and expected outputs)
  std::string outDir; ///< where to write output_<j>.pb (empty: nowhere)
  std::string device = "cpu";
  std::string dims; ///< extra symbolic dims: name=value,...
  /// Tolerances of the comparison with expected outputs, as the ONNX
  /// backend tests': |got - want| <= atol + rtol * |want| for floating
  /// point (NaN matches NaN), exact for integers and booleans.
  double rtol = 1e-3, atol = 1e-7;
};

/// Runs `options.model` once on the inputs in `options.data`. Prints one
/// line per output to `report` (its comparison when an expected output is
/// there). Returns whether every compared output matched; an error for
/// anything that stops the run (no data for an input, a lowering or kernel
/// failure, an unwritable output).
llvm::Expected<bool> runGraph(const RunOptions &options,
                              llvm::raw_ostream &report);

} // namespace amp::driver

#endif // AMP_DRIVER_GRAPHRUNNER_H
