// Study expansion, ordering and job records: see jobs.h.
#include "runtime/study/jobs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "compiler/driver/compile.h"
#include "runtime/results/atomic_file.h"
#include "runtime/results/run_folder.h"

namespace posc::study {

namespace fs = std::filesystem;

std::string Job::variant() const { return preset.empty() ? experiment : experiment + "-" + preset; }
std::string Job::row() const { return point.empty() ? variant() : fmt::format("{} [{}]", variant(), point); }
std::string Job::label() const { return fmt::format("{} seed {}", row(), seed); }
std::string Job::id() const {
  const std::string tail = fmt::format("seed{}/{}", seed, variant());
  return point_folder.empty() ? tail : point_folder + "/" + tail;
}

std::vector<std::string> splitGridValues(const std::string& value) {
  std::vector<std::string> out;
  std::string current;
  int depth = 0;
  char quote = 0;
  for (char c : value) {
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '[' || c == '(' || c == '{') {
      ++depth;
    } else if ((c == ']' || c == ')' || c == '}') && depth > 0) {
      --depth;
    } else if (c == ',' && depth == 0) {
      out.push_back(current);
      current.clear();
      continue;
    }
    current += c;
  }
  out.push_back(current);
  return out;
}

namespace {

// Tokens of an addition sequence whose operands have `digits` digits, or of
// a document of `length` tokens: an upper bound (separators, answer, <eos>).
int64_t additionTokens(const plan::TaskPlan& t, int64_t digits) {
  digits = plan::operandWidth(t, static_cast<int>(digits));
  const int64_t per_operand = (digits + t.digits_per_token - 1) / t.digits_per_token + 1;
  return t.operands * per_operand + per_operand + 4;
}

int64_t trainTokens(const plan::TaskPlan& t) {
  return t.kind == plan::TaskKind::Documents ? t.documents.train_max_length + 8 : additionTokens(t, t.train_max_digits);
}

// The weights of the model, counted coarsely (attention and MLP matrices, and
// token and output tables of up to 512 rows).
int64_t weightCount(const plan::ModelPlan& m) {
  const int64_t width = m.width, layers = m.layers;
  return layers * (4 * width * width + 2 * width * m.mlp_hidden) + 2 * 512 * width;
}

}  // namespace

ComputeEstimate estimateCompute(const plan::ExperimentPlan& plan) {
  const plan::ModelPlan& m = plan.model;
  const plan::TaskPlan& t = plan.task;
  const double weights = static_cast<double>(weightCount(m));
  const double layers = m.layers, width = m.width;
  ComputeEstimate e;
  e.steps = plan.train.steps;
  // Per token: 6 per weight (forward and backward), and the attention's
  // scores and weighted values over the sequence, 4 x layers x T x width
  // forward, three times that with the backward pass.
  const double train_length = static_cast<double>(trainTokens(t));
  e.train_flops = static_cast<double>(plan.train.steps) * plan.train.batch * train_length *
                  (6 * weights + 12 * layers * train_length * width);
  // Evaluation: every token of every test sequence once (prefill, then one
  // decoded token at a time over the cache), 2 per weight plus attention.
  auto evalTokens = [&](double tokens, double sequences) {
    e.eval_flops += sequences * tokens * (2 * weights + 4 * layers * tokens * width);
  };
  if (t.kind == plan::TaskKind::Documents) {
    const plan::DocumentEvalPlan& d = plan.eval.documents;
    const double cells = static_cast<double>(std::max<size_t>(1, d.tasks.size()) * std::max<size_t>(1, d.depths.size()) *
                                              std::max<size_t>(1, d.distractors.size()) * std::max(1, d.templates));
    for (int length : d.lengths) evalTokens(length + 8.0, cells * d.problems);
  } else if (plan.eval.protocol == plan::EvalProtocol::AdderBoard) {
    evalTokens(static_cast<double>(additionTokens(t, 10)), 10010);
  } else {
    for (int digits : t.test_digits) evalTokens(static_cast<double>(additionTokens(t, digits)), t.problems_per_length);
  }
  return e;
}

