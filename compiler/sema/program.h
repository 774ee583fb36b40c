// A program: the main .pos file and everything it imports, parsed, with one
// table of components and one of experiments.
//
// `import decay` looks for decay.pos beside the importing file, then in each
// stdlib folder; `import a.b` for a/b.pos. Definitions are global across the
// program; defining a name twice is an error that points at both places.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/diag/diagnostics.h"

namespace posc::sema {

struct Module {
  std::string path;  // as opened
  ast::File file;
};

struct Program {
  std::vector<std::unique_ptr<Module>> modules;  // modules[0] is the main file
  std::map<std::string, const ast::Component*> components;
  std::map<std::string, const ast::Experiment*> experiments;
  const Module& main() const { return *modules.front(); }
};

// Returns nullopt if the main file cannot be read or parsed, or any import
// fails (all reported). Definitions are collected even when some are bad, so
// later stages can report more than one error. With `text`, the main file's
// content is that text, shown as `path` (which need not exist; its folder
// is searched first for imports), as `posc repl`'s :load does for a component.
std::optional<Program> loadProgram(const std::string& path, const std::vector<std::string>& stdlib_dirs,
                                   SourceManager& sources, DiagnosticEngine& diags,
                                   const std::string* text = nullptr);

// The stdlib folders: $POSC_STDLIB (colon-separated) if set, else the
// folder the project was built from.
std::vector<std::string> defaultStdlibDirs();

}  // namespace posc::sema
