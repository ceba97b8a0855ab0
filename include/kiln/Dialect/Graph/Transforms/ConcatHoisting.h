//===- ConcatHoisting.h - Data movement moved past concats ------*- C++ -*-===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_GRAPH_TRANSFORMS_CONCATHOISTING_H
#define KILN_DIALECT_GRAPH_TRANSFORMS_CONCATHOISTING_H

namespace mlir {
class Block;
} // namespace mlir

namespace kiln::graph {
/// Rewrites, in `block`, each concat whose inputs are all transposes by one
/// permutation (or all reshapes that merge the same dims into the concat
/// axis), each used only by the concat, into the transpose (reshape) of a
/// concat of their inputs, repeatedly. The concat then copies the pieces
/// as they were computed and the data movement after it can fuse into its
/// consumers: the gradients of q, k and v, turned from heads back to rows
/// and joined, become one copy into the head layout and a transpose that
/// the bias-gradient sum reads. Values are unchanged (a permutation of
/// copies).
void hoistDataMovementOverConcats(mlir::Block &block);
} // namespace kiln::graph

#endif // KILN_DIALECT_GRAPH_TRANSFORMS_CONCATHOISTING_H
