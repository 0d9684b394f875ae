//===- amp-run.cpp - train ONNX training artifacts, or run a graph once ---===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//

#include "amp/Tools/amp-run/AmpRunMain.h"

int main(int argc, char **argv) { return amp::ampRunMain(argc, argv); }
