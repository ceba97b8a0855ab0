// RUN: kiln-opt %s | kiln-opt | FileCheck %s

// CHECK-LABEL: func.func @ops
func.func @ops(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: graph.exp %{{.*}} : tensor<4x8xf32>
  %0 = graph.exp %x : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
