// Text dumps of the AST: canonical expression text and the indented tree.
#include <fmt/format.h>

#include "compiler/ast/ast.h"

namespace posc::ast {

std::string Import::dotted() const {
  std::string s;
  for (const Name& n : path) s += (s.empty() ? "" : ".") + n.text;
  return s;
}

namespace {

int precedence(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::Conditional: return 1;
    case Expr::Kind::Binary:
      if (e.op == "||") return 2;
      if (e.op == "&&") return 3;
      if (e.op == "+" || e.op == "-") return 6;
      if (e.op == "*" || e.op == "/" || e.op == "%") return 7;
      if (e.op == "^") return 9;
      return 4;  // comparisons
    case Expr::Kind::Range: return 5;
    case Expr::Kind::Unary: return 8;
    default: return 10;
  }
}

std::string wrap(const Expr& child, int parent_precedence) {
  std::string s = dumpExpr(child);
  return precedence(child) < parent_precedence ? "(" + s + ")" : s;
}

std::string args(const std::vector<Arg>& list) {
  std::string s;
  for (const Arg& a : list) {
    if (!s.empty()) s += ", ";
    if (!a.name.text.empty()) s += a.name.text + " = ";
    s += dumpExpr(*a.value);
  }
  return s;
}

}  // namespace

std::string dumpExpr(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::Number: return e.text;
    case Expr::Kind::String: return "\"" + e.text + "\"";
    case Expr::Kind::Name: return e.name.text;
    case Expr::Kind::List:
    case Expr::Kind::Tuple: {
      std::string s;
      for (const ExprPtr& x : e.elements) s += (s.empty() ? "" : ", ") + dumpExpr(*x);
      return e.kind == Expr::Kind::List ? "[" + s + "]" : "(" + s + ")";
    }
    case Expr::Kind::Range:
      return wrap(*e.lhs, 6) + ".." + wrap(*e.rhs, 6);
    case Expr::Kind::Unary: return e.op + wrap(*e.lhs, 8);
    case Expr::Kind::Binary: {
      int p = precedence(e);
      // Left-associative except '^'; comparisons do not chain.
      int left = e.op == "^" ? p + 1 : p;
      int right = e.op == "^" ? p : p + 1;
      return wrap(*e.lhs, left) + " " + e.op + " " + wrap(*e.rhs, right);
    }
    case Expr::Kind::Conditional:
      return wrap(*e.elements[0], 2) + " ? " + dumpExpr(*e.elements[1]) + " : " +
             dumpExpr(*e.elements[2]);
    case Expr::Kind::Call: return e.name.text + "(" + args(e.args) + ")";
    case Expr::Kind::Index: return wrap(*e.lhs, 10) + "[" + dumpExpr(*e.rhs) + "]";
    case Expr::Kind::Member: return wrap(*e.lhs, 10) + "." + e.name.text;
  }
  return "?";
}

namespace {

struct Dumper {
  const SourceManager& sources;
  std::string out;

  std::string at(const SourceRange& r) const {
    if (!r.valid()) return "<no location>";
    const SourceFile& f = sources.file(r.file);
    LineColumn b = f.lineColumn(r.begin);
    LineColumn e = f.lineColumn(r.end);
    return fmt::format("{}:{}-{}:{}", b.line, b.column, e.line, e.column);
  }

  void line(int depth, const std::string& text) {
    out += std::string(static_cast<size_t>(depth) * 2, ' ') + text + "\n";
  }

  void item(int depth, const Item& it) {
    switch (it.kind) {
      case Item::Kind::Assign: {
        line(depth, fmt::format("Assign {} = {}  @{}", it.name.text, dumpExpr(*it.value), at(it.range)));
        break;
      }
      case Item::Kind::Use:
        line(depth, fmt::format("Use {}({})  @{}", it.name.text, args(it.args), at(it.range)));
        break;
      case Item::Kind::Param:
        line(depth, fmt::format("Param {}{}{} = {}  @{}", it.name.text,
                                it.index.text.empty() ? "" : "[" + it.index.text + "]",
                                it.size ? "[" + dumpExpr(*it.size) + "]" : "",
                                dumpExpr(*it.value), at(it.range)));
        break;
      case Item::Kind::Call:
        line(depth, fmt::format("Call {}({})  @{}", it.name.text, args(it.args), at(it.range)));
        break;
    }
    for (const Option& o : it.options)
      line(depth + 1, fmt::format("Option {} = {}", o.name.text, dumpExpr(*o.value)));
  }

  void section(int depth, const Section& s) {
    line(depth, fmt::format("Section {}{}  @{}", s.name.text, s.append ? " +=" : "", at(s.range)));
    for (const Item& it : s.items) item(depth + 1, it);
  }
};

}  // namespace

std::string dump(const File& file, const SourceManager& sources) {
  Dumper d{sources, {}};
  d.line(0, fmt::format("File {}", sources.file(file.source).path()));
  for (const Import& i : file.imports) d.line(1, fmt::format("Import {}  @{}", i.dotted(), d.at(i.range)));
  for (const Component& c : file.components) {
    d.line(1, fmt::format("Component {}  @{}", c.name.text, d.at(c.range)));
    for (const ComponentParam& p : c.params)
      d.line(2, fmt::format("Param {}: {}{}", p.name.text, p.type.text,
                            p.default_value ? " = " + dumpExpr(*p.default_value) : ""));
    for (const Item& it : c.body) d.item(2, it);
  }
  for (const Experiment& e : file.experiments) {
    d.line(1, fmt::format("Experiment {}{}  @{}", e.name.text,
                          e.base.text.empty() ? "" : " extends " + e.base.text, d.at(e.range)));
    for (const Section& s : e.sections) d.section(2, s);
    for (const Preset& p : e.presets) {
      d.line(2, fmt::format("Preset {}  @{}", p.name.text, d.at(p.range)));
      for (const Section& s : p.sections) d.section(3, s);
    }
  }
  for (const Analysis& a : file.analyses) {
    d.line(1, fmt::format("Analysis {}  @{}", a.name.text, d.at(a.range)));
    for (const Item& it : a.items) d.item(2, it);
  }
  return d.out;
}

}  // namespace posc::ast
