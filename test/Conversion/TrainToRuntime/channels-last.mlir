// RUN: amp-opt %s --split-input-file --amprt-channels-last="channels-last=16bit" | FileCheck %s

// An f16 convolution whose output is a graph output, read by a relu and
// by a broadcast add of a rank-3 bias (ONNX aligns [5, 1, 1] to the right:
// no permutation keeps that, so the add stays channels first). The image
// and the weight go in through transposes; the output is transposed back
// where the add reads it, which the return then has too; the relu runs
// channels last and its output goes back before the return.
// CHECK-LABEL: func.func @edges
// CHECK-SAME: (%[[X:[^:]*]]: memref<2x3x4x4xf16>{{.*}}, %[[W:[^:]*]]: memref<5x3x3x3xf16>{{.*}}, %[[B:[^:]*]]: memref<5x1x1xf16>
// CHECK: amprt.call "transpose"(%[[X]], %[[XL:[^)]*]]) {{.*}}perm = array<i64: 0, 2, 3, 1>} : memref<2x3x4x4xf16>, memref<2x4x4x3xf16>
// CHECK: amprt.call "transpose"(%[[W]], %[[WL:[^)]*]]) {{.*}}perm = array<i64: 0, 2, 3, 1>} : memref<5x3x3x3xf16>, memref<5x3x3x3xf16>
// CHECK: amprt.call "conv"(%[[XL]], %[[WL]], %[[YL:[^)]*]]) {{.*}}layout = 1 : i64{{.*}} : memref<2x4x4x3xf16>, memref<5x3x3x3xf16>, memref<2x4x4x5xf16>
// CHECK: amprt.call "relu"(%[[YL]], %{{[^)]*}}) {{.*}} : memref<2x4x4x5xf16>, memref<2x4x4x5xf16>
// CHECK: amprt.call "transpose"(%[[YL]], %[[Y:[^)]*]]) {{.*}}perm = array<i64: 0, 3, 1, 2>} : memref<2x4x4x5xf16>, memref<2x5x4x4xf16>
// CHECK: amprt.call "add"(%[[Y]], %[[B]], %{{[^)]*}}) {{.*}} : memref<2x5x4x4xf16>, memref<5x1x1xf16>, memref<2x5x4x4xf16>
// CHECK: amprt.call "transpose"(%{{[^,]*}}, %[[R:[^)]*]]) {{.*}}perm = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT: return %[[Y]], %[[R]],
module {
  func.func @edges(%x: memref<2x3x4x4xf16> {amprt.name = "x"}, %w: memref<5x3x3x3xf16> {amprt.name = "w"}, %b: memref<5x1x1xf16> {amprt.name = "b"}) -> (memref<2x5x4x4xf16> {amprt.name = "y"}, memref<2x5x4x4xf16> {amprt.name = "r"}, memref<2x5x4x4xf16> {amprt.name = "s"}) attributes {amprt.unplanned} {
    %y = memref.alloc() {amprt.role = "activations", amprt.value = "y"} : memref<2x5x4x4xf16>
    %r = memref.alloc() {amprt.role = "activations", amprt.value = "r"} : memref<2x5x4x4xf16>
    %s = memref.alloc() {amprt.role = "activations", amprt.value = "s"} : memref<2x5x4x4xf16>
    amprt.call "conv"(%x, %w, %y) {counts = array<i64: 1, 1, 0, 1>, node = "c", win = {ceil_mode = 0 : i64, count_include_pad = 0 : i64, dilations = array<i64: 1, 1>, group = 1 : i64, kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, spatial_rank = 2 : i64, strides = array<i64: 1, 1>}} : memref<2x3x4x4xf16>, memref<5x3x3x3xf16>, memref<2x5x4x4xf16>
    amprt.call "relu"(%y, %r) {counts = array<i64: 1, 1>, node = "r"} : memref<2x5x4x4xf16>, memref<2x5x4x4xf16>
    amprt.call "add"(%y, %b, %s) {counts = array<i64: 1, 1, 1>, node = "s"} : memref<2x5x4x4xf16>, memref<5x1x1xf16>, memref<2x5x4x4xf16>
    return %y, %r, %s : memref<2x5x4x4xf16>, memref<2x5x4x4xf16>, memref<2x5x4x4xf16>
  }
}

