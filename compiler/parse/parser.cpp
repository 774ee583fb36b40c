// The AST builder: walks ANTLR's parse tree once and produces ast::File.
// The parse tree, token stream and ANTLR objects are all dropped on return.
#include "compiler/parse/parser.h"

#include <antlr4-runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "PosLexer.h"
#include "PosParser.h"
#include "compiler/parse/locator.h"
#include "compiler/parse/syntax_errors.h"
#include "compiler/source/encoding.h"

namespace posc::parse {

using grammar::PosParser;

namespace {

class Builder {
 public:
  Builder(const Locator& loc, DiagnosticEngine& diags) : loc_(loc), diags_(diags) {}

  ast::File file(PosParser::FileContext* ctx) {
    ast::File f;
    f.source = loc_.source();
    for (auto* imp : ctx->importDecl()) {
      for (auto* dotted : imp->dottedName()) {
        ast::Import i;
        for (auto* id : dotted->ID()) i.path.push_back(name(id->getSymbol()));
        i.range = loc_.rule(dotted);
        f.imports.push_back(std::move(i));
      }
    }
    for (auto* top : ctx->topDecl()) {
      if (auto* c = top->componentDecl()) f.components.push_back(component(c));
      if (auto* e = top->experimentDecl()) f.experiments.push_back(experiment(e));
      if (auto* a = top->analysisDecl()) {
        ast::Analysis analysis;
        analysis.name = name(a->name);
        analysis.range = loc_.rule(a);
        analysis.items = items(a->block());
        f.analyses.push_back(std::move(analysis));
      }
    }
    return f;
  }

  ast::ExprPtr expr(PosParser::ExprContext* ctx) {
    ast::ExprPtr cond = orExpr(ctx->cond);
    if (ctx->then == nullptr) return cond;
    auto e = make(ast::Expr::Kind::Conditional, ctx);
    e->elements.push_back(std::move(cond));
    e->elements.push_back(expr(ctx->then));
    e->elements.push_back(expr(ctx->otherwise));
    return finish(std::move(e));
  }

  ast::ReplLine replLine(PosParser::ReplLineContext* ctx) {
    ast::ReplLine line;
    line.range = loc_.rule(ctx);
    if (auto* c = dynamic_cast<PosParser::ReplCommandContext*>(ctx)) {
      line.kind = ast::ReplLine::Kind::Command;
      line.name = name(c->command);
      if (c->argList()) line.args = args(c->argList());
    } else if (auto* d = dynamic_cast<PosParser::ReplDefinitionContext*>(ctx)) {
      line.kind = ast::ReplLine::Kind::Definition;
      line.name = name(d->name);
      for (const antlr4::Token* p : d->params) line.params.push_back(name(p));
      line.value = expr(d->expr());
    } else {
      auto* x = dynamic_cast<PosParser::ReplExpressionContext*>(ctx);
      line.kind = ast::ReplLine::Kind::Expression;
      line.value = expr(x->expr());
    }
    return line;
  }

 private:
  const Locator& loc_;
  DiagnosticEngine& diags_;

  bool too_deep_ = false;  // reported once; chains stop growing

  ast::Name name(const antlr4::Token* t) { return {t ? t->getText() : "", loc_.token(t)}; }

  // Sets e's depth from its children's and reports the first expression
  // deeper than the limit (long chains such as 1+1+...+1 are built in loops,
  // so only their depth can bound what later passes recurse through).
  ast::ExprPtr finish(ast::ExprPtr e) {
    int d = 0;
    for (const ast::ExprPtr* c : {&e->lhs, &e->rhs})
      if (*c) d = std::max(d, (*c)->depth);
    for (const ast::ExprPtr& c : e->elements)
      if (c) d = std::max(d, c->depth);
    for (const ast::Arg& a : e->args)
      if (a.value) d = std::max(d, a.value->depth);
    e->depth = d + 1;
    if (e->depth > kMaxExpressionDepth && !too_deep_) {
      too_deep_ = true;
      Diagnostic& diag = diags_.error(e->range, fmt::format("expression more than {} operations deep",
                                                            kMaxExpressionDepth));
      diag.hint = "split it into named parts, or a long sum into several score terms";
    }
    return e;
  }

