//===- Parser.h - Parser of the Kiln model language -------------*- C++ -*-===//
//
// Part of the Kiln project.
//
//===----------------------------------------------------------------------===//
//
// Entry point of the front end's syntax layer: parses a `.kiln` buffer into an
// ast::Module. The language is described in docs/language.md.
//
// The parser is a recursive-descent parser with explicit limits: bracket,
// block and unary-operator nesting deeper than kMaxNestingDepth, and
// expression trees taller than kMaxExpressionHeight, are reported as located
// errors instead of overflowing the stack. After an error it resynchronizes at
// the next statement and keeps going until the Diagnostics error limit.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTEND_PARSER_H
#define KILN_FRONTEND_PARSER_H

#include "kiln/Frontend/AST.h"

#include <memory>

namespace llvm {
class SourceMgr;
} // namespace llvm

namespace kiln {

class Diagnostics;

/// Maximum nesting of brackets, blocks and prefix/power operators.
constexpr unsigned kMaxNestingDepth = 256;
/// Maximum height of an expression tree (long operator chains count).
constexpr unsigned kMaxExpressionHeight = 512;

/// Parses buffer \p bufferId of \p sourceMgr. Returns the module, or null if
/// any error was reported (all errors go to \p diagnostics). The AST refers to
/// the buffer's text, so \p sourceMgr must outlive it.
std::unique_ptr<ast::Module> parseModule(const llvm::SourceMgr &sourceMgr,
                                         unsigned bufferId,
                                         Diagnostics &diagnostics);

} // namespace kiln

#endif // KILN_FRONTEND_PARSER_H