// -----

// A max pool whose indices the graph returns keeps ONNX's indices (flat
// into the channels-first x): it stays channels first, so its input comes
// back from the convolution's region through a transpose. A reduction
// keeping its dims joins the region with its axes moved; a global average
// pool becomes an average pool over the whole image.
// CHECK-LABEL: func.func @indices_out
// CHECK: amprt.call "conv"({{.*}}layout = 1 : i64
// CHECK: amprt.call "reduce_sum"({{.*}}axes = array<i64: 1, 2>{{.*}} : memref<1x4x4x2xf16>, memref<1x1x1x2xf16>
// CHECK: amprt.call "average_pool"({{.*}}kernel = array<i64: 4, 4>, layout = 1 : i64{{.*}} : memref<1x4x4x2xf16>, memref<1x1x1x2xf16>
// CHECK: amprt.call "transpose"({{.*}}perm = array<i64: 0, 3, 1, 2>} : memref<1x4x4x2xf16>, memref<1x2x4x4xf16>
// CHECK: amprt.call "max_pool"({{.*}} : memref<1x2x4x4xf16>, memref<1x2x2x2xf16>, memref<1x2x2x2xi64>
// CHECK-NOT: layout = 1
module {
  func.func @indices_out(%x: memref<1x1x4x4xf16> {amprt.name = "x"}, %w: memref<2x1x1x1xf16> {amprt.name = "w"}) -> (memref<1x2x2x2xf16> {amprt.name = "p"}, memref<1x2x2x2xi64> {amprt.name = "i"}, memref<1x2x1x1xf16> {amprt.name = "s"}, memref<1x2x1x1xf16> {amprt.name = "g"}) attributes {amprt.unplanned} {
    %y = memref.alloc() {amprt.role = "activations"} : memref<1x2x4x4xf16>
    %s = memref.alloc() {amprt.role = "activations"} : memref<1x2x1x1xf16>
    %g = memref.alloc() {amprt.role = "activations"} : memref<1x2x1x1xf16>
    %p = memref.alloc() {amprt.role = "activations"} : memref<1x2x2x2xf16>
    %i = memref.alloc() {amprt.role = "activations"} : memref<1x2x2x2xi64>
    amprt.call "conv"(%x, %w, %y) {counts = array<i64: 1, 1, 0, 1>, node = "c", win = {ceil_mode = 0 : i64, count_include_pad = 0 : i64, dilations = array<i64: 1, 1>, group = 1 : i64, kernel = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, spatial_rank = 2 : i64, strides = array<i64: 1, 1>}} : memref<1x1x4x4xf16>, memref<2x1x1x1xf16>, memref<1x2x4x4xf16>
    amprt.call "reduce_sum"(%y, %s) {axes = array<i64: 2, -1>, counts = array<i64: 1, 1>, keepdims = 1 : i32, naxes = 2 : i64, node = "s", noop_with_empty_axes = 0 : i32} : memref<1x2x4x4xf16>, memref<1x2x1x1xf16>
    amprt.call "global_average_pool"(%y, %g) {counts = array<i64: 1, 1>, node = "g"} : memref<1x2x4x4xf16>, memref<1x2x1x1xf16>
    amprt.call "max_pool"(%y, %p, %i) {counts = array<i64: 1, 1, 1>, node = "m", win = {ceil_mode = 0 : i64, count_include_pad = 0 : i64, dilations = array<i64: 1, 1>, group = 1 : i64, kernel = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, spatial_rank = 2 : i64, strides = array<i64: 2, 2>}} : memref<1x2x4x4xf16>, memref<1x2x2x2xf16>, memref<1x2x2x2xi64>
    return %p, %i, %s, %g : memref<1x2x2x2xf16>, memref<1x2x2x2xi64>, memref<1x2x1x1xf16>, memref<1x2x1x1xf16>
  }
}