  ast::ExprPtr make(ast::Expr::Kind kind, antlr4::ParserRuleContext* ctx) {
    auto e = std::make_unique<ast::Expr>();
    e->kind = kind;
    e->range = loc_.rule(ctx);
    return e;
  }

  ast::Component component(PosParser::ComponentDeclContext* ctx) {
    ast::Component c;
    c.name = name(ctx->name);
    c.range = loc_.rule(ctx);
    for (auto* p : ctx->paramDecl()) {
      ast::ComponentParam param;
      param.name = name(p->name);
      param.type = name(p->type);
      if (p->expr()) param.default_value = expr(p->expr());
      param.range = loc_.rule(p);
      c.params.push_back(std::move(param));
    }
    c.body = items(ctx->block());
    return c;
  }

  ast::Experiment experiment(PosParser::ExperimentDeclContext* ctx) {
    ast::Experiment e;
    e.name = name(ctx->name);
    if (ctx->base) e.base = name(ctx->base);
    e.range = loc_.rule(ctx);
    for (auto* item : ctx->experimentItem()) {
      if (auto* s = item->section()) e.sections.push_back(section(s));
      if (auto* p = item->presetDecl()) {
        ast::Preset preset;
        preset.name = name(p->name);
        preset.range = loc_.rule(p);
        for (auto* s : p->section()) preset.sections.push_back(section(s));
        e.presets.push_back(std::move(preset));
      }
    }
    return e;
  }

  ast::Section section(PosParser::SectionContext* ctx) {
    ast::Section s;
    s.name = name(ctx->name);
    s.append = ctx->appendOp != nullptr;
    s.range = loc_.rule(ctx);
    s.items = items(ctx->block());
    return s;
  }

  std::vector<ast::Item> items(PosParser::BlockContext* block) {
    std::vector<ast::Item> out;
    if (block == nullptr) return out;
    for (auto* it : block->item()) {
      ast::Item item;
      item.range = loc_.rule(it);
      if (auto* a = dynamic_cast<PosParser::AssignItemContext*>(it)) {
        item.kind = ast::Item::Kind::Assign;
        item.name = name(a->name);
        item.value = expr(a->expr());
        item.options = options(a->option());
      } else if (auto* u = dynamic_cast<PosParser::UseItemContext*>(it)) {
        item.kind = ast::Item::Kind::Use;
        item.name = name(u->name);
        item.args = args(u->argList());
      } else if (auto* p = dynamic_cast<PosParser::ParamItemContext*>(it)) {
        item.kind = ast::Item::Kind::Param;
        item.name = name(p->name);
        // [h] is the head; any other bracket (the second, or a lone one that
        // is not h) is a table's size.
        for (auto* dim : p->dims) {
          ast::ExprPtr d = expr(dim);
          if (!d) continue;
          const bool head = d->kind == ast::Expr::Kind::Name && d->name.text == "h";
          if (head && item.index.text.empty() && !item.size && item.extra_dims.empty()) item.index = d->name;
          else if (!item.size && item.extra_dims.empty()) item.size = std::move(d);
          else item.extra_dims.push_back(std::move(d));
        }
        item.value = expr(p->value);
        item.options = options(p->option());
      } else if (auto* c = dynamic_cast<PosParser::CallItemContext*>(it)) {
        item.kind = ast::Item::Kind::Call;
        item.name = name(c->name);
        item.args = args(c->argList());
      } else {
        continue;  // an alternative the parser could not complete (already reported)
      }
      if (item.kind != ast::Item::Kind::Use && item.kind != ast::Item::Kind::Call && !item.value)
        continue;
      out.push_back(std::move(item));
    }
    return out;
  }

  std::vector<ast::Option> options(const std::vector<PosParser::OptionContext*>& list) {
    std::vector<ast::Option> out;
    for (auto* o : list) out.push_back({name(o->name), expr(o->expr())});
    return out;
  }

