// RUN: amp-opt %s --split-input-file --convert-train-to-runtime=schedule=false | FileCheck %s

// A weight's 16-bit copy read by a forward and a backward product far
// apart: the backward one gets a fresh cast of the weight (which no call
// writes), so the copy is not kept alive in between.
// CHECK-LABEL: func.func @main
// CHECK: amprt.call "cast"(%arg1, %[[W1:.*]]) {{.*}}node = "w_cast"
// CHECK-NEXT: amprt.call "matmul"({{.*}}%[[W1]],
// CHECK-COUNT-10: amprt.call "neg"
// CHECK-NEXT: amprt.call "cast"(%arg1, %[[W2:.*]]) {{.*}}node = "w_cast"
// CHECK-NEXT: amprt.call "matmul"({{.*}}%[[W2]],
// CHECK-NOT: amprt.call "cast"
module {
  train.graph @main(%x: tensor<4x4xf16> {train.name = "x"}, %w: tensor<4x4xf32> {train.name = "w"}, %a: tensor<4x4xf32> {train.name = "a"}) -> (tensor<4x4xf16> {train.name = "y1"}, tensor<4x4xf32> {train.name = "n"}, tensor<4x4xf16> {train.name = "y2"}) {
    %w16 = Cast(%w) {to = 10 : i64, train.name = "w_cast", train.outputs = ["w16"]} : (tensor<4x4xf32>) -> tensor<4x4xf16>
    %y1 = MatMul(%x, %w16) {train.name = "fwd", train.outputs = ["y1"]} : (tensor<4x4xf16>, tensor<4x4xf16>) -> tensor<4x4xf16>
    %n0 = Neg(%a) {train.name = "n0", train.outputs = ["n0"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n1 = Neg(%n0) {train.name = "n1", train.outputs = ["n1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n2 = Neg(%n1) {train.name = "n2", train.outputs = ["n2"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n3 = Neg(%n2) {train.name = "n3", train.outputs = ["n3"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n4 = Neg(%n3) {train.name = "n4", train.outputs = ["n4"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n5 = Neg(%n4) {train.name = "n5", train.outputs = ["n5"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n6 = Neg(%n5) {train.name = "n6", train.outputs = ["n6"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n7 = Neg(%n6) {train.name = "n7", train.outputs = ["n7"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n8 = Neg(%n7) {train.name = "n8", train.outputs = ["n8"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n9 = Neg(%n8) {train.name = "n9", train.outputs = ["n9"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %y2 = MatMul(%y1, %w16) {train.name = "bwd", train.outputs = ["y2"]} : (tensor<4x4xf16>, tensor<4x4xf16>) -> tensor<4x4xf16>
    train.return %y1, %n9, %y2 : tensor<4x4xf16>, tensor<4x4xf32>, tensor<4x4xf16>
  }
}

// -----

// A widening cast of a temporary (an f16 product cast to f32 for f32
// GEMMs, read again much later): the late reader casts the f16 value
// again, which stays alive instead of its f32 copy (half the bytes).
// CHECK-LABEL: func.func @main
// CHECK: amprt.call "matmul"({{.*}}, %[[P:[^)]*]])
// CHECK-NEXT: amprt.call "cast"(%[[P]], %[[C1:[^)]*]]) {{.*}}node = "widen"
// CHECK-NEXT: amprt.call "matmul"(%[[C1]], %arg1,
// CHECK-COUNT-10: amprt.call "neg"
// CHECK-NEXT: amprt.call "cast"(%[[P]], %[[C2:[^)]*]]) {{.*}}node = "widen"
// CHECK-NEXT: amprt.call "matmul"(%[[C2]], %arg1,
module {
  train.graph @main(%x: tensor<4x4xf16> {train.name = "x"}, %w: tensor<4x4xf32> {train.name = "w"}, %a: tensor<4x4xf32> {train.name = "a"}) -> (tensor<4x4xf32> {train.name = "r"}, tensor<4x4xf32> {train.name = "n"}, tensor<4x4xf32> {train.name = "s"}) {
    %p = MatMul(%x, %x) {train.name = "mm", train.outputs = ["p"]} : (tensor<4x4xf16>, tensor<4x4xf16>) -> tensor<4x4xf16>
    %c = Cast(%p) {to = 1 : i64, train.name = "widen", train.outputs = ["c"]} : (tensor<4x4xf16>) -> tensor<4x4xf32>
    %r = MatMul(%c, %w) {train.name = "r", train.outputs = ["r"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %n0 = Neg(%a) {train.name = "n0", train.outputs = ["n0"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n1 = Neg(%n0) {train.name = "n1", train.outputs = ["n1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n2 = Neg(%n1) {train.name = "n2", train.outputs = ["n2"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n3 = Neg(%n2) {train.name = "n3", train.outputs = ["n3"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n4 = Neg(%n3) {train.name = "n4", train.outputs = ["n4"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n5 = Neg(%n4) {train.name = "n5", train.outputs = ["n5"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n6 = Neg(%n5) {train.name = "n6", train.outputs = ["n6"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n7 = Neg(%n6) {train.name = "n7", train.outputs = ["n7"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n8 = Neg(%n7) {train.name = "n8", train.outputs = ["n8"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n9 = Neg(%n8) {train.name = "n9", train.outputs = ["n9"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %s = MatMul(%c, %w) {train.name = "s", train.outputs = ["s"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    train.return %r, %n9, %s : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
  }
}

// -----

// Kept as one copy: a narrowing cast of a temporary that is not read
// again (keeping the f32 source alive would cost more than the f16 copy),
// and a copy that is a graph output.
// CHECK-LABEL: func.func @main
// CHECK-COUNT-2: amprt.call "cast"
// CHECK-NOT: amprt.call "cast"
module {
  train.graph @main(%x: tensor<4x4xf32> {train.name = "x"}, %w: tensor<4x4xf32> {train.name = "w"}, %a: tensor<4x4xf32> {train.name = "a"}) -> (tensor<4x4xf16> {train.name = "w16"}, tensor<4x4xf16> {train.name = "y1"}, tensor<4x4xf32> {train.name = "n"}, tensor<4x4xf16> {train.name = "y2"}) {
    %r = MatMul(%x, %a) {train.name = "r", train.outputs = ["r"]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %r16 = Cast(%r) {to = 10 : i64, train.name = "narrow", train.outputs = ["r16"]} : (tensor<4x4xf32>) -> tensor<4x4xf16>
    %w16 = Cast(%w) {to = 10 : i64, train.name = "w_cast", train.outputs = ["w16"]} : (tensor<4x4xf32>) -> tensor<4x4xf16>
    %y1 = MatMul(%r16, %w16) {train.name = "fwd", train.outputs = ["y1"]} : (tensor<4x4xf16>, tensor<4x4xf16>) -> tensor<4x4xf16>
    %n0 = Neg(%a) {train.name = "n0", train.outputs = ["n0"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n1 = Neg(%n0) {train.name = "n1", train.outputs = ["n1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n2 = Neg(%n1) {train.name = "n2", train.outputs = ["n2"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n3 = Neg(%n2) {train.name = "n3", train.outputs = ["n3"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n4 = Neg(%n3) {train.name = "n4", train.outputs = ["n4"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n5 = Neg(%n4) {train.name = "n5", train.outputs = ["n5"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n6 = Neg(%n5) {train.name = "n6", train.outputs = ["n6"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n7 = Neg(%n6) {train.name = "n7", train.outputs = ["n7"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n8 = Neg(%n7) {train.name = "n8", train.outputs = ["n8"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n9 = Neg(%n8) {train.name = "n9", train.outputs = ["n9"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %y2 = MatMul(%r16, %w16) {train.name = "bwd", train.outputs = ["y2"]} : (tensor<4x4xf16>, tensor<4x4xf16>) -> tensor<4x4xf16>
    train.return %w16, %y1, %n9, %y2 : tensor<4x4xf16>, tensor<4x4xf16>, tensor<4x4xf32>, tensor<4x4xf16>
  }
}

// -----

// A transpose of a graph input read far apart (amprt-channels-last's twin
// of an image batch, read by a convolution and by its weight gradient) is
// as exact to repeat: the late reader gets a fresh transpose of the input.
// CHECK-LABEL: func.func @main
// CHECK: amprt.call "transpose"(%arg0, %[[T1:[^)]*]]) {{.*}}node = "t"
// CHECK-NEXT: amprt.call "relu"(%[[T1]],
// CHECK-COUNT-10: amprt.call "neg"
// CHECK-NEXT: amprt.call "transpose"(%arg0, %[[T2:[^)]*]]) {{.*}}node = "t"
// CHECK-NEXT: amprt.call "relu"(%[[T2]],
module {
  train.graph @main(%x: tensor<2x3x4x4xf16> {train.name = "x"}, %a: tensor<4x4xf32> {train.name = "a"}) -> (tensor<2x4x4x3xf16> {train.name = "r1"}, tensor<4x4xf32> {train.name = "n"}, tensor<2x4x4x3xf16> {train.name = "r2"}) {
    %t = Transpose(%x) {perm = array<i64: 0, 2, 3, 1>, train.name = "t", train.outputs = ["t"]} : (tensor<2x3x4x4xf16>) -> tensor<2x4x4x3xf16>
    %r1 = Relu(%t) {train.name = "r1", train.outputs = ["r1"]} : (tensor<2x4x4x3xf16>) -> tensor<2x4x4x3xf16>
    %n0 = Neg(%a) {train.name = "n0", train.outputs = ["n0"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n1 = Neg(%n0) {train.name = "n1", train.outputs = ["n1"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n2 = Neg(%n1) {train.name = "n2", train.outputs = ["n2"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n3 = Neg(%n2) {train.name = "n3", train.outputs = ["n3"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n4 = Neg(%n3) {train.name = "n4", train.outputs = ["n4"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n5 = Neg(%n4) {train.name = "n5", train.outputs = ["n5"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n6 = Neg(%n5) {train.name = "n6", train.outputs = ["n6"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n7 = Neg(%n6) {train.name = "n7", train.outputs = ["n7"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n8 = Neg(%n7) {train.name = "n8", train.outputs = ["n8"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %n9 = Neg(%n8) {train.name = "n9", train.outputs = ["n9"]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %r2 = Relu(%t) {train.name = "r2", train.outputs = ["r2"]} : (tensor<2x4x4x3xf16>) -> tensor<2x4x4x3xf16>
    train.return %r1, %n9, %r2 : tensor<2x4x4x3xf16>, tensor<4x4xf32>, tensor<2x4x4x3xf16>
  }
}