int64_t timeLimitMinutes(const ComputeEstimate& compute, int threads, bool gpu) {
  const double flops = compute.train_flops + compute.eval_flops;
  const double seconds = gpu ? flops / 5e12 + 0.005 * static_cast<double>(compute.steps)
                             : flops / (20e9 * std::max(1, threads));
  const double minutes = 2 * seconds / 60 + 15;
  return 15 * static_cast<int64_t>(std::ceil(minutes / 15));
}

int64_t estimateMemoryMb(const plan::ExperimentPlan& plan) {
  const plan::ModelPlan& m = plan.model;
  const plan::TaskPlan& t = plan.task;
  const int64_t length = trainTokens(t);  // the longest training sequence, in tokens
  const int64_t width = m.width, layers = m.layers;
  const int64_t weights = weightCount(m);
  const int64_t bytes_per = m.precision == plan::Precision::F64 ? 8 : 4;
  const int64_t state = weights * 4 * bytes_per;  // weights, gradients, two moments
  const int64_t batch = plan.train.batch;
  const int64_t activations =
      batch * length * layers * (16 * width + 2 * m.mlp_hidden + 3 * m.heads * length) * bytes_per;
  return 1024 + (state + activations + (1 << 20) - 1) / (1 << 20);
}

namespace {

std::string seedList(const std::vector<uint64_t>& seeds) {
  std::string s = "[";
  for (size_t i = 0; i < seeds.size(); ++i) s += (i ? ", " : "") + std::to_string(seeds[i]);
  return s + "]";
}

driver::CompileRequest requestFor(const StudyRequest& r, const std::string& file,
                                  const std::optional<std::string>& experiment, std::optional<uint64_t> seed) {
  driver::CompileRequest c;
  c.path = file;
  c.experiment.experiment = experiment;
  c.experiment.preset = r.preset;
  c.experiment.overrides = r.overrides;
  if (seed) c.experiment.overrides.push_back({"train.seeds", seedList({*seed})});
  return c;
}

// A grid point: its overrides, its label and its folder name.
struct GridPoint {
  std::vector<sema::Override> overrides;
  std::string label, folder;
};

// A value as a folder name: letters, digits and ._+- kept, the rest '_'.
std::string folderSafe(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '+' || c == '-';
    if (keep) out += c;
    else if (c != ' ') out += '_';
  }
  return out;
}

std::vector<GridPoint> gridPoints(const std::vector<GridAxis>& grid) {
  std::vector<GridPoint> points{GridPoint{}};
  for (const GridAxis& axis : grid) {
    if (axis.values.empty()) throw StudyError(fmt::format("--set {}: no values", axis.key));
    std::vector<GridPoint> next;
    for (const GridPoint& p : points)
      for (const std::string& v : axis.values) {
        GridPoint q = p;
        q.overrides.push_back({axis.key, v});
        q.label += (q.label.empty() ? "" : " ") + axis.key + "=" + v;
        q.folder += (q.folder.empty() ? "" : "+") + axis.key + "=" + folderSafe(v);
        next.push_back(std::move(q));
      }
    points = std::move(next);
  }
  std::set<std::string> folders;
  for (const GridPoint& p : points)
    if (!folders.insert(p.folder).second)
      throw StudyError(fmt::format("two grid points share the folder '{}'; give each value once", p.folder));
  return points;
}

// Content hashes of warm-start files, each file read once per expansion
// (every seed and grid point of a study may start from the same file).
class FileDigests {
 public:
  // FNV-1a over the file's bytes as 16 hex digits; "" when it cannot be read.
  const std::string& of(const std::string& path) {
    auto [it, fresh] = known_.try_emplace(path);
    if (fresh) it->second = read(path);
    return it->second;
  }

