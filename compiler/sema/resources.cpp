// Memory estimates and the CPU's bf16 support; see resources.h.
#include "compiler/sema/resources.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>

namespace posc::sema {
namespace {

// Tokens of one sequence whose operands have `digits` digits: the operands,
// their separators and '=', the answer (one digit longer) and <eos>/<bos>.
int sequenceTokens(const plan::TaskPlan& task, int digits) {
  digits = plan::operandWidth(task, digits);
  const int per = std::max(1, task.digits_per_token);
  const int operand = (digits + per - 1) / per, answer = (digits + 1 + per - 1) / per;
  return task.operands * operand + task.operands + answer + 1 + (task.bos ? 1 : 0);
}

std::string gigabytes(double bytes) { return fmt::format("{:.1f} GB", bytes / 1e9); }

// posc with LibTorch loaded and a small model: about 250 MB resident.
constexpr double kProcessBytes = 0.25e9;
// Refuse above this share of the machine's memory: the rest is the system's,
// and the estimate is coarse.
constexpr double kUsableShare = 0.8;

}  // namespace

int channelMaximum(const plan::TaskPlan& task, plan::Channel channel, int digits) {
  const int per = std::max(1, task.digits_per_token);
  digits = plan::operandWidth(task, digits);
  switch (channel) {
    case plan::Channel::Position: return sequenceTokens(task, digits) - 1;
    case plan::Channel::Column: return (digits + 1 + per - 1) / per;
    case plan::Channel::Row: return task.operands;
    case plan::Channel::Kind: break;
    case plan::Channel::Segment: return 0;  // addition has no statements
  }
  return 7;  // TokenKind values fit in 0..7 (plan::KindSet)
}

MemoryEstimate estimateMemory(const plan::ExperimentPlan& plan) {
  const plan::ModelPlan& m = plan.model;
  const double value = m.precision == plan::Precision::F64 ? 8 : 4;
  const double w = m.width, hidden = m.mlp_hidden, layers = m.layers, heads = m.heads;
  const bool documents = plan.task.kind == plan::TaskKind::Documents;
  // Document tokens (runtime/longctx: 310 ids); a prompt, an answer of at most two tokens and <eos>.
  const double vocab = documents ? 310 : std::pow(10.0, std::max(1, plan.task.digits_per_token)) + 6;
  const double weights = layers * (4 * w * w + 2 * w * hidden + 8 * w) + 2 * vocab * w;

  MemoryEstimate e;
  e.parameters = weights * value * 4;  // weights, gradients, two AdamW moments
  e.tokens_train = documents ? plan.task.documents.train_max_length + 3
                             : sequenceTokens(plan.task, plan.task.train_max_digits);
  const double batch = plan.train.batch, L = e.tokens_train;
  // Kept for the backward pass, per layer and token: the projections, norms,
  // the MLP's hidden layer twice, and the attention probabilities and scores.
  const double per_token = layers * (14 * w + 3 * hidden + 3 * heads * L) + 2 * vocab;
  e.training = kProcessBytes + e.parameters + batch * L * per_token * value;

  int longest = 0;
  for (int d : documents ? plan.eval.documents.lengths : plan.task.test_digits) longest = std::max(longest, d);
  e.tokens_eval = documents ? longest + 3 : sequenceTokens(plan.task, longest);
  const double problems = documents ? plan.eval.documents.problems : plan.task.problems_per_length;
  const double T = e.tokens_eval;
  // Measured (posc run with 1,000,000 problems of 3 digits and 300,000 of
  // 10, one step of training): 450 bytes per problem plus 48 per token of its
  // sequence (digit vectors, prompts, generated tokens, results).
  e.problems = problems * (450 + 48 * T);
  const double decode_batch = std::min<double>(plan.eval.batch, problems);
  const double kv_cache = decode_batch * T * layers * 2 * w * value;
  const double prefill = decode_batch * T * (heads * T * 2 + 12 * w) * value;
  e.evaluation = kProcessBytes + weights * value + e.problems + kv_cache + prefill;
  return e;
}

double availableMemory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  double bytes = pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0;
  std::ifstream limit("/sys/fs/cgroup/memory.max");
  std::string text;
  if (limit >> text && text != "max") {
    try {
      const double cgroup = std::stod(text);
      if (cgroup > 0 && (bytes == 0 || cgroup < bytes)) bytes = cgroup;
    } catch (const std::exception&) {
      // Unreadable: keep physical memory.
    }
  }
  return bytes;
}

