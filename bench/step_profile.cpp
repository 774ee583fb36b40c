// Where a training step spends its time: runs warm-up steps, then profiles a
// few more with LibTorch's profiler and writes a Chrome trace. The Python peer
// writes the same kind of trace (bench/peer/gpt.py --trace), and
// bench/profile_compare.py sets the two side by side, operation by operation
// (self time per step), which is how the step's overheads were found.
//
//   build/bench/step_profile [--size small|study] [--encoding nope|rope2d|rope2d_decay]
//                            [--jit on|off] [--bf16] [--steps N] [--threads N] --trace FILE
#include <fmt/format.h>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/torch.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "bench/step_plan.h"
#include "runtime/model/batch.h"
#include "runtime/model/device.h"
#include "runtime/train/fused_adamw.h"
#include "runtime/train/sampling.h"
#include "runtime/train/trainer.h"

namespace {

using namespace posc;

struct Options {
  bool study = true;
  std::string encoding = "rope2d_decay";
  bool jit = true;
  bool bf16 = false;  // precision = bf16_mixed: the forward pass under bf16 autocast
  int steps = 5, warmup = 3, threads = 1;
  std::string trace;
};

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: step_profile [--size small|study] [--encoding nope|rope2d|rope2d_decay] [--jit on|off]\n"
               "                    [--bf16] [--steps N] [--threads N] --trace FILE\n");
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage();
      return argv[++i];
    };
    std::string a = argv[i];
    if (a == "--size") o.study = value() == "study";
    else if (a == "--encoding") o.encoding = value();
    else if (a == "--jit") o.jit = value() == "on";
    else if (a == "--bf16") o.bf16 = true;
    else if (a == "--steps") o.steps = std::atoi(value().c_str());
    else if (a == "--threads") o.threads = std::atoi(value().c_str());
    else if (a == "--trace") o.trace = value();
    else usage();
  }
  if (o.trace.empty() || o.steps <= 0) usage();
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  model::setThreads(o.threads);
  plan::ExperimentPlan p = bench::makePlan(o.study, o.encoding);
  task::Tokenizer tok(p.task);
  model::Gpt model = train::buildModel(p, 0, torch::kCPU);
  model->setScoreJit(o.jit);
  train::FusedAdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-4));  // as the trainer steps
  std::mt19937_64 rng = train::dataRng(0);
  int64_t tokens = 0;
  auto step = [&] {
    task::Batch b = task::sampleTrainingBatch(p.task, tok, 64, rng);
    model::BatchTensors t = model::toTensors(b, torch::kCPU);
    torch::Tensor loss = train::trainingLoss(model, t, torch::Tensor(), o.bf16);
    opt.zero_grad();
    loss.backward();
    train::clipAndStep(opt, 1.0);
    return static_cast<int64_t>(b.batch) * b.length;
  };
  for (int i = 0; i < o.warmup; ++i) step();
  {
    torch::autograd::profiler::RecordProfile guard(o.trace);
    for (int i = 0; i < o.steps; ++i) {
      RECORD_USER_SCOPE("step");
      tokens += step();
    }
  }
  fmt::print("{} steps of {} tokens on average profiled into {}\n", o.steps, tokens / o.steps, o.trace);
  return 0;
}
