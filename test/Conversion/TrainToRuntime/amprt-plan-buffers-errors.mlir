// RUN: amp-opt %s --split-input-file --amprt-plan-buffers --verify-diagnostics --mlir-print-op-on-diagnostic=false
// RUN: amp-opt %s --split-input-file --amprt-fuse --verify-diagnostics --mlir-print-op-on-diagnostic=false

// amprt-fuse and amprt-plan-buffers read functions of the unplanned form
// only (docs/Lowering.md): anything else is an error at the op, and the
// function is left as it was.

module {
  func.func @norole(%x: memref<4xf32>) -> memref<4xf32> attributes {amprt.unplanned} {
    // expected-error @below {{a temporary must be a memref.alloc of static shape, identity layout and int or float elements that a buffer can hold, with amprt.role one of the arena roles}}
    %a = memref.alloc() : memref<4xf32>
    amprt.call "neg"(%x, %a) {counts = array<i64: 1, 1>, node = "n"} : memref<4xf32>, memref<4xf32>
    return %a : memref<4xf32>
  }
}

// -----

module {
  func.func @foreign(%x: memref<4xf32>) -> memref<4xf32> attributes {amprt.unplanned} {
    %a = memref.alloc() {amprt.role = "workspace"} : memref<4xf32>
    // expected-error @below {{op memref.copy in an unplanned lowered function}}
    memref.copy %x, %a : memref<4xf32> to memref<4xf32>
    return %a : memref<4xf32>
  }
}

// -----

module {
  // expected-error @below {{argument 0 is not a memref of static shape, identity layout}}
  func.func @dynamic(%x: memref<?xf32>) attributes {amprt.unplanned} {
    return
  }
}

// -----

module {
  func.func @index(%x: memref<4xf32>) attributes {amprt.unplanned} {
    // expected-error @below {{a temporary must be a memref.alloc of static shape, identity layout and int or float elements that a buffer can hold, with amprt.role one of the arena roles}}
    %a = memref.alloc() {amprt.role = "workspace"} : memref<4xindex>
    return
  }
}

// -----

module {
  func.func @huge(%x: memref<4xf32>) attributes {amprt.unplanned} {
    // expected-error @below {{a temporary must be a memref.alloc of static shape}}
    %a = memref.alloc() {amprt.role = "workspace"} : memref<4611686018427387904x4xf32>
    return
  }
}

// -----

module {
  // expected-error @below {{argument 0 is not a memref of static shape, identity layout}}
  func.func @strided(%x: memref<4xf32, strided<[2]>>) attributes {amprt.unplanned} {
    return
  }
}