 private:
  static std::string read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return "";
    uint64_t h = driver::kHashSeed;
    std::string chunk(1 << 20, '\0');
    while (in) {
      in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
      h = driver::fnv1a(std::string_view(chunk.data(), static_cast<size_t>(in.gcount())), h);
    }
    return in.bad() ? "" : fmt::format("{:016x}", h);
  }
  std::map<std::string, std::string> known_;
};

// The jobs of one grid point (no warm starts from other experiments resolved yet).
std::optional<std::vector<Job>> expandPoint(const StudyRequest& request, const GridPoint& point,
                                            std::vector<std::optional<std::string>>& init_from,
                                            FileDigests& digests, std::string& diagnostics, bool color);

}  // namespace

std::optional<std::vector<Job>> expandStudy(const StudyRequest& request, std::string& diagnostics, bool color) {
  std::vector<Job> jobs;
  std::vector<std::optional<std::string>> init_from;
  FileDigests digests;
  for (const GridPoint& point : gridPoints(request.grid)) {
    auto point_jobs = expandPoint(request, point, init_from, digests, diagnostics, color);
    if (!point_jobs) return std::nullopt;
    for (Job& j : *point_jobs) jobs.push_back(std::move(j));
  }

  // Warm starts: the job of the same seed, preset and grid point, or a run already on disk.
  std::vector<std::string> external;  // per job: the checkpoint it starts from, when outside the study
  external.resize(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (!init_from[i]) continue;
    Job& j = jobs[i];
    const std::string source_variant = j.preset.empty() ? *init_from[i] : *init_from[i] + "-" + j.preset;
    for (size_t k = 0; k < jobs.size(); ++k)
      if (jobs[k].variant() == source_variant && jobs[k].seed == j.seed && jobs[k].point == j.point) j.after = k;
    if (j.after) continue;
    // Outside the study: a run in the grid point's folder, or else (on a
    // grid) one in the study folder itself, so that a sweep of the warm
    // start's own settings continues from one set of runs.
    const fs::path seed_folder = fmt::format("seed{}", j.seed);
    const fs::path in_point = j.out_dir.parent_path() / source_variant / seed_folder / "final.pt";
    const fs::path in_study = request.out / seed_folder / source_variant / seed_folder / "final.pt";
    if (fs::exists(in_point)) {
      external[i] = in_point.string();
    } else if (!j.point_folder.empty() && fs::exists(in_study)) {
      external[i] = in_study.string();
      j.command.insert(j.command.end(), {"--init-root", (request.out / seed_folder).string()});
    } else {
      throw StudyError(fmt::format(
          "{} warm-starts from '{}', which is not part of the study and has no run at '{}'{}: add its file "
          "to the study",
          j.label(), *init_from[i], in_point.string(),
          j.point_folder.empty() ? "" : fmt::format(" or '{}'", in_study.string())));
    }
  }
  for (size_t i = 0; i < jobs.size(); ++i)
    if (!external[i].empty()) {
      jobs[i].plan_hash = driver::stableHash(jobs[i].plan_hash + "\nwarm start from " + external[i]);
      jobs[i].training_hash = driver::stableHash(jobs[i].training_hash + "\nwarm start from " + external[i]);
      jobs[i].legacy_external = external[i];
      jobs[i].warm_start_digest = digests.of(external[i]);
    }

  std::vector<Job> ordered = orderByWarmStart(std::move(jobs));
  // Chain the hashes in dependency order, so a changed source re-runs its warm starts.
  for (Job& j : ordered)
    if (j.after) {
      const Job& source = ordered[*j.after];
      j.plan_hash = driver::stableHash(j.plan_hash + "\nwarm start from " + source.plan_hash);
      j.training_hash = driver::stableHash(j.training_hash + "\nwarm start from " + source.training_hash);
      j.legacy_chain.insert(j.legacy_chain.end(), source.legacy_chain.begin(), source.legacy_chain.end());
      j.legacy_external = source.legacy_external;
    }
  return ordered;
}