void checkMemory(SourceRange at, SettingsContext& ctx) {
  const double machine = availableMemory();
  if (machine <= 0) return;
  const double memory = kUsableShare * machine;
  const plan::ExperimentPlan& p = ctx.plan;
  const MemoryEstimate e = estimateMemory(p);
  auto where = [&](const char* key) {
    auto it = ctx.written.find(key);
    return it == ctx.written.end() ? at : it->second;
  };
  const bool documents = p.task.kind == plan::TaskKind::Documents;
  if ((documents || !p.task.test_digits.empty()) && e.evaluation > memory) {
    const bool problems_drive = e.problems > e.evaluation / 2;
    Diagnostic& d = ctx.diags.error(
        where(documents ? (problems_drive ? "eval.problems" : "eval.lengths")
                        : (problems_drive ? "task.problems_per_length" : "task.test_digits")),
        fmt::format("evaluation needs about {} of memory, more than 80% of this machine's {}",
                    gigabytes(e.evaluation), gigabytes(machine)));
    d.notes.push_back({{}, fmt::format("the largest test length is {} tokens; {} test problems of it take about "
                                       "{}, and decoding {} at a time about {} more",
                                       e.tokens_eval, documents ? p.eval.documents.problems : p.task.problems_per_length,
                                       gigabytes(e.problems),
                                       std::min(p.eval.batch, documents ? p.eval.documents.problems : p.task.problems_per_length),
                                       gigabytes(e.evaluation - e.problems))});
    d.hint = problems_drive ? (documents ? "use fewer eval.problems" : "use fewer problems_per_length")
                            : "test shorter lengths, or lower eval.batch";
  }
  if (e.training > memory) {
    Diagnostic& d = ctx.diags.error(where("train.batch"),
                                    fmt::format("training needs about {} of memory, more than 80% of this machine's {}",
                                                gigabytes(e.training), gigabytes(machine)));
    d.notes.push_back({{}, fmt::format("{} sequences of {} tokens through {} layers of width {}", p.train.batch,
                                       e.tokens_train, p.model.layers, p.model.width)});
    d.hint = documents ? "lower train.batch or train_max_length, or use a smaller model"
                       : "lower train.batch or train_max_digits, or use a smaller model";
  }
}

bool flagsHaveNativeBf16(std::string_view flags) {
  std::istringstream words{std::string(flags)};
  for (std::string w; words >> w;)
    if (w == "avx512_bf16" || w == "amx_bf16") return true;
  return false;
}

bool cpuHasNativeBf16() {
  static const bool native = [] {
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);) {
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string key = line.substr(0, colon);
      key.erase(key.find_last_not_of(" \t") + 1);
      if (key == "flags") return flagsHaveNativeBf16(std::string_view(line).substr(colon + 1));
    }
    return false;
  }();
  return native;
}

void checkPrecision(SourceRange at, SettingsContext& ctx, bool native_bf16) {
  if (ctx.plan.model.precision != plan::Precision::Bf16Mixed || native_bf16) return;
  auto it = ctx.written.find("model.precision");
  Diagnostic& d = ctx.diags.warning(it == ctx.written.end() ? at : it->second,
                                    "bf16_mixed is emulated on this CPU (no AVX512_BF16 or AMX) and runs slower than f32");
  d.notes.push_back({{}, "LibTorch converts every bf16 product to float and back; a 6 x 384 training step "
                         "measured 3.3x slower than in f32 without these instructions (README: Speed on a CPU)"});
  d.hint = "use precision = f32 on this machine; bf16_mixed pays on a GPU or a CPU with AVX512_BF16 or AMX";
}

void checkPrecision(SourceRange at, SettingsContext& ctx) {
  if (ctx.plan.model.precision == plan::Precision::Bf16Mixed) checkPrecision(at, ctx, cpuHasNativeBf16());
}

}  // namespace posc::sema
