//===- AMPPolicy.h - Op lists of the AMP pass -------------------*- C++ -*-===//
//
// Part of amp-mlir. SPDX-License-Identifier: Apache-2.0
//
//===----------------------------------------------------------------------===//
//
// The four op lists of automatic mixed precision (allow, deny, infer, clear),
// their defaults per mode, and the ways users edit them: a JSON file that
// replaces the defaults, Grappler-compatible environment variables and pass
// options. Entries are keyed "domain:op_type"; an entry without a colon names
// an op of the default ONNX domain ("Relu" == ":Relu"; "ai.onnx:" == ":").
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_TRANSFORMS_AMPPOLICY_H
#define AMP_DIALECT_TRAIN_TRANSFORMS_AMPPOLICY_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <optional>
#include <string>

namespace amp::train {

enum class AMPMode { FP16, BF16 };
enum class AMPList { None, Allow, Deny, Infer, Clear };

/// "allow", "deny", "infer", "clear" or "none".
llvm::StringRef getAMPListName(AMPList list);
/// "fp16" / "bf16".
llvm::StringRef getAMPModeName(AMPMode mode);
std::optional<AMPMode> parseAMPMode(llvm::StringRef name);

/// Normalizes a list entry to "domain:op_type" ("Relu" -> ":Relu",
/// "ai.onnx:Relu" -> ":Relu").
std::string normalizeAMPListKey(llvm::StringRef entry);

/// One default list entry with the reason it is there.
struct AMPDefaultEntry {
  const char *key;    ///< "domain:op_type"
  AMPList fp16;       ///< list in fp16 mode (None: not listed)
  AMPList bf16;       ///< list in bf16 mode
  const char *reason; ///< one line, for docs and reports
};
llvm::ArrayRef<AMPDefaultEntry> getDefaultAMPEntries();

/// The four lists. Each maps a normalized key to nothing (a set).
class AMPLists {
public:
  static AMPLists getDefaults(AMPMode mode);
  /// Parses `{"allow": [...], "deny": [...], "infer": [...], "clear": [...]}`
  /// (missing arrays are empty).
  static llvm::Expected<AMPLists> loadJSON(llvm::StringRef path);

  void add(AMPList list, llvm::StringRef entry);
  void remove(AMPList list, llvm::StringRef entry);
  /// Applies TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_{ALLOW,DENY,INFER,CLEAR}LIST
  /// _{ADD,REMOVE} (and the legacy WHITE/BLACK/GRAYLIST names), comma
  /// separated: for each list ADD then REMOVE, new names before legacy ones.
  void applyEnvironment();
  /// The list of an op, or None.
  AMPList classify(llvm::StringRef domain, llvm::StringRef opType) const;
  /// One message per op that is in two or more lists (empty if none).
  llvm::SmallVector<std::string> findConflicts() const;

private:
  llvm::StringMap<char> &get(AMPList list);
  const llvm::StringMap<char> &get(AMPList list) const;
  llvm::StringMap<char> allow, deny, infer, clear;
};

} // namespace amp::train

#endif // AMP_DIALECT_TRAIN_TRANSFORMS_AMPPOLICY_H