namespace {

// The placement flags as posc run's plan hash sees them: "--device cuda"
// and "--jit off" (the defaults, cpu and on, add nothing), in that order.
std::string placementIdentity(const std::vector<std::string>& flags) {
  std::string device, jit;
  for (size_t i = 0; i + 1 < flags.size(); i += 2) (flags[i] == "--device" ? device : jit) = flags[i + 1];
  std::string text;
  if (!device.empty() && device != "cpu") text += " --device " + device;
  if (!jit.empty() && jit != "on") text += " --jit " + jit;
  return text;
}

std::optional<std::vector<Job>> expandPoint(const StudyRequest& base_request, const GridPoint& point,
                                            std::vector<std::optional<std::string>>& init_from,
                                            FileDigests& digests, std::string& diagnostics, bool color) {
  StudyRequest request = base_request;
  request.overrides.insert(request.overrides.end(), point.overrides.begin(), point.overrides.end());
  const fs::path root = point.folder.empty() ? request.out : request.out / point.folder;
  std::vector<Job> jobs;
  std::map<std::string, std::string> variant_file;  // one file per variant
  for (const std::string& file : request.files) {
    // Every experiment the file declares (its imports' are not run), in file
    // order: a curriculum's stages can live in one file.
    driver::Compilation declared;
    if (!declared.checkAll(requestFor(request, file, std::nullopt, std::nullopt))) {
      diagnostics += declared.diags.render(color);
      return std::nullopt;
    }
    for (const plan::ExperimentPlan& base : declared.plans) {
      if (base.handset)
        throw StudyError(fmt::format("{}: '{}' is a hand-set model; a study trains experiments (use posc run)",
                                     file, base.name));
      const std::string variant = base.preset.empty() ? base.name : base.name + "-" + base.preset;
      if (auto [it, fresh] = variant_file.emplace(variant, file); !fresh)
        throw StudyError(fmt::format("'{}' is given twice ({} and {}); each experiment runs once per seed",
                                     variant, it->second, file));
      const std::vector<uint64_t> seeds = request.seeds.value_or(base.train.seeds);
      for (uint64_t seed : seeds) {
        driver::Compilation c;
        if (!c.compile(requestFor(request, file, base.name, seed))) {
          diagnostics += c.diags.render(color);
          return std::nullopt;
        }
        Job j;
        j.experiment = c.plan->name;
        j.preset = c.plan->preset;
        j.file = file;
        j.seed = seed;
        j.point = point.label;
        j.point_folder = point.folder;
        j.out_dir = root / fmt::format("seed{}", seed) / j.variant();
        j.memory_mb = estimateMemoryMb(*c.plan);
        j.compute = estimateCompute(*c.plan);
        // The plan and where it runs (device, JIT); completed below with the warm start's.
        const std::string identity = plan::dumpIdentity(*c.plan);
        const std::string placement = placementIdentity(request.placement);
        const std::string where = placement.empty() ? "" : "\nposc run" + placement;
        const driver::PlanHashes hashes = driver::hashPlan(*c.plan, where);
        j.plan_hash = hashes.plan;
        j.training_hash = hashes.training;
        j.placement = where;
        std::string typed;
        for (const std::string& f : request.placement) typed += " " + f;
        j.legacy_chain = {identity + "\nposc run" + typed};
        if (c.plan->train.init_file) j.warm_start_digest = digests.of(*c.plan->train.init_file);
        j.command = {request.posc_binary, "run", file, "--experiment", j.experiment};
        if (!j.preset.empty()) j.command.insert(j.command.end(), {"--preset", j.preset});
        for (const sema::Override& o : request.overrides)
          j.command.insert(j.command.end(), {"--set", o.key + "=" + o.value});
        j.command.insert(j.command.end(), {"--seed", std::to_string(seed), "--out", j.out_dir.string()});
        j.command.insert(j.command.end(), request.run_options.begin(), request.run_options.end());
        j.command.insert(j.command.end(), request.placement.begin(), request.placement.end());
        jobs.push_back(std::move(j));
        init_from.push_back(c.plan->train.init_from);
      }
    }
  }
  return jobs;
}

}  // namespace