// -----

// An f32 convolution is no 16-bit one: with 16bit nothing moves.
// CHECK-LABEL: func.func @f32
// CHECK-NOT: layout
// CHECK-NOT: "transpose"
// CHECK: return
module {
  func.func @f32(%x: memref<2x3x4x4xf32> {amprt.name = "x"}, %w: memref<5x3x3x3xf32> {amprt.name = "w"}) -> (memref<2x5x2x2xf32> {amprt.name = "y"}) attributes {amprt.unplanned} {
    %y = memref.alloc() {amprt.role = "activations"} : memref<2x5x2x2xf32>
    amprt.call "conv"(%x, %w, %y) {counts = array<i64: 1, 1, 0, 1>, node = "c", win = {ceil_mode = 0 : i64, count_include_pad = 0 : i64, dilations = array<i64: 1, 1>, group = 1 : i64, kernel = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, spatial_rank = 2 : i64, strides = array<i64: 1, 1>}} : memref<2x3x4x4xf32>, memref<5x3x3x3xf32>, memref<2x5x2x2xf32>
    return %y : memref<2x5x2x2xf32>
  }
}

// -----

// A value written in place on one side and read on the other would need a
// second copy, which would write a buffer twice (the unplanned form's
// planning counts on one write of a buffer no call writes in place): the
// region stays channels first.
// CHECK-LABEL: func.func @in_place
// CHECK-NOT: layout = 1
// CHECK-NOT: "transpose"
// CHECK: return
module {
  func.func @in_place(%x: memref<2x3x4x4xf16> {amprt.name = "x"}, %w: memref<5x3x3x3xf16> {amprt.name = "w"}, %s: memref<f16> {amprt.name = "s"}, %b: memref<5x1x1xf16> {amprt.name = "b"}) -> (memref<2x80xf16> {amprt.name = "f"}, memref<2x5x4x4xf16> {amprt.name = "z"}) attributes {amprt.unplanned} {
    %y = memref.alloc() {amprt.role = "activations", amprt.value = "y"} : memref<2x5x4x4xf16>
    %f = memref.alloc() {amprt.role = "activations", amprt.value = "f"} : memref<2x80xf16>
    %z = memref.alloc() {amprt.role = "activations", amprt.value = "z"} : memref<2x5x4x4xf16>
    amprt.call "conv"(%x, %w, %y) {counts = array<i64: 1, 1, 0, 1>, node = "c", win = {ceil_mode = 0 : i64, count_include_pad = 0 : i64, dilations = array<i64: 1, 1>, group = 1 : i64, kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, spatial_rank = 2 : i64, strides = array<i64: 1, 1>}} : memref<2x3x4x4xf16>, memref<5x3x3x3xf16>, memref<2x5x4x4xf16>
    amprt.call "reshape"(%y, %f) {counts = array<i64: 1, 1>, node = "flat"} : memref<2x5x4x4xf16>, memref<2x80xf16>
    amprt.call "add"(%y, %s, %y) {counts = array<i64: 1, 1, 1>, node = "inplace"} : memref<2x5x4x4xf16>, memref<f16>, memref<2x5x4x4xf16>
    amprt.call "add"(%y, %b, %z) {counts = array<i64: 1, 1, 1>, node = "bias"} : memref<2x5x4x4xf16>, memref<5x1x1xf16>, memref<2x5x4x4xf16>
    return %f, %z : memref<2x80xf16>, memref<2x5x4x4xf16>
  }
}

// -----

