//===- PassVerification.h - When a compile verifies its IR ------*- C++ -*-===//
//
// Part of Kiln. MLIR's pass manager verifies the whole module after every
// pass; in a compile of GPT-2 small that was a tenth of the time. A
// compile of a user's model (kiln compile, kiln train's cache miss, the
// lowering to LLVM) verifies once, after its last pass, so that a pass
// that breaks the IR still stops the compile with the verifier's message;
// KILN_VERIFY_EACH=1 verifies after every pass again, which says which
// pass broke it. The tests set it, and kiln-opt always verifies each pass.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_SUPPORT_PASSVERIFICATION_H
#define KILN_SUPPORT_PASSVERIFICATION_H

#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Process.h"

namespace kiln {

/// Whether KILN_VERIFY_EACH asks for verification after every pass.
inline bool verifiesEachPass() {
  std::optional<std::string> value =
      llvm::sys::Process::GetEnv("KILN_VERIFY_EACH");
  return value && !value->empty() && *value != "0";
}

/// Runs `pm` on `op`, verifying the IR after every pass (KILN_VERIFY_EACH)
/// or once at the end.
inline mlir::LogicalResult runVerifyingOnce(mlir::PassManager &pm,
                                            mlir::Operation *op) {
  bool each = verifiesEachPass();
  pm.enableVerifier(each);
  if (mlir::failed(pm.run(op)))
    return mlir::failure();
  return each ? mlir::success() : mlir::verify(op);
}

} // namespace kiln

#endif // KILN_SUPPORT_PASSVERIFICATION_H