  std::vector<ast::Arg> args(PosParser::ArgListContext* ctx) {
    std::vector<ast::Arg> out;
    if (ctx == nullptr) return out;
    for (auto* a : ctx->arg()) {
      ast::Arg arg;
      if (a->name) arg.name = name(a->name);
      arg.value = expr(a->expr());
      arg.range = loc_.rule(a);
      out.push_back(std::move(arg));
    }
    return out;
  }

  ast::ExprPtr binary(antlr4::ParserRuleContext* ctx, ast::ExprPtr lhs, ast::ExprPtr rhs,
                      std::string op) {
    auto e = std::make_unique<ast::Expr>();
    e->kind = ast::Expr::Kind::Binary;
    e->range = lhs->range.to(rhs->range);
    e->op = std::move(op);
    e->lhs = std::move(lhs);
    e->rhs = std::move(rhs);
    return finish(std::move(e));
  }

  ast::ExprPtr orExpr(PosParser::OrExprContext* ctx) {
    auto parts = ctx->andExpr();
    ast::ExprPtr e = andExpr(parts[0]);
    for (size_t i = 1; i < parts.size() && !too_deep_; ++i) e = binary(ctx, std::move(e), andExpr(parts[i]), "||");
    return e;
  }

  ast::ExprPtr andExpr(PosParser::AndExprContext* ctx) {
    auto parts = ctx->cmpExpr();
    ast::ExprPtr e = cmpExpr(parts[0]);
    for (size_t i = 1; i < parts.size() && !too_deep_; ++i) e = binary(ctx, std::move(e), cmpExpr(parts[i]), "&&");
    return e;
  }

  ast::ExprPtr cmpExpr(PosParser::CmpExprContext* ctx) {
    auto parts = ctx->rangeExpr();
    ast::ExprPtr e = rangeExpr(parts[0]);
    if (parts.size() == 2) e = binary(ctx, std::move(e), rangeExpr(parts[1]), ctx->op->getText());
    return e;
  }

  ast::ExprPtr rangeExpr(PosParser::RangeExprContext* ctx) {
    auto parts = ctx->addExpr();
    ast::ExprPtr e = addExpr(parts[0]);
    if (parts.size() == 2) {
      auto r = make(ast::Expr::Kind::Range, ctx);
      r->lhs = std::move(e);
      r->rhs = addExpr(parts[1]);
      return finish(std::move(r));
    }
    return e;
  }

  ast::ExprPtr addExpr(PosParser::AddExprContext* ctx) {
    auto parts = ctx->mulExpr();
    ast::ExprPtr e = mulExpr(parts[0]);
    for (size_t i = 1; i < parts.size() && !too_deep_; ++i)
      e = binary(ctx, std::move(e), mulExpr(parts[i]), ctx->ops[i - 1]->getText());
    return e;
  }

  ast::ExprPtr mulExpr(PosParser::MulExprContext* ctx) {
    auto parts = ctx->unaryExpr();
    ast::ExprPtr e = unaryExpr(parts[0]);
    for (size_t i = 1; i < parts.size() && !too_deep_; ++i)
      e = binary(ctx, std::move(e), unaryExpr(parts[i]), ctx->ops[i - 1]->getText());
    return e;
  }

  ast::ExprPtr unaryExpr(PosParser::UnaryExprContext* ctx) {
    if (ctx->powExpr()) return powExpr(ctx->powExpr());
    auto e = make(ast::Expr::Kind::Unary, ctx);
    e->op = ctx->op->getText();
    e->lhs = unaryExpr(ctx->unaryExpr());
    return finish(std::move(e));
  }

  ast::ExprPtr powExpr(PosParser::PowExprContext* ctx) {
    ast::ExprPtr base = postfixExpr(ctx->postfixExpr());
    if (ctx->unaryExpr() == nullptr) return base;
    return binary(ctx, std::move(base), unaryExpr(ctx->unaryExpr()), "^");
  }

