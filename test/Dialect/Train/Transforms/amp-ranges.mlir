// RUN: rm -rf %t && mkdir -p %t
// RUN: printf '{"format": "amp-ranges", "version": 1, "steps": 4, "loss_scale": 1024, "values": {"h": {"max_abs": 130000.0, "min_nonzero": 0.5, "below_normal": 0.0, "count": 128}, "y": {"max_abs": 20000.0, "min_nonzero": 0.01, "below_normal": 0.0, "count": 128}, "g": {"max_abs": 0.001, "min_nonzero": 1e-12, "below_normal": 0.9, "count": 64, "gradient": true}, "r": {"max_abs": 20000.0, "min_nonzero": 1.0, "below_normal": 0.0, "count": 64}}}' > %t/stats.json
// RUN: amp-opt %s --auto-mixed-precision="ranges=%t/stats.json report=%t/report.json" -o /dev/null 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=JSON < %t/report.json
// RUN: amp-opt %s --auto-mixed-precision="ranges=%t/stats.json range-margin=1 underflow-limit=0.95" -o /dev/null 2>&1 | FileCheck %s --check-prefix=LOOSE
// RUN: amp-opt %s --auto-mixed-precision="ranges=%t/stats.json mode=bf16" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BF16
// RUN: amp-opt %s --auto-mixed-precision -o /dev/null 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not amp-opt %s --auto-mixed-precision="ranges=%t/missing.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: printf '{"format": "amp-ranges", "version": 1, "steps": 4, "loss_scale": 1, "values": {"h": {"max_abs": -1, "min_nonzero": 0, "below_normal": 0}}}' > %t/bad.json
// RUN: not amp-opt %s --auto-mixed-precision="ranges=%t/bad.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: printf '{"nodes": []}' > %t/report-like.json
// RUN: not amp-opt %s --auto-mixed-precision="ranges=%t/report-like.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FORMAT
// RUN: not amp-opt %s --auto-mixed-precision="ranges=%t/stats.json range-margin=0.5" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MARGIN
// RUN: printf '{"format": "amp-ranges", "version": 1, "steps": 4, "loss_scale": 1, "values": {"w2": {"max_abs": 3.001, "min_nonzero": 2.999, "below_normal": 0.0, "count": 4096, "unresolved_fp16": 0.8, "unresolved_bf16": 1.0}, "h": {"max_abs": 1.0, "min_nonzero": 0.1, "below_normal": 0.0, "count": 4096, "unresolved_fp16": 0.0, "unresolved_bf16": 0.6}}}' > %t/merged.json
// RUN: amp-opt %s --auto-mixed-precision="ranges=%t/merged.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MERGED
// RUN: amp-opt %s --auto-mixed-precision="ranges=%t/merged.json resolution-limit=0.9" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MERGEDLOOSE
// RUN: amp-opt %s --auto-mixed-precision="ranges=%t/merged.json mode=bf16" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MERGEDBF16
// RUN: printf '{"format": "amp-ranges", "version": 1, "steps": 4, "loss_scale": 1, "values": {"w2": {"max_abs": 3, "min_nonzero": 3, "below_normal": 0, "unresolved_fp16": 1.5}}}' > %t/bad-resolution.json
// RUN: not amp-opt %s --auto-mixed-precision="ranges=%t/bad-resolution.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADRES
// RUN: not amp-opt %s --auto-mixed-precision="ranges=%t/merged.json resolution-limit=2" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MARGIN

// A policy from measured ranges (docs/Diagnostics.md): fc1's output h
// reached 1.3e5 in fp32, past fp16's 65504 (over the default margin 2), and
// relu reads h (a converted node would read it cast to fp16); fc3's output
// g (a gradient, under a loss scale of 1024) has 90% of its nonzero values
// below fp16's smallest normal. The three stay fp32, with the reason in the
// summary and the report; fc2 (r and y at 2e4) converts.
// CHECK:      Nodes kept fp32 by measured ranges ({{.*}}stats.json): 3
// CHECK-NEXT:   kept: fc1 (MatMul): max |h| 1.3e+05 over 4 steps > 65504 / margin 2
// CHECK-NEXT:   kept: relu (Relu): max |h| 1.3e+05 over 4 steps > 65504 / margin 2
// CHECK-NEXT:   kept: fc3 (MatMul): 90% of nonzero |g| (under loss scale 1024) below fp16's smallest normal 6.1e-05 over 4 steps > 25%
// CHECK:      Tensor Core aligned GEMMs and convolutions (sizes multiples of 8): 0 of 1
// CHECK-NEXT:   misaligned: fc2 (MatMul)