std::vector<Job> orderByWarmStart(std::vector<Job> jobs) {
  const size_t n = jobs.size();
  std::vector<size_t> order;
  std::vector<int> state(n, 0);  // 0 unvisited, 1 on the stack, 2 placed
  // Depth-first from each job in list order: a job is placed right after the
  // chain it depends on, so the order stays close to the one given.
  for (size_t start = 0; start < n; ++start) {
    std::vector<size_t> chain;
    for (std::optional<size_t> k = start; k && state[*k] != 2; k = jobs[*k].after) {
      if (state[*k] == 1)
        throw StudyError(fmt::format("warm starts form a cycle through {}", jobs[*k].label()));
      state[*k] = 1;
      chain.push_back(*k);
    }
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      state[*it] = 2;
      order.push_back(*it);
    }
  }
  std::vector<size_t> position(n);
  for (size_t p = 0; p < n; ++p) position[order[p]] = p;
  std::vector<Job> out;
  out.reserve(n);
  for (size_t p = 0; p < n; ++p) {
    Job j = std::move(jobs[order[p]]);
    if (j.after) j.after = position[*j.after];
    out.push_back(std::move(j));
  }
  return out;
}

// ---------------------------------------------------------------------------
// job.json: {"experiment":"x","seed":0,"plan_hash":"...","training_hash":"...","status":"done","exit":0,"wall_s":12.3}
// with "warm_start":"<digest>" after the hashes for a job that starts from a file outside the study
// (status: done, interrupted or failed)

void writeJobRecord(const Job& job, const JobRecord& r) {
  fs::create_directories(job.out_dir);
  results::writeFileAtomic(
      job.out_dir / "job.json",
      fmt::format(R"({{"experiment":"{}","preset":"{}","seed":{},"plan_hash":"{}",{}{}"status":"{}","exit":{},"wall_s":{:.1f}}})"
                  "\n",
                  job.experiment, job.preset, job.seed, r.plan_hash,
                  r.training_hash.empty() ? "" : fmt::format(R"("training_hash":"{}",)", r.training_hash),
                  r.warm_start_digest.empty() ? "" : fmt::format(R"("warm_start":"{}",)", r.warm_start_digest),
                  r.done ? "done" : r.interrupted ? "interrupted" : "failed", r.exit_code, r.wall_s));
}

