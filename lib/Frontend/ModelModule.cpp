//===- ModelModule.cpp - A model's module and @forward --------------------===//
//
// Part of Kiln. The module a model becomes: `@forward` with its arguments
// and results (the loss, outputs, buffer updates), the model block checked
// statement by statement (a failed statement's names poisoned), the train
// block, and the entry points that load a model file.
//
//===----------------------------------------------------------------------===//

#include "ModelEmitter.h"

#include "kiln/Dialect/Graph/IR/GraphOps.h"
#include "kiln/Frontend/Frontend.h"
#include "kiln/Frontend/Parser.h"
#include "kiln/Support/UserFile.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir;
using namespace kiln;
using namespace kiln::frontend;
using llvm::SMLoc;
using llvm::StringRef;

//===----------------------------------------------------------------------===//
// The module
//===----------------------------------------------------------------------===//

OwningOpRef<ModuleOp> ModelEmitter::emit(const ast::Module &parsed) {
  file = &parsed;
  fileName = StringAttr::get(
      &context,
      sourceMgr.getMemoryBuffer(parsed.bufferId)->getBufferIdentifier());
  if (!parsed.model) {
    (void)error(
        SMLoc::getFromPointer(
            sourceMgr.getMemoryBuffer(parsed.bufferId)->getBufferStart()),
        "the file has no 'model NAME { ... }' block");
    return nullptr;
  }

  Location modelLoc = getLoc(parsed.model->name.loc);
  module = ModuleOp::create(modelLoc);
  module->getOperation()->setAttr(
      graph::GraphDialect::kModelAttr,
      builder.getStringAttr(parsed.model->name.name));

  builder.setInsertionPointToEnd(module->getBody());
  forward = func::FuncOp::create(builder, modelLoc, "forward",
                                 builder.getFunctionType({}, {}));
  builder.setInsertionPointToEnd(forward.addEntryBlock());

  if (failed(emitModel(*parsed.model)) || failed(finishForward()))
    return nullptr;

  SmallVector<NamedAttribute> dimAttrs;
  for (const auto &[name, value] : dimList)
    dimAttrs.push_back(
        builder.getNamedAttr(name, builder.getI64IntegerAttr(value)));
  module->getOperation()->setAttr(graph::GraphDialect::kDimsAttr,
                                  builder.getDictionaryAttr(dimAttrs));
  if (batchDim)
    module->getOperation()->setAttr(graph::GraphDialect::kBatchDimAttr,
                                    builder.getStringAttr(*batchDim));

  if (parsed.train) {
    FailureOr<DictionaryAttr> train = emitTrainBlock(*parsed.train);
    if (failed(train))
      return nullptr;
    module->getOperation()->setAttr(graph::GraphDialect::kTrainAttr, *train);
  }
  return std::move(module);
}

LogicalResult ModelEmitter::emitModel(const ast::ModelDecl &model) {
  scopes.emplace_back();
  // Every statement is checked, so that one run reports each error of the
  // file (up to the diagnostics' limit); a failed statement's names are
  // poisoned so that their uses do not report again.
  bool anyFailed = false;
  for (const ast::StmtPtr &stmt : model.body) {
    if (succeeded(emitStatement(*stmt, /*inModel=*/true)))
      continue;
    anyFailed = true;
    poisonDefinitions(*stmt);
  }
  if (anyFailed)
    return failure();
  if (!batchDim && dims.count("B"))
    batchDim = StringRef("B");
  for (auto [dimOverride, used] : llvm::zip(dimOverrides, dimOverrideUsed)) {
    if (used)
      continue;
    std::vector<StringRef> names;
    for (const auto &dim : dimList)
      names.push_back(dim.first);
    return error(model.name.loc,
                 "model '" + model.name.name + "' has no dim '" +
                     dimOverride.name + "' to set" +
                     didYouMean(dimOverride.name, names) +
                     " (its dims: " + llvm::join(names, ", ") + ")");
  }
  return success();
}

LogicalResult ModelEmitter::finishForward() {
  // The loss is result 0, then the outputs in the order they were declared.
  std::stable_partition(results.begin(), results.end(),
                        [](const Result &result) { return result.isLoss; });
  SmallVector<Type> resultTypes;
  SmallVector<Value> resultValues;
  SmallVector<Attribute> resultAttrs;
  for (const Result &result : results) {
    resultTypes.push_back(result.value.getType());
    resultValues.push_back(result.value);
    SmallVector<NamedAttribute> attrs = {
        builder.getNamedAttr(result.isUpdate ? graph::GraphDialect::kUpdateAttr
                                             : graph::GraphDialect::kOutputAttr,
                             builder.getStringAttr(result.name))};
    if (result.isLoss)
      attrs.push_back(builder.getNamedAttr(graph::GraphDialect::kLossAttr,
                                           builder.getUnitAttr()));
    resultAttrs.push_back(builder.getDictionaryAttr(attrs));
  }
  Location loc = forward.getLoc();
  if (!results.empty())
    loc = getLoc(results.front().loc);
  func::ReturnOp::create(builder, loc, resultValues);

  SmallVector<Type> argTypes(forward.getArgumentTypes());
  forward.setFunctionType(builder.getFunctionType(argTypes, resultTypes));
  forward.setAllArgAttrs(argAttrs);
  forward.setAllResultAttrs(resultAttrs);
  return success();
}

