// posc emit ast|plan|llvm|flex FILE: the compiler's intermediate forms, and
// the experiment's attention as a FlexAttention module, as text.
#include <fmt/format.h>

#include <cstdio>

#include "compiler/ast/ast.h"
#include "compiler/flex/flex.h"
#include "compiler/jit/compiled.h"
#include "tools/posc/cli.h"

namespace posc::cli {
namespace {

int runEmit(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    // Asked for, the usage is the answer (exit 0); with nothing to emit, it is
    // a usage error (exit 2, on stderr), as for every other command.
    std::fputs("usage: posc emit ast FILE\n       posc emit plan|llvm|flex FILE [--experiment NAME] [--preset NAME] [--set K=V]...\n\n"
              "ast:  the syntax tree, with the source range of every node\n"
              "plan: the resolved experiment: every setting, every positional component\n"
              "      (which pairs rotate by which channel, exempt kinds, learned params)\n"
              "llvm: the optimised LLVM IR of the fused attention kernel (score terms,\n"
              "      exemptions, causal mask, softmax; forward and backward) that the\n"
              "      score-formula JIT compiles for this experiment on this CPU\n"
              "flex: a Python module for PyTorch's FlexAttention: the score terms as a\n"
              "      score_mod, the causal mask as a mask_mod, the rotations and key\n"
              "      zeroing, and the score parameters (initial, or from final.safetensors)\n",
               args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  const std::string what = args[0];
  ExperimentOptions o = parseExperimentOptions({args.begin() + 1, args.end()});
  if (o.files.size() != 1) throw UsageError{fmt::format("posc emit {} needs exactly one FILE", what)};
  driver::Compilation c;
  if (what == "ast") {
    if (!c.load(requestFor(o, o.files[0]))) return reportDiagnostics(c);
    std::fputs(ast::dump(c.program->main().file, c.sources).c_str(), stdout);
    return reportDiagnostics(c);
  }
  if (what == "plan") {
    if (!c.compile(requestFor(o, o.files[0]))) return reportDiagnostics(c);
    std::fputs(plan::dumpPlan(*c.plan).c_str(), stdout);
    return reportDiagnostics(c);
  }
  if (what == "llvm") {
    if (!c.compile(requestFor(o, o.files[0]))) return reportDiagnostics(c);
    if (!jit::available()) {
      std::fputs("posc: error: the score-formula JIT is unavailable: posc was built without LLVM\n", stderr);
      return 2;
    }
    const auto& p = *c.plan;
    auto dtype = p.model.precision == plan::Precision::F64 ? jit::DType::F64 : jit::DType::F32;
    const auto spec = jit::attentionSpecFor(p.model, p.attention, dtype);
    const auto& k = jit::compileAttention(spec);
    k.backward();
    std::printf("; posc fused attention kernel %016llx for experiment %s\n",
                static_cast<unsigned long long>(k.hash), p.name.c_str());
    for (const auto& t : p.attention.score_terms)
      std::printf(";   score %s: s <- %s\n", t.name.c_str(), plan::renderFormula(t.formula, p.attention).c_str());
    jit::finishBackgroundCompiles();
    std::printf("; compiled in %.1f ms (forward, quick tier), %.1f ms (forward, optimised tier, in the background), "
                "%.1f ms (backward, on first use); the IR below is the same for both tiers\n",
                k.compile_ms, k.optimisedCompileMs(), k.backwardCompileMs());
    std::fputs(jit::attentionIR(spec).c_str(), stdout);
    return reportDiagnostics(c);
  }
  if (what == "flex") {
    if (!c.compile(requestFor(o, o.files[0]))) return reportDiagnostics(c);
    std::string why;
    const std::optional<std::string> module = flex::emitModule(*c.plan, why);
    if (!module) {
      std::fprintf(stderr, "posc: error: experiment '%s' has no FlexAttention form: %s\n", c.plan->name.c_str(), why.c_str());
      return 2;
    }
    std::fputs(module->c_str(), stdout);
    return reportDiagnostics(c);
  }
  throw UsageError{fmt::format("posc emit takes ast, plan, llvm or flex, not '{}'", what)};
}

const CommandRegistration reg{{"emit", "posc emit ast|plan|llvm|flex FILE [options]",
                               "print the syntax tree, the resolved plan, the JIT kernel's LLVM IR or a FlexAttention module",
                               20, false, runEmit}};

}  // namespace
}  // namespace posc::cli