  ast::ExprPtr postfixExpr(PosParser::PostfixExprContext* ctx) {
    ast::ExprPtr e = primary(ctx->primary());
    for (auto* p : ctx->postfix()) {
      if (too_deep_) break;
      SourceRange range = e->range.to(loc_.rule(p));
      if (auto* call = dynamic_cast<PosParser::CallPostfixContext*>(p)) {
        if (e->kind != ast::Expr::Kind::Name) {
          diags_.error(range, "only a named function can be called");
          continue;
        }
        e->kind = ast::Expr::Kind::Call;
        e->args = args(call->argList());
        e->range = range;
        e = finish(std::move(e));
      } else if (auto* index = dynamic_cast<PosParser::IndexPostfixContext*>(p)) {
        auto x = std::make_unique<ast::Expr>();
        x->kind = ast::Expr::Kind::Index;
        x->range = range;
        x->lhs = std::move(e);
        x->rhs = expr(index->expr());
        e = finish(std::move(x));
      } else if (auto* member = dynamic_cast<PosParser::MemberPostfixContext*>(p)) {
        auto x = std::make_unique<ast::Expr>();
        x->kind = ast::Expr::Kind::Member;
        x->range = range;
        x->lhs = std::move(e);
        x->name = name(member->ID()->getSymbol());
        e = finish(std::move(x));
      }
    }
    return e;
  }

  ast::ExprPtr primary(PosParser::PrimaryContext* ctx) {
    if (auto* n = dynamic_cast<PosParser::NumberPrimaryContext*>(ctx)) {
      auto e = make(ast::Expr::Kind::Number, ctx);
      e->text = n->NUMBER()->getText();
      e->number = std::strtod(e->text.c_str(), nullptr);
      if (!std::isfinite(e->number)) {
        Diagnostic& d = diags_.error(e->range, fmt::format("number {} is too large for a double", e->text));
        d.hint = "the largest is about 1.8e308";
      }
      return e;
    }
    if (auto* s = dynamic_cast<PosParser::StringPrimaryContext*>(ctx)) {
      auto e = make(ast::Expr::Kind::String, ctx);
      std::string raw = s->STRING()->getText();
      std::string text;
      for (size_t i = 1; i + 1 < raw.size(); ++i) {
        if (raw[i] == '\\' && i + 2 < raw.size()) {
          ++i;
          text += raw[i] == 'n' ? '\n' : raw[i] == 't' ? '\t' : raw[i];
        } else {
          text += raw[i];
        }
      }
      e->text = text;
      return e;
    }
    if (auto* n = dynamic_cast<PosParser::NamePrimaryContext*>(ctx)) {
      auto e = make(ast::Expr::Kind::Name, ctx);
      e->name = name(n->ID()->getSymbol());
      return e;
    }
    if (auto* l = dynamic_cast<PosParser::ListPrimaryContext*>(ctx)) {
      auto e = make(ast::Expr::Kind::List, ctx);
      for (auto* x : l->expr()) e->elements.push_back(expr(x));
      return finish(std::move(e));
    }
    if (auto* p = dynamic_cast<PosParser::ParenPrimaryContext*>(ctx)) {
      auto parts = p->expr();
      if (parts.size() == 1) {
        ast::ExprPtr inner = expr(parts[0]);
        inner->range = loc_.rule(ctx);
        return inner;
      }
      auto e = make(ast::Expr::Kind::Tuple, ctx);
      for (auto* x : parts) e->elements.push_back(expr(x));
      return finish(std::move(e));
    }
    auto e = make(ast::Expr::Kind::Number, ctx);  // unreachable after a clean parse
    return e;
  }
};

struct ParseSetup {
  antlr4::ANTLRInputStream input;
  grammar::PosLexer lexer;
  antlr4::CommonTokenStream tokens;
  grammar::PosParser parser;
  Locator locator;  // declared before the listener, which refers to it
  SyntaxErrorListener listener;