// A graph input read twice by one call (a weight squared, as weight
// normalization does) is read, not written: it goes in through one
// transpose and nothing copies back into it.
// CHECK-LABEL: func.func @square
// CHECK-SAME: %[[W:[^:]*]]: memref<5x3x3x3xf16>
// CHECK: amprt.call "transpose"(%[[W]], %[[WL:[^)]*]])
// CHECK: amprt.call "mul"(%[[WL]], %[[WL]],
// CHECK-NOT: amprt.call "transpose"({{[^,]*}}, %[[W]])
// CHECK: return
module {
  func.func @square(%x: memref<2x3x4x4xf16> {amprt.name = "x"}, %w: memref<5x3x3x3xf16> {amprt.name = "w"}) -> (memref<2x5x4x4xf16> {amprt.name = "y"}, memref<5x3x3x3xf16> {amprt.name = "w2"}) attributes {amprt.unplanned} {
    %y = memref.alloc() {amprt.role = "activations"} : memref<2x5x4x4xf16>
    %w2 = memref.alloc() {amprt.role = "activations"} : memref<5x3x3x3xf16>
    amprt.call "mul"(%w, %w, %w2) {counts = array<i64: 1, 1, 1>, node = "sq"} : memref<5x3x3x3xf16>, memref<5x3x3x3xf16>, memref<5x3x3x3xf16>
    amprt.call "conv"(%x, %w, %y) {counts = array<i64: 1, 1, 0, 1>, node = "c", win = {ceil_mode = 0 : i64, count_include_pad = 0 : i64, dilations = array<i64: 1, 1>, group = 1 : i64, kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, spatial_rank = 2 : i64, strides = array<i64: 1, 1>}} : memref<2x3x4x4xf16>, memref<5x3x3x3xf16>, memref<2x5x4x4xf16>
    return %y, %w2 : memref<2x5x4x4xf16>, memref<5x3x3x3xf16>
  }
}

// -----

// A reduction over the channels and a spatial dim would add in another
// order channels last: it stays out, and its input comes back to it.
// CHECK-LABEL: func.func @channel_sum
// CHECK: amprt.call "conv"({{.*}}layout = 1 : i64
// CHECK: amprt.call "transpose"({{.*}}perm = array<i64: 0, 3, 1, 2>}
// CHECK: amprt.call "reduce_sum"({{.*}}axes = array<i64: 1, 2>{{.*}} : memref<2x5x4x4xf16>, memref<2x1x1x4xf16>
module {
  func.func @channel_sum(%x: memref<2x3x4x4xf16> {amprt.name = "x"}, %w: memref<5x3x3x3xf16> {amprt.name = "w"}) -> (memref<2x5x4x4xf16> {amprt.name = "r"}, memref<2x1x1x4xf16> {amprt.name = "s"}) attributes {amprt.unplanned} {
    %y = memref.alloc() {amprt.role = "activations"} : memref<2x5x4x4xf16>
    %r = memref.alloc() {amprt.role = "activations"} : memref<2x5x4x4xf16>
    %s = memref.alloc() {amprt.role = "activations"} : memref<2x1x1x4xf16>
    amprt.call "conv"(%x, %w, %y) {counts = array<i64: 1, 1, 0, 1>, node = "c", win = {ceil_mode = 0 : i64, count_include_pad = 0 : i64, dilations = array<i64: 1, 1>, group = 1 : i64, kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, spatial_rank = 2 : i64, strides = array<i64: 1, 1>}} : memref<2x3x4x4xf16>, memref<5x3x3x3xf16>, memref<2x5x4x4xf16>
    amprt.call "relu"(%y, %r) {counts = array<i64: 1, 1>, node = "r"} : memref<2x5x4x4xf16>, memref<2x5x4x4xf16>
    amprt.call "reduce_sum"(%y, %s) {axes = array<i64: 1, 2>, counts = array<i64: 1, 1>, keepdims = 1 : i32, naxes = 2 : i64, node = "s", noop_with_empty_axes = 0 : i32} : memref<2x5x4x4xf16>, memref<2x1x1x4xf16>
    return %r, %s : memref<2x5x4x4xf16>, memref<2x1x1x4xf16>
  }
}
