// posc export onnx FILE -o model.onnx: a hand-set model as an ONNX graph.
#include <fmt/format.h>

#include <cstdio>

#include "runtime/handset/forward.h"
#include "runtime/onnx/export_onnx.h"
#include "runtime/results/atomic_file.h"
#include "runtime/task/adder_protocol.h"
#include "runtime/task/addition.h"
#include "tools/posc/cli.h"

namespace posc::cli {
namespace {

const char* kExportHelp = R"(usage: posc export onnx FILE -o MODEL.onnx [options]

Writes a hand-set model as an ONNX graph (opset 13, float64): input tokens
int64 [batch, sequence], output logits [batch, sequence, vocab]. The graph is
checked with ONNX's checker before it is written.

options:
  -o, --out PATH        the .onnx file to write (required)
  --logits PATH         also write posc's own logits for the first N problems
                        of the evaluation (whole sequences: prompt and the true
                        answer), to check the graph against independently
  --problems N          how many problems for --logits (default 100)
  --experiment NAME     the experiment to use (default: the last one in FILE)
  --set KEY=VALUE       override a setting (repeatable)

--logits file: a line "problems P vocab V", then per problem a line with the
prompt length and the token ids, and a line of sequence x vocab logits
(row-major, 17 significant digits). A decoder acts on the logits of positions
prompt length - 1 to sequence - 2.
)";

// The first `count` problems of the plan's evaluation, as full sequences
// (prompt and answer, without <eos>).
std::vector<task::Sequence> referenceSequences(const plan::ExperimentPlan& plan, int count) {
  const task::Tokenizer tokenizer(plan.task);
  std::vector<task::Problem> problems;
  if (plan.eval.protocol == plan::EvalProtocol::AdderBoard) {
    problems = task::adderBoardProblems();
    if (static_cast<int>(problems.size()) > count) problems.resize(static_cast<size_t>(count));
  } else {
    for (int digits : plan.task.test_digits)
      for (const task::Problem& p : task::testProblems(plan.task, digits))
        if (static_cast<int>(problems.size()) < count) problems.push_back(p);
  }
  std::vector<task::Sequence> out;
  for (const task::Problem& p : problems) {
    task::Sequence s = tokenizer.encode(p);
    s.tokens.pop_back();  // <eos>: the answer is what a decoder emits
    out.push_back(std::move(s));
  }
  return out;
}

int runExport(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kExportHelp, stdout);
    return 0;
  }
  if (args[0] != "onnx") throw UsageError{fmt::format("posc export takes onnx, not '{}'", args[0])};
  std::string out, logits_path;
  int problems = 100;
  ExperimentOptions o = parseExperimentOptions({args.begin() + 1, args.end()}, [&](const std::string& flag, const auto& value) {
    if (flag == "-o" || flag == "--out") out = value();
    else if (flag == "--logits") logits_path = value();
    else if (flag == "--problems") problems = parseCount("--problems", value());
    else return false;
    return true;
  });
  if (o.help) {
    std::fputs(kExportHelp, stdout);
    return 0;
  }
  if (o.files.size() != 1) throw UsageError{"posc export onnx needs exactly one FILE"};
  if (out.empty()) throw UsageError{"posc export onnx needs -o MODEL.onnx"};
  if (!onnx_export::available()) {
    std::fputs("posc: error: posc export onnx is unavailable: posc was built without ONNX (install libonnx-dev "
               "and rebuild; `posc --version` lists the features of this build)\n",
               stderr);
    return 2;
  }
  driver::Compilation c;
  if (!c.compile(requestFor(o, o.files[0]))) return reportDiagnostics(c);
  reportDiagnostics(c);
  const plan::ExperimentPlan& plan = *c.plan;
  if (!plan.handset) {
    std::fprintf(stderr, "posc: error: experiment '%s' has no written weights; posc export onnx exports hand-set models\n",
                 plan.name.c_str());
    return 2;
  }
  try {
    const std::string bytes = onnx_export::exportModel(plan, kVersion);
    std::string logits_text;
    if (!logits_path.empty()) {
      const handset::Forward forward(*plan.handset, plan.model.softmax);
      const auto sequences = referenceSequences(plan, problems);
      logits_text = fmt::format("problems {} vocab {}\n", sequences.size(), forward.vocab());
      for (const task::Sequence& s : sequences) {
        logits_text += fmt::format("{} {}\n", s.prompt_length, fmt::join(s.tokens, " "));
        std::vector<double> l = forward.logits(s.tokens);
        std::string row;
        for (double v : l) row += fmt::format("{}{:.17g}", row.empty() ? "" : " ", v);
        logits_text += row + "\n";
      }
    }
    results::writeFileAtomic(out, bytes);
    if (!logits_path.empty()) results::writeFileAtomic(logits_path, logits_text);
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "posc: error: %s\n", e.what());
    return 2;
  }
  std::printf("wrote %s (checked by ONNX's checker)%s\n", out.c_str(),
              logits_path.empty() ? "" : fmt::format(" and {}", logits_path).c_str());
  return 0;
}

const CommandRegistration reg{{"export", "posc export onnx FILE -o OUT",
                               "write a hand-set model as an ONNX graph", 50, false, runExport}};

}  // namespace
}  // namespace posc::cli
