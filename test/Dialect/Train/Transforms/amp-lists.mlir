// Editing the op lists: pass options, a JSON file that replaces the
// defaults, Grappler's environment variables (below the options), conflicts.

// Defaults: MatMul fp16, Relu (clear) follows it, Sigmoid (infer) stays fp32.
// RUN: amp-opt %s --auto-mixed-precision="summary=false" | FileCheck %s --check-prefix=DEFAULT
// DEFAULT: MatMul({{.*}} -> tensor<4x4xf16>
// DEFAULT: Relu({{.*}} -> tensor<4x4xf16>
// DEFAULT: Sigmoid({{.*}} -> tensor<4x4xf32>

// allow-remove: nothing is converted.
// RUN: amp-opt %s --auto-mixed-precision="summary=false allow-remove=MatMul" | FileCheck %s --check-prefix=NOALLOW
// NOALLOW-NOT: Cast
// NOALLOW-NOT: f16

// infer-remove + allow-add (with and without the domain prefix).
// RUN: amp-opt %s --auto-mixed-precision="summary=false infer-remove=Sigmoid allow-add=ai.onnx:Sigmoid" | FileCheck %s --check-prefix=ADD
// ADD: MatMul({{.*}} -> tensor<4x4xf16>
// ADD: Relu({{.*}} -> tensor<4x4xf16>
// ADD: Sigmoid({{.*}} -> tensor<4x4xf16>
// ADD-NOT: Cast({{.*}}to = 10

// clear-remove + deny-add: Relu becomes a deny op.
// RUN: amp-opt %s --auto-mixed-precision="summary=false clear-remove=Relu deny-add=Relu" | FileCheck %s --check-prefix=DENYRELU
// DENYRELU: MatMul({{.*}} -> tensor<4x4xf16>
// DENYRELU: Cast({{.*}}to = 1 : i64
// DENYRELU: Relu({{.*}} -> tensor<4x4xf32>

// A JSON list file replaces the defaults: only Relu is listed (allow), so
// the MatMul stays fp32.
// RUN: echo '{"allow": ["Relu"], "deny": [], "infer": ["com.microsoft:Gelu"], "clear": []}' > %t.json
// RUN: amp-opt %s --auto-mixed-precision="summary=false lists=%t.json" | FileCheck %s --check-prefix=JSON
// JSON: MatMul({{.*}} -> tensor<4x4xf32>
// JSON: Cast({{.*}}to = 10 : i64
// JSON: Relu({{.*}} -> tensor<4x4xf16>
// JSON: Sigmoid({{.*}} -> tensor<4x4xf32>

// Options are applied on top of the JSON file.
// RUN: amp-opt %s --auto-mixed-precision="summary=false lists=%t.json allow-add=MatMul" | FileCheck %s --check-prefix=JSONADD
// JSONADD: MatMul({{.*}} -> tensor<4x4xf16>

// Environment variables (Grappler names, comma separated).
// RUN: env TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_CLEARLIST_REMOVE=Relu TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_DENYLIST_ADD=Relu,Foo amp-opt %s --auto-mixed-precision="summary=false" | FileCheck %s --check-prefix=DENYRELU
// RUN: env TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_INFERLIST_REMOVE=Sigmoid TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_ALLOWLIST_ADD=Sigmoid amp-opt %s --auto-mixed-precision="summary=false" | FileCheck %s --check-prefix=ADD
// Legacy names.
// RUN: env TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_GRAYLIST_REMOVE=Sigmoid TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_WHITELIST_ADD=Sigmoid amp-opt %s --auto-mixed-precision="summary=false" | FileCheck %s --check-prefix=ADD
// RUN: env TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_WHITELIST_REMOVE=MatMul amp-opt %s --auto-mixed-precision="summary=false" | FileCheck %s --check-prefix=NOALLOW
// RUN: env TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_CLEARLIST_REMOVE=Relu TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_BLACKLIST_ADD=Relu amp-opt %s --auto-mixed-precision="summary=false" | FileCheck %s --check-prefix=DENYRELU
// Options override the environment: the env adds Relu to deny, the option
// removes it again.
// RUN: env TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_CLEARLIST_REMOVE=Relu TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_DENYLIST_ADD=Relu amp-opt %s --auto-mixed-precision="summary=false deny-remove=Relu clear-add=Relu" | FileCheck %s --check-prefix=DEFAULT

// An op in two lists is an error, from any source.
// RUN: env TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_DENYLIST_ADD=Relu not amp-opt %s --auto-mixed-precision 2>&1 | FileCheck %s --check-prefix=CONFLICT
// RUN: not amp-opt %s --auto-mixed-precision="allow-add=Relu" 2>&1 | FileCheck %s --check-prefix=CONFLICT2
// CONFLICT: error: auto-mixed-precision: op lists have conflicting entries: op ':Relu' is in both the deny list and the clear list
// CONFLICT2: error: auto-mixed-precision: op lists have conflicting entries: op ':Relu' is in both the allow list and the clear list

// Bad inputs.
// RUN: not amp-opt %s --auto-mixed-precision="mode=fp8" 2>&1 | FileCheck %s --check-prefix=BADMODE
// BADMODE: error: auto-mixed-precision: unknown mode 'fp8' (expected fp16 or bf16)
// RUN: echo '{"allow": "MatMul"}' > %t.bad.json
// RUN: not amp-opt %s --auto-mixed-precision="lists=%t.bad.json" 2>&1 | FileCheck %s --check-prefix=BADJSON
// BADJSON: error: auto-mixed-precision: AMP list file '{{.*}}': 'allow' must be an array of strings

module attributes {train.opset_import = [["", 17 : i64]]} {
  train.graph @main(%x: tensor<4x4xf32> {train.name = "x"}) -> (tensor<4x4xf32> {train.name = "out"}) {
    %0 = train.MatMul(%x, %x) {train.name = "mm", train.outputs = ["v0"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = train.Relu(%0) {train.name = "relu", train.outputs = ["v1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %2 = train.Sigmoid(%1) {train.name = "sig", train.outputs = ["v2"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %2 : tensor<4x4xf32>
  }
}

// keep-fp32: node names or regular expressions (full match).
// RUN: amp-opt %s --auto-mixed-precision="summary=false keep-fp32=m. report=%t.keep.json" | FileCheck %s --check-prefix=NOALLOW
// RUN: FileCheck %s --check-prefix=KEEPREPORT < %t.keep.json
// KEEPREPORT:      "name": "mm",
// KEEPREPORT-NEXT: "op_type": "MatMul",
// KEEPREPORT-NEXT: "precision": "fp32",
// KEEPREPORT-NEXT: "reason": "keep-fp32"
// RUN: amp-opt %s --auto-mixed-precision="keep-fp32=relu,other" 2>%t.keep.err | FileCheck %s --check-prefix=KEEP
// RUN: FileCheck %s --check-prefix=KEEPSUM < %t.keep.err
// KEEP: MatMul({{.*}} -> tensor<4x4xf16>
// KEEP: Cast({{.*}}to = 1 : i64
// KEEP: Relu({{.*}} -> tensor<4x4xf32>
// KEEPSUM: Total processable nodes: 2
// RUN: not amp-opt %s --auto-mixed-precision="keep-fp32=(" 2>&1 | FileCheck %s --check-prefix=BADRE
// BADRE: error: auto-mixed-precision: keep-fp32 entry '(' is not a valid regular expression
