// The abstract syntax tree of a .pos file.
//
// Built from ANTLR's parse tree by parse/ast_builder (the parse tree is then
// dropped). Nodes are plain structs with a kind tag and a SourceRange; names
// are not resolved here, that is sema's job. Ownership is by unique_ptr
// from the parent; the tree is immutable after building.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/source/source.h"

namespace posc::ast {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Name {
  std::string text;
  SourceRange range;
};

struct Arg {
  Name name;  // empty text: positional
  ExprPtr value;
  SourceRange range;
};

struct Expr {
  enum class Kind {
    Number,     // number
    String,     // text
    Name,       // name
    List,       // [elements...]
    Tuple,      // (a, b, ...)  (a single parenthesised expression is not a tuple)
    Range,      // lhs .. rhs
    Unary,      // op lhs         op: "-", "+", "!"
    Binary,     // lhs op rhs     op: + - * / % ^ < <= > >= == != && ||
    Conditional,// cond ? lhs : rhs  (elements = {cond, lhs, rhs})
    Call,       // name(args)
    Index,      // lhs[rhs]
    Member,     // lhs.name
  } kind;
  SourceRange range;
  double number = 0;
  std::string text;  // number's spelling, string contents
  Name name;         // Name, Call callee, Member field
  std::string op;
  ExprPtr lhs, rhs;
  std::vector<ExprPtr> elements;
  std::vector<Arg> args;
  // Nodes on the longest path from here to a leaf. The parser refuses
  // expressions deeper than a limit, so every recursive pass is safe.
  int depth = 1;
};

struct Option {
  Name name;
  ExprPtr value;
};

// One item of a section or component body.
struct Item {
  enum class Kind {
    Assign,  // name = value, options...
    Use,     // use name(args)
    Param,   // param name[index][size] = value, options...
    Call,    // name(args)
  } kind;
  SourceRange range;
  Name name;
  Name index;  // Param: the index variable (usually h); empty if scalar
  ExprPtr size;  // Param: a table's size (`bias[h][32]`, `bias[32]`); null if not a table
  // Param: a third bracket or more (an error in sema; kept to locate it)
  std::vector<ExprPtr> extra_dims;
  ExprPtr value;
  std::vector<Option> options;
  std::vector<Arg> args;
};

struct Section {
  Name name;       // task, model, attention, train, eval
  bool append = false;  // `attention += { ... }`
  SourceRange range;
  std::vector<Item> items;
};

struct Preset {
  Name name;
  SourceRange range;
  std::vector<Section> sections;
};

struct Experiment {
  Name name;
  Name base;  // empty: extends nothing
  SourceRange range;
  std::vector<Section> sections;
  std::vector<Preset> presets;
};

struct ComponentParam {
  Name name;
  Name type;
  ExprPtr default_value;  // may be null: required argument
  SourceRange range;
};

struct Component {
  Name name;
  SourceRange range;
  std::vector<ComponentParam> params;
  std::vector<Item> body;
};

// `analysis NAME { ... }`: items are definitions (`k = 20*cos(2*pi*d/6)`)
// and calls (`aliases(k, over = -200..200)`), run by `posc analyze`.
struct Analysis {
  Name name;
  SourceRange range;
  std::vector<Item> items;
};

struct Import {
  std::vector<Name> path;  // a.b.c
  SourceRange range;
  std::string dotted() const;
};

struct File {
  int32_t source = -1;  // SourceManager id
  std::vector<Import> imports;
  std::vector<Component> components;
  std::vector<Experiment> experiments;
  std::vector<Analysis> analyses;
};

// One input of `posc repl` (grammar rule replLine).
struct ReplLine {
  enum class Kind {
    Command,     // :name args        (name = the command, args)
    Definition,  // name(params) = value, or name = value
    Expression,  // value
  } kind;
  SourceRange range;
  Name name;
  std::vector<Name> params;
  ExprPtr value;
  std::vector<Arg> args;
};

// Stable indented text used by `posc emit ast` and golden tests; ranges are
// printed as line:col-line:col.
std::string dump(const File& file, const SourceManager& sources);
std::string dumpExpr(const Expr& e);  // the expression as canonical source text

// Deep copies (ranges kept), for sema's items built from parts of others.
ExprPtr clone(const Expr& e);
Arg clone(const Arg& a);

}  // namespace posc::ast