  ParseSetup(int32_t source, const SourceManager& sources, DiagnosticEngine& diags)
      : input(sources.file(source).text()),
        lexer(&input),
        tokens(&lexer),
        parser(&tokens),
        locator(source, sources.file(source).text()),
        listener(locator, diags) {
    lexer.removeErrorListeners();
    lexer.addErrorListener(&listener);
    parser.removeErrorListeners();
    parser.addErrorListener(&listener);
    tokens.fill();
  }
};

// Invalid UTF-8 and NUL bytes as located errors (the input stream would
// throw on the first, and a NUL would cut diagnostics short).
bool checkBytes(int32_t source, const SourceManager& sources, DiagnosticEngine& diags) {
  const SourceFile& file = sources.file(source);
  const std::string& text = file.text();
  if (file.cutShort() || text.size() > kMaxSourceBytes) {
    const double size = static_cast<double>(file.diskSize() ? file.diskSize() : text.size());
    const std::string what = file.cutShort() && !file.diskSize()
                                 ? fmt::format("longer than {} MB (it was read no further)", kMaxSourceBytes >> 20)
                                 : fmt::format("{:.1f} MB", size / (1 << 20));
    Diagnostic& d = diags.error({source, 0, 0}, fmt::format("the file is {}; posc reads sources of up to {} MB", what,
                                                            kMaxSourceBytes >> 20));
    d.hint = "a .pos file describes one experiment in a page; generated weights belong in a checkpoint";
    return false;
  }
  std::vector<BadBytes> bad = findBadBytes(text, 1000);
  for (const BadBytes& b : bad) {
    SourceRange range{source, b.offset, b.offset + b.length};
    std::string bytes = escapeBytes(std::string_view(text).substr(b.offset, b.length));
    switch (b.kind) {
      case BadBytes::Kind::Nul:
        diags.error(range, "NUL byte (\\x00) in the source").hint =
            "a .pos file is text; remove the byte (was the file saved by a binary tool?)";
        break;
      case BadBytes::Kind::IncompleteAtEnd:
        diags.error(range, fmt::format("incomplete UTF-8 sequence {} at the end of the file", bytes)).hint =
            "the file may have been cut short; complete or remove the last character";
        break;
      case BadBytes::Kind::InvalidUtf8:
        diags.error(range, fmt::format("invalid UTF-8: byte{} {}", b.length == 1 ? "" : "s", bytes)).hint =
            "posc reads .pos files as UTF-8; convert the file (for example iconv -f latin1 -t utf-8)";
        break;
    }
  }
  return bad.empty();
}

}  // namespace

std::optional<ast::File> parseFile(int32_t source, const SourceManager& sources,
                                   DiagnosticEngine& diags) {
  if (!checkBytes(source, sources, diags)) return std::nullopt;
  ParseSetup setup(source, sources, diags);
  if (!checkTokens(setup.tokens, setup.locator, sources, diags)) return std::nullopt;
  PosParser::FileContext* tree = setup.parser.file();
  if (setup.listener.errors() > 0) return std::nullopt;
  int before = diags.errorCount();
  Builder builder(setup.locator, diags);
  ast::File file = builder.file(tree);
  if (diags.errorCount() > before) return std::nullopt;
  return file;
}

ast::ExprPtr parseExpression(int32_t source, const SourceManager& sources,
                             DiagnosticEngine& diags) {
  if (!checkBytes(source, sources, diags)) return nullptr;
  ParseSetup setup(source, sources, diags);
  if (!checkTokens(setup.tokens, setup.locator, sources, diags)) return nullptr;
  PosParser::ExprOnlyContext* tree = setup.parser.exprOnly();
  if (setup.listener.errors() > 0) return nullptr;
  int before = diags.errorCount();
  Builder builder(setup.locator, diags);
  ast::ExprPtr e = builder.expr(tree->expr());
  if (diags.errorCount() > before) return nullptr;
  return e;
}

std::optional<ast::ReplLine> parseReplLine(int32_t source, const SourceManager& sources,
                                           DiagnosticEngine& diags) {
  if (!checkBytes(source, sources, diags)) return std::nullopt;
  ParseSetup setup(source, sources, diags);
  if (!checkTokens(setup.tokens, setup.locator, sources, diags)) return std::nullopt;
  PosParser::ReplLineContext* tree = setup.parser.replLine();
  if (setup.listener.errors() > 0) return std::nullopt;
  int before = diags.errorCount();
  Builder builder(setup.locator, diags);
  ast::ReplLine line = builder.replLine(tree);
  if (diags.errorCount() > before) return std::nullopt;
  return line;
}

}  // namespace posc::parse
