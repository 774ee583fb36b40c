// Loading a program: the main file, its imports (transitively), and the
// global tables of definitions.
#include "compiler/sema/program.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <set>

#include "compiler/parse/parser.h"
#include "compiler/sema/types.h"

namespace posc::sema {

namespace fs = std::filesystem;

std::vector<std::string> defaultStdlibDirs() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("POSC_STDLIB")) {
    std::string s = env;
    size_t start = 0;
    while (start <= s.size()) {
      size_t end = s.find(':', start);
      if (end == std::string::npos) end = s.size();
      if (end > start) dirs.push_back(s.substr(start, end - start));
      start = end + 1;
    }
  }
#ifdef POSC_STDLIB_DIR
  dirs.push_back(POSC_STDLIB_DIR);
#endif
  return dirs;
}

namespace {

struct Loader {
  std::vector<std::string> stdlib_dirs;
  SourceManager& sources;
  DiagnosticEngine& diags;
  Program program;
  std::set<std::string> loaded;  // canonical paths
  const std::string* main_text = nullptr;  // the main file's text, when not read from disk

  std::string canonical(const fs::path& p) {
    std::error_code ec;
    fs::path c = fs::weakly_canonical(p, ec);
    return ec ? p.string() : c.string();
  }

  // Paths as shown in diagnostics: relative to the working folder when inside
  // it, so messages (and golden files) do not depend on where posc lives.
  static std::string display(const fs::path& p) {
    std::error_code ec;
    fs::path rel = fs::proximate(p, fs::current_path(ec), ec);
    if (ec || rel.empty() || *rel.begin() == "..") return p.lexically_normal().string();
    return rel.string();
  }

  // Module names available in a folder, for suggestions.
  void collectNames(const fs::path& dir, std::vector<std::string>& out) {
    std::error_code ec;
    for (auto& entry : fs::directory_iterator(dir, ec))
      if (entry.path().extension() == ".pos") out.push_back(entry.path().stem().string());
  }

  bool load(const std::string& path, SourceRange imported_at) {
    std::string key = canonical(path);
    if (loaded.count(key)) return true;
    loaded.insert(key);
    std::optional<int32_t> id;
    if (main_text && !imported_at.valid()) id = sources.add(path, *main_text);
    else id = sources.load(path);
    if (!id) {
      if (imported_at.valid())
        diags.error(imported_at, fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
      else
        diags.error({}, fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
      return false;
    }
    std::optional<ast::File> file = parse::parseFile(*id, sources, diags);
    if (!file) return false;
    auto module = std::make_unique<Module>();
    module->path = path;
    module->file = std::move(*file);
    Module* m = module.get();
    program.modules.push_back(std::move(module));

    bool ok = true;
    fs::path here = fs::path(path).parent_path();
    for (const ast::Import& imp : m->file.imports) {
      fs::path rel;
      for (const ast::Name& n : imp.path) rel /= n.text;
      rel += ".pos";
      std::vector<fs::path> candidates{here / rel};
      for (const std::string& d : stdlib_dirs) candidates.push_back(fs::path(d) / rel);
      std::optional<fs::path> found;
      for (const fs::path& c : candidates) {
        std::error_code ec;
        // A file never imports itself: `import rope` inside examples/rope.pos means the stdlib's.
        if (fs::is_regular_file(c, ec) && canonical(c) != key) { found = c; break; }
      }
      if (!found) {
        Diagnostic& d = diags.error(imp.range, fmt::format("unknown module '{}'", imp.dotted()));
        std::vector<std::string> names;
        collectNames(here / rel.parent_path(), names);
        for (const std::string& dir : stdlib_dirs) collectNames(fs::path(dir) / rel.parent_path(), names);
        suggest(d, imp.path.back().text, names);
        std::string where = (here.empty() ? fs::path(".") : here).string();
        for (const std::string& dir : stdlib_dirs) where += ", " + display(dir);
        d.hint = fmt::format("modules are .pos files; looked for '{}' in {}", rel.string(), where);
        ok = false;
        continue;
      }
      ok = load(display(*found), imp.range) && ok;
    }
    for (const ast::Component& c : m->file.components) {
      define(program.components, c, "component");
      checkDeclaration(c);
    }
    for (const ast::Experiment& e : m->file.experiments) define(program.experiments, e, "experiment");
    return ok;
  }

  // Parameter types and names of a component, checked where it is declared
  // (so `posc check` of a library module finds them even if nothing uses it).
  void checkDeclaration(const ast::Component& c) {
    std::set<std::string> names;
    for (const ast::ComponentParam& p : c.params) {
      const auto& types = componentTypes();
      if (std::find(types.begin(), types.end(), p.type.text) == types.end()) {
        Diagnostic& d = diags.error(p.type.range, fmt::format("unknown parameter type '{}'", p.type.text));
        suggest(d, p.type.text, types);
        d.hint = "the types are int, real, bool, text, channel, kinds, pairs, dist, values, heads and any";
      }
      if (!names.insert(p.name.text).second)
        diags.error(p.name.range, fmt::format("parameter '{}' is declared twice", p.name.text));
    }
  }

  template <typename T>
  void define(std::map<std::string, const T*>& table, const T& def, const char* what) {
    auto [it, inserted] = table.emplace(def.name.text, &def);
    if (!inserted) {
      Diagnostic& d = diags.error(def.name.range, fmt::format("{} '{}' is defined twice", what, def.name.text));
      d.notes.push_back({it->second->name.range, "first defined here"});
    }
  }
};

}  // namespace

std::optional<Program> loadProgram(const std::string& path, const std::vector<std::string>& stdlib_dirs,
                                   SourceManager& sources, DiagnosticEngine& diags, const std::string* text) {
  Loader loader{stdlib_dirs, sources, diags, {}, {}, text};
  int before = diags.errorCount();
  bool ok = loader.load(path, {});
  if (!ok || loader.program.modules.empty() || diags.errorCount() > before) return std::nullopt;
  return std::move(loader.program);
}

}  // namespace posc::sema