std::optional<JobRecord> readJobRecord(const fs::path& out_dir) {
  std::ifstream in(out_dir / "job.json");
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  // Our own one-line format: plain string and number fields, no nesting.
  auto field = [&](const char* key) -> std::optional<std::string> {
    const std::regex re(fmt::format(R"re("{}":("([^"]*)"|[-0-9.eE+]+))re", key));
    std::smatch m;
    if (!std::regex_search(text, m, re)) return std::nullopt;
    return m[2].matched ? m[2].str() : m[1].str();
  };
  auto hash = field("plan_hash"), status = field("status"), exit = field("exit"), wall = field("wall_s");
  if (!hash || !status) return std::nullopt;
  JobRecord r;
  r.plan_hash = *hash;
  r.done = *status == "done";
  r.interrupted = *status == "interrupted";
  r.exit_code = exit ? std::atoi(exit->c_str()) : 0;
  r.wall_s = wall ? std::atof(wall->c_str()) : 0;
  r.warm_start_digest = field("warm_start").value_or("");
  r.training_hash = field("training_hash").value_or("");
  return r;
}

std::string legacyPlanHash(const Job& job, int threads) {
  const std::string suffix = fmt::format(" --threads {}", threads);
  std::string hash;
  for (size_t k = job.legacy_chain.size(); k-- > 0;) {  // from the first source to this job
    const std::string own = driver::stableHash(job.legacy_chain[k] + suffix);
    if (k + 1 == job.legacy_chain.size())
      hash = job.legacy_external.empty() ? own : driver::stableHash(own + "\nwarm start from " + job.legacy_external);
    else
      hash = driver::stableHash(own + "\nwarm start from " + hash);
  }
  return hash;
}

namespace {

// The threads a run last trained on, from its plan.txt ("# numerics ...; 2 CPU
// threads; ..."); nullopt when the folder does not say.
std::optional<int> lastThreadCount(const fs::path& out_dir) {
  std::ifstream in(out_dir / "plan.txt");
  static const std::regex threads(R"(^# numerics .*?([0-9]+) CPU threads?;)");
  std::smatch m;
  for (std::string line; std::getline(in, line) && line.rfind("# ", 0) == 0;)
    if (std::regex_search(line, m, threads)) return std::stoi(m[1]);
  return std::nullopt;
}

// Whether the record's run trained what the job trains, so that posc run
// evaluates it again rather than training it: by the training hashes of the
// record and of the run's status; or, for a record of a version before
// training hashes, a finished run without a warm start whose plan.json gives
// the record's plan hash (the plan read back is then the one it trained), by
// that plan's training hash. posc run checks the same (runtime/run/prepare.cpp).
bool trainsTheSame(const Job& job, const JobRecord& r) {
  const std::optional<formats::RunStatus> status = results::readStatus(job.out_dir);
  if (!status) return false;
  if (!r.training_hash.empty()) return r.training_hash == job.training_hash && !status->training_hash.empty();
  if (!r.done || !status->finished() || job.after || !job.legacy_external.empty()) return false;
  const std::optional<plan::ExperimentPlan> recorded = results::readRecordedPlan(job.out_dir);
  if (!recorded) return false;  // none, damaged or of another format: trained again, as before
  const driver::PlanHashes hashes = driver::hashPlan(*recorded, job.placement);
  return hashes.plan == r.plan_hash && hashes.training == job.training_hash;
}

}  // namespace

JobState jobState(const Job& job) {
  const std::optional<JobRecord> r = readJobRecord(job.out_dir);
  if (!r) return JobState::Pending;
  // The same path, another file (a record without a digest predates them).
  if (!r->warm_start_digest.empty() && r->warm_start_digest != job.warm_start_digest) return JobState::Stale;
  if (r->plan_hash != job.plan_hash) {
    if (trainsTheSame(job, *r)) return JobState::Reevaluate;
    // A record of an older study: the same plan when its hash is the old
    // formula's for the threads the run last trained on.
    const std::optional<int> threads = lastThreadCount(job.out_dir);
    if (!threads || r->plan_hash != legacyPlanHash(job, *threads)) return JobState::Stale;
  }
  return r->done ? JobState::Done : r->interrupted ? JobState::Interrupted : JobState::Failed;
}

std::optional<std::string> progressAtRisk(const Job& job) {
  const std::optional<formats::RunStatus> status = results::readStatus(job.out_dir);
  if (status && status->finished()) return std::nullopt;
  const std::vector<fs::path> weights = results::trainedWeights(job.out_dir);
  if (weights.empty()) return std::nullopt;
  std::string files;
  for (size_t i = 0; i < weights.size() && i < 4; ++i) files += (i ? ", " : "") + weights[i].string();
  if (weights.size() > 4) files += fmt::format(" and {} more", weights.size() - 4);
  return fmt::format("{}, with {}", status ? results::describeStatus(*status) : "its status.json unreadable", files);
}

const char* describe(JobState state) {
  switch (state) {
    case JobState::Pending: return "pending";
    case JobState::Done: return "done";
    case JobState::Stale: return "stale (plan or warm-start file changed)";
    case JobState::Reevaluate: return "evaluation changed (trained weights kept)";
    case JobState::Failed: return "failed";
    case JobState::Interrupted: return "interrupted";
  }
  return "?";
}

}  // namespace posc::study