// JSON:      "name": "fc1",
// JSON:      "reason": "measured range: max |h| 1.3e+05 over 4 steps > 65504 / margin 2"
// JSON:      "ranges": {
// JSON-NEXT:   "file": "{{.*}}stats.json",
// JSON-NEXT:   "kept": [
// JSON-NEXT:     {
// JSON-NEXT:       "name": "fc1",
// JSON-NEXT:       "op_type": "MatMul",
// JSON-NEXT:       "why": "max |h| 1.3e+05 over 4 steps > 65504 / margin 2"

// With margin 1 and 90% allowed below the normal range only fc1 and its
// reader stay (1.3e5 is past 65504 at any margin).
// LOOSE:      Nodes kept fp32 by measured ranges ({{.*}}): 2
// LOOSE-NEXT:   kept: fc1 (MatMul)
// LOOSE-NEXT:   kept: relu (Relu)

// bf16 has fp32's range: nothing is kept.
// BF16:       Nodes kept fp32 by measured ranges ({{.*}}): 0

// Without ranges= the summary has no such line.
// NONE-NOT:   measured ranges

// A value whose variation the low type does not resolve (a weight of 3 plus
// changes under half of fp16's spacing there, as a merged adapter is): 80%
// of w2's varying elements in fp16, so fc2, which reads it, stays fp32; in
// bf16 all of w2's and 60% of h's: fc2, and fc1 and relu (h). A limit of
// 0.9 keeps nothing for it.
// MERGED:      Nodes kept fp32 by measured ranges ({{.*}}merged.json): 1
// MERGED-NEXT:   kept: fc2 (MatMul): 80% of the varying elements of w2 within half of fp16's spacing of their mean over 4 steps > 50%: the change is lost to rounding
// MERGEDLOOSE: Nodes kept fp32 by measured ranges ({{.*}}merged.json): 0
// MERGEDBF16:      Nodes kept fp32 by measured ranges ({{.*}}merged.json): 3
// MERGEDBF16-NEXT:   kept: fc1 (MatMul): 60% of the varying elements of h within half of bf16's spacing
// MERGEDBF16-NEXT:   kept: relu (Relu): 60% of the varying elements of h
// MERGEDBF16-NEXT:   kept: fc2 (MatMul): 100% of the varying elements of w2
// BADRES: error: auto-mixed-precision: ranges file '{{.*}}bad-resolution.json': value 'w2': unresolved_fp16 must be in [0, 1]

// Bad files and options: an error at the module with the reason, nothing
// written.
// MISSING: error: auto-mixed-precision: ranges file '{{.*}}missing.json': {{[Nn]}}o such file or directory
// BAD: error: auto-mixed-precision: ranges file '{{.*}}bad.json': value 'h' needs max_abs >= 0, min_nonzero and below_normal in [0, 1]
// FORMAT: error: auto-mixed-precision: ranges file '{{.*}}report-like.json': not an amp-ranges file
// MARGIN: error: auto-mixed-precision: range-margin must be at least 1, underflow-limit and resolution-limit in [0, 1]
module {
  train.graph @main(%x: tensor<4x32xf32> {train.name = "x"}, %w1: tensor<32x32xf32> {train.name = "w1"}, %w2: tensor<32x32xf32> {train.name = "w2"}, %w3: tensor<32x16xf32> {train.name = "w3"}) -> (tensor<4x32xf32> {train.name = "y"}, tensor<4x16xf32> {train.name = "g"}) {
    %h = MatMul(%x, %w1) {train.name = "fc1", train.outputs = ["h"]} : (tensor<4x32xf32>, tensor<32x32xf32>) -> tensor<4x32xf32>
    %r = Relu(%h) {train.name = "relu", train.outputs = ["r"]} : (tensor<4x32xf32>) -> tensor<4x32xf32>
    %y = MatMul(%r, %w2) {train.name = "fc2", train.outputs = ["y"]} : (tensor<4x32xf32>, tensor<32x32xf32>) -> tensor<4x32xf32>
    %g = MatMul(%y, %w3) {train.name = "fc3", train.outputs = ["g"]} : (tensor<4x32xf32>, tensor<32x16xf32>) -> tensor<4x16xf32>
    train.return %y, %g : tensor<4x32xf32>, tensor<4x16xf32>
  }
}
