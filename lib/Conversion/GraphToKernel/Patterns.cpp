//===- Patterns.cpp - Every graph-to-kernel pattern family -----------------===//
//
// Part of Kiln. The one list of pattern families: a new family (gradient
// ops, optimizer updates) adds its populate call here, and the pass itself
// does not change.
//
//===----------------------------------------------------------------------===//

#include "kiln/Conversion/GraphToKernel/GraphToKernel.h"

void kiln::populateGraphToKernelPatterns(GraphToKernelPatternSet &patterns) {
  populateElementwiseToKernelPatterns(patterns);
  populateShapeToKernelPatterns(patterns);
  populateReductionToKernelPatterns(patterns);
  populateMatmulToKernelPatterns(patterns);
  populateNNToKernelPatterns(patterns);
  populateAttentionToKernelPatterns(patterns);
  populateRandomToKernelPatterns(patterns);
  populateGradToKernelPatterns(patterns);
  populateLayerNormGradToKernelPatterns(patterns);
  populateAttentionGradToKernelPatterns(patterns);
  populateOptimizerToKernelPatterns(patterns);
  populateFusionToKernelPatterns(patterns);
}
