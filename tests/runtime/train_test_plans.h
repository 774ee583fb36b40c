// Small experiment plans shared by the training and evaluation tests: a tiny
// GPT on short reversed addition with 2D-style rotations (operand row on the
// first pairs, column on the rest), plus helpers for scratch folders.
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>

#include "compiler/plan/plan.h"

namespace posc::testing {

inline plan::ExperimentPlan tinyAdditionPlan() {
  plan::ExperimentPlan p;
  p.name = "tiny";
  p.task.operands = 2;
  p.task.digits_per_token = 1;
  p.task.order = plan::DigitOrder::Reversed;
  p.task.train_min_digits = 1;
  p.task.train_max_digits = 4;
  p.task.test_digits = {3, 4};
  p.task.problems_per_length = 90;

  p.model.layers = 2;
  p.model.width = 64;
  p.model.heads = 4;
  p.model.head_dim = 16;
  p.model.mlp_hidden = 256;
  p.model.precision = plan::Precision::F32;

  plan::Rotation rows;
  rows.channel = plan::Channel::Row;
  rows.pair_begin = 0;
  rows.pair_end = 4;
  rows.base = 100.0;
  rows.origin = "test rows";
  plan::Rotation columns = rows;
  columns.channel = plan::Channel::Column;
  columns.pair_begin = 4;
  columns.pair_end = 8;
  columns.origin = "test columns";
  p.attention.rotations = {rows, columns};

  p.train.steps = 1500;
  p.train.batch = 64;
  p.train.lr = 3e-3;
  p.train.warmup = 100;
  p.train.min_lr_ratio = 0.1;
  p.train.weight_decay = 0.1;
  p.train.schedule = plan::Schedule::Cosine;
  p.train.grad_clip = 1.0;
  p.train.seeds = {0};
  p.train.log_every = 100;
  p.eval.batch = 90;
  return p;
}

// score <- score - rate[h] * |q.position - k.position| with a learned per-head rate.
inline void addLearnedDecay(plan::ExperimentPlan& p, double init = 0.25) {
  using Op = plan::FormulaNode::Op;
  plan::Param rate;
  rate.name = "decay.rate";
  rate.per_head = true;
  rate.learned = true;
  rate.init.assign(static_cast<size_t>(p.model.heads), init);
  p.attention.params.push_back(rate);
  const int param = static_cast<int>(p.attention.params.size()) - 1;
  plan::ScoreTerm term;
  term.name = "decay";
  auto node = [&](Op op, int a = -1, int b = -1) {
    plan::FormulaNode n;
    n.op = op;
    n.a = a;
    n.b = b;
    term.formula.nodes.push_back(n);
    return static_cast<int>(term.formula.nodes.size()) - 1;
  };
  const int score = node(Op::Score);
  plan::FormulaNode q;
  q.op = Op::QChannel;
  q.channel = plan::Channel::Position;
  term.formula.nodes.push_back(q);
  const int qi = static_cast<int>(term.formula.nodes.size()) - 1;
  plan::FormulaNode k = q;
  k.op = Op::KChannel;
  term.formula.nodes.push_back(k);
  const int ki = static_cast<int>(term.formula.nodes.size()) - 1;
  plan::FormulaNode pn;
  pn.op = Op::Param;
  pn.param = param;
  term.formula.nodes.push_back(pn);
  const int pi = static_cast<int>(term.formula.nodes.size()) - 1;
  const int dist = node(Op::Abs, node(Op::Sub, qi, ki));
  node(Op::Sub, score, node(Op::Mul, pi, dist));
  term.formula.text = "score - rate[h] * abs(q.position - k.position)";
  term.origin = "test decay";
  p.attention.score_terms.push_back(term);
}

// A fresh empty folder under the system temp folder, removed on destruction.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag) {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("posc-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace posc::testing