Value ModelEmitter::addForwardArgument(Type type, SMLoc loc, StringRef attrName,
                                       StringRef name, DictionaryAttr init) {
  Value argument = forward.getBody().front().addArgument(type, getLoc(loc));
  SmallVector<NamedAttribute> attrs = {
      builder.getNamedAttr(attrName, builder.getStringAttr(name))};
  if (init)
    attrs.push_back(builder.getNamedAttr(graph::GraphDialect::kInitAttr, init));
  argAttrs.push_back(builder.getDictionaryAttr(attrs));
  // Keep the function type in step with the block, so that the IR stays
  // printable while it is built.
  forward.setFunctionType(builder.getFunctionType(
      forward.getBody().front().getArgumentTypes(), {}));
  return argument;
}

//===----------------------------------------------------------------------===//
// Failed statements and buffer updates
//===----------------------------------------------------------------------===//

/// Appends the names `stmt` binds in its scope (a loop: its variable and
/// what its body binds).
static void collectDefinitions(const ast::Stmt &stmt,
                               SmallVectorImpl<StringRef> &names) {
  if (auto *assign = dyn_cast<ast::AssignStmt>(&stmt))
    for (const ast::LocatedName &target : assign->getTargets())
      names.push_back(target.name);
  else if (auto *input = dyn_cast<ast::InputStmt>(&stmt))
    names.push_back(input->getName().name);
  else if (auto *param = dyn_cast<ast::ParamStmt>(&stmt))
    names.push_back(param->getName().name);
  else if (auto *dim = dyn_cast<ast::DimStmt>(&stmt))
    for (const ast::DimBinding &binding : dim->getBindings())
      names.push_back(binding.name.name);
  else if (auto *loop = dyn_cast<ast::ForStmt>(&stmt)) {
    names.push_back(loop->getVar().name);
    for (const ast::StmtPtr &inner : loop->getBody())
      collectDefinitions(*inner, names);
  }
}

void ModelEmitter::poisonDefinitions(const ast::Stmt &stmt) {
  SmallVector<StringRef> names;
  collectDefinitions(stmt, names);
  for (StringRef name : names) {
    // A dim of the statement that was defined stays defined.
    if (isa<ast::DimStmt>(stmt) && dims.count(name))
      continue;
    scopes.back().erase(name);
    poisoned.insert(name);
  }
}

LogicalResult ModelEmitter::updateBuffer(const EvalValue &buffer, Value next,
                                         SMLoc loc, StringRef role) {
  auto it = bufferNames.find(buffer.tensor);
  if (it == bufferNames.end()) {
    (void)error(loc, role +
                         " must be a buffer ('buffer NAME : TYPE = INIT'), "
                         "which the train step updates; got " +
                         buffer.describe());
    noteOrigin(buffer, role);
    return failure();
  }
  const BufferInfo &info = it->second;
  auto [previous, inserted] = bufferUpdates.try_emplace(info.name, loc);
  if (!inserted) {
    (void)error(loc, "buffer '" + info.name + "' is updated twice");
    note(previous->second, "first updated here");
    return failure();
  }
  Result update;
  update.name = info.name;
  update.value = next;
  update.isLoss = false;
  update.loc = loc;
  update.isUpdate = true;
  results.push_back(update);
  return success();
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

OwningOpRef<ModuleOp> kiln::frontend::loadModel(llvm::SourceMgr &sourceMgr,
                                                MLIRContext &context,
                                                llvm::raw_ostream &errs,
                                                ArrayRef<DimOverride> dims) {
  context.getOrLoadDialect<graph::GraphDialect>();
  context.getOrLoadDialect<func::FuncDialect>();
  Diagnostics diagnostics(sourceMgr, errs);
  unsigned bufferId = sourceMgr.getMainFileID();
  std::unique_ptr<ast::Module> parsed =
      parseModule(sourceMgr, bufferId, diagnostics);
  if (!parsed || diagnostics.hasErrors())
    return nullptr;

  ModelEmitter emitter(sourceMgr, context, diagnostics, dims);
  OwningOpRef<ModuleOp> module = emitter.emit(*parsed);
  if (!module || diagnostics.hasErrors())
    return nullptr;

  // The emitter checks shapes itself; the verifier is the safety net, and
  // what it finds is a compiler bug reported at the model line.
  SourceMgrDiagnosticHandler handler(sourceMgr, &context, errs);
  if (failed(verify(*module)))
    return nullptr;
  return module;
}

OwningOpRef<ModuleOp>
kiln::frontend::loadModelFile(StringRef path, llvm::SourceMgr &sourceMgr,
                              MLIRContext &context, llvm::raw_ostream &errs,
                              ArrayRef<DimOverride> dims) {
  auto buffer = readUserFile(path);
  if (!buffer) {
    errs << path << ": error: " << llvm::toString(buffer.takeError()) << "\n";
    return nullptr;
  }
  sourceMgr.AddNewSourceBuffer(std::move(*buffer), SMLoc());
  return loadModel(sourceMgr, context, errs, dims);
}
