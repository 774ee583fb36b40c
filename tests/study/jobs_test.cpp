// The study's job list: expansion of files x seeds, warm-start ordering,
// plan hashes, and the errors of a study that cannot be laid out.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "compiler/driver/compile.h"
#include "compiler/plan/plan_json.h"
#include "runtime/study/jobs.h"
#include "tests/common/files.h"

namespace posc::study {
namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) { return posc::testing::scratchDir(name); }

// The message of the StudyError that expanding `r` must throw.
std::string studyErrorOf(const StudyRequest& r) {
  std::string diags;
  try {
    expandStudy(r, diags);
  } catch (const StudyError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a StudyError";
  return {};
}

// A finished run's checkpoint, as expansion looks for it (its contents are not read).
void placeFinalCheckpoint(const fs::path& seed_dir) {
  fs::create_directories(seed_dir);
  std::ofstream(seed_dir / "final.pt") << "x";
}

StudyRequest decayAndSink(const fs::path& out) {
  StudyRequest r;
  // The warm start first, to check that ordering puts its source before it.
  r.files = {POSC_SOURCE_DIR "/examples/addition/rope2d_decay_sink.pos",
             POSC_SOURCE_DIR "/examples/addition/rope2d_decay.pos"};
  r.preset = "small";
  r.seeds = std::vector<uint64_t>{0, 1};
  r.out = out;
  r.posc_binary = "/usr/bin/posc-under-test";
  return r;
}

// decayAndSink's two jobs of seed 0 under `overrides`: the decay run, then its warm start.
std::vector<Job> seedZeroJobs(const fs::path& out, const std::vector<sema::Override>& overrides = {}) {
  StudyRequest r = decayAndSink(out);
  r.seeds = std::vector<uint64_t>{0};
  r.overrides = overrides;
  std::string diags;
  auto jobs = expandStudy(r, diags);
  EXPECT_TRUE(jobs && jobs->size() == 2) << diags;
  return jobs && jobs->size() == 2 ? *jobs : std::vector<Job>(2);
}

TEST(StudyJobs, ExpandsFilesBySeedsAndOrdersWarmStartsAfterTheirSources) {
  const fs::path out = scratch("expand");
  std::string diags;
  auto jobs = expandStudy(decayAndSink(out), diags);
  ASSERT_TRUE(jobs) << diags;
  ASSERT_EQ(jobs->size(), 4u);
  // Depth-first from the first file: each sink seed right after its decay seed.
  std::vector<std::string> labels;
  for (const Job& j : *jobs) labels.push_back(j.label());
  EXPECT_EQ(labels, (std::vector<std::string>{"rope2d_decay-small seed 0", "rope2d_decay_sink-small seed 0",
                                              "rope2d_decay-small seed 1", "rope2d_decay_sink-small seed 1"}));
  for (size_t i = 0; i < jobs->size(); ++i) {
    const Job& j = (*jobs)[i];
    EXPECT_EQ(j.out_dir, out / ("seed" + std::to_string(j.seed)) / j.variant());
    EXPECT_EQ(j.command.front(), "/usr/bin/posc-under-test");
    EXPECT_EQ(j.plan_hash.size(), 16u);
    auto seed_flag = std::find(j.command.begin(), j.command.end(), "--seed");
    ASSERT_NE(seed_flag, j.command.end());
    EXPECT_EQ(*(seed_flag + 1), std::to_string(j.seed));
    auto out_flag = std::find(j.command.begin(), j.command.end(), "--out");
    ASSERT_NE(out_flag, j.command.end());
    EXPECT_EQ(*(out_flag + 1), j.out_dir.string());
    if (j.experiment == "rope2d_decay_sink") {
      ASSERT_TRUE(j.after);
      EXPECT_LT(*j.after, i);
      EXPECT_EQ((*jobs)[*j.after].experiment, "rope2d_decay");
      EXPECT_EQ((*jobs)[*j.after].seed, j.seed);
    } else {
      EXPECT_FALSE(j.after);
    }
  }
  // Seeds are different plans; the same request hashes the same way again.
  EXPECT_NE((*jobs)[0].plan_hash, (*jobs)[2].plan_hash);
  std::string again_diags;
  auto again = expandStudy(decayAndSink(out), again_diags);
  ASSERT_TRUE(again);
  for (size_t i = 0; i < jobs->size(); ++i) EXPECT_EQ((*jobs)[i].plan_hash, (*again)[i].plan_hash);
}

// A file that declares several experiments (a curriculum's stages) gives a
// job to each, in file order, each warm start after its source of the same
// seed; the experiments it imports are not run.
TEST(StudyJobs, EveryExperimentAFileDeclaresRunsAndNoneItImports) {
  StudyRequest r;
  r.files = {POSC_SOURCE_DIR "/examples/longctx/retrieval_curriculum.pos"};
  r.seeds = std::vector<uint64_t>{0, 1};
  r.out = scratch("curriculum");
  r.posc_binary = "/usr/bin/posc-under-test";
  std::string diags;
  auto jobs = expandStudy(r, diags);
  ASSERT_TRUE(jobs) << diags;
  std::vector<std::string> labels;
  for (const Job& j : *jobs) labels.push_back(j.label());
  EXPECT_EQ(labels, (std::vector<std::string>{"retrieval_packed seed 0", "retrieval_packed seed 1",
                                              "retrieval_curriculum seed 0", "retrieval_curriculum seed 1",
                                              "retrieval_study seed 0", "retrieval_study seed 1"}));
  const std::map<std::string, std::string> source = {{"retrieval_curriculum", "retrieval_packed"},
                                                     {"retrieval_study", "retrieval_curriculum"}};
  for (const Job& j : *jobs) {
    auto experiment_flag = std::find(j.command.begin(), j.command.end(), "--experiment");
    ASSERT_NE(experiment_flag, j.command.end());
    EXPECT_EQ(*(experiment_flag + 1), j.experiment);
    if (j.experiment == "retrieval_packed") {
      EXPECT_FALSE(j.after) << j.label();
    } else {
      ASSERT_TRUE(j.after) << j.label();
      EXPECT_EQ((*jobs)[*j.after].experiment, source.at(j.experiment)) << j.label();
      EXPECT_EQ((*jobs)[*j.after].seed, j.seed) << j.label();
    }
  }
}

TEST(StudyJobs, ASettingOrADeviceChangesEveryJobsHash) {
  const fs::path out = scratch("hash");
  std::string diags;
  StudyRequest base = decayAndSink(out);
  StudyRequest changed = base;
  changed.overrides.push_back({"train.lr", "1e-3"});
  StudyRequest on_gpu = base;
  on_gpu.placement = {"--device", "cuda"};
  auto a = expandStudy(base, diags), b = expandStudy(changed, diags), g = expandStudy(on_gpu, diags);
  ASSERT_TRUE(a && b && g) << diags;
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_NE((*a)[i].plan_hash, (*b)[i].plan_hash);
    EXPECT_NE((*a)[i].plan_hash, (*g)[i].plan_hash) << "a run on another device is another result";
    EXPECT_EQ((*g)[i].command.back(), "cuda");
  }

}

// The hash holds where a run trains as posc run sees it: the default device
// and JIT, the order of the flags and the threads per run change nothing.
TEST(StudyJobs, TheDefaultPlacementTheFlagsOrderAndTheThreadsLeaveTheHash) {
  const fs::path out = scratch("hash_placement");
  std::string diags;
  StudyRequest base = decayAndSink(out);
  StudyRequest defaults = base, threads = base, gpu = base, gpu_swapped = base;
  defaults.placement = {"--device", "cpu", "--jit", "on"};
  threads.run_options = {"--threads", "4", "--no-progress"};
  gpu.placement = {"--device", "cuda", "--jit", "off"};
  gpu_swapped.placement = {"--jit", "off", "--device", "cuda"};
  auto a = expandStudy(base, diags), d = expandStudy(defaults, diags), t = expandStudy(threads, diags);
  auto g = expandStudy(gpu, diags), s = expandStudy(gpu_swapped, diags);
  ASSERT_TRUE(a && d && t && g && s) << diags;
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].plan_hash, (*d)[i].plan_hash);
    EXPECT_EQ((*a)[i].plan_hash, (*t)[i].plan_hash);
    EXPECT_NE((*a)[i].plan_hash, (*g)[i].plan_hash);
    EXPECT_EQ((*g)[i].plan_hash, (*s)[i].plan_hash);
  }
}

// A job.json of a study from before the threads left the hash holds
// stableHash(identity + "\nposc run" + flags as typed + " --threads N"),
// chained through the warm starts as now. It is recognised, with N read from
// the run's plan.txt, so that a study continued after the upgrade skips its
// finished runs and continues its interrupted ones.
TEST(StudyJobs, ARecordOfAnOlderStudyIsRecognisedByTheThreadsItsRunUsed) {
  const fs::path out = scratch("hash_legacy");
  std::string diags;
  auto jobs = expandStudy(decayAndSink(out), diags);
  ASSERT_TRUE(jobs) << diags;
  const Job& decay = (*jobs)[0];
  const Job& sink = (*jobs)[1];
  ASSERT_EQ(sink.after, std::optional<size_t>(0));
  // The legacy texts are the identity the hash holds now, plus "\nposc run".
  const std::string tail = "\nposc run";
  ASSERT_EQ(decay.legacy_chain.size(), 1u);
  ASSERT_EQ(sink.legacy_chain.size(), 2u);
  ASSERT_TRUE(decay.legacy_chain[0].ends_with(tail));
  EXPECT_EQ(driver::stableHash(decay.legacy_chain[0].substr(0, decay.legacy_chain[0].size() - tail.size())),
            decay.plan_hash);
  // The old formula, written out.
  const std::string old_decay = driver::stableHash(decay.legacy_chain[0] + " --threads 2");
  const std::string old_sink =
      driver::stableHash(driver::stableHash(sink.legacy_chain[0] + " --threads 2") + "\nwarm start from " + old_decay);
  EXPECT_EQ(legacyPlanHash(decay, 2), old_decay);
  EXPECT_EQ(legacyPlanHash(sink, 2), old_sink);

  JobRecord done;
  done.done = true;
  done.plan_hash = old_sink;
  writeJobRecord(sink, done);
  const std::string provenance = "# posc 0.1.0\n# source x.pos\n# numerics OpenBLAS; {}; score formulas: fused\n";
  posc::testing::writeFile(sink.out_dir / "plan.txt", fmt::format(fmt::runtime(provenance), "2 CPU threads"));
  EXPECT_EQ(jobState(sink), JobState::Done);
  posc::testing::writeFile(sink.out_dir / "plan.txt", fmt::format(fmt::runtime(provenance), "1 CPU thread"));
  EXPECT_EQ(jobState(sink), JobState::Stale) << "a record of another thread count is another plan's";
  fs::remove(sink.out_dir / "plan.txt");
  EXPECT_EQ(jobState(sink), JobState::Stale);
}

// The documented promise of the hash: a comment edit changes nothing, even one
// that moves every `use` below it to another line (the plan dump names each
// term's source line); a changed rate does change it.
TEST(StudyJobs, ACommentThatMovesLinesKeepsTheHashAndARateChangesIt) {
  const fs::path dir = scratch("moved");
  const std::string study = posc::testing::readFile(POSC_SOURCE_DIR "/examples/addition/study.pos");
  const std::string decay = posc::testing::readFile(POSC_SOURCE_DIR "/examples/addition/rope2d_decay.pos");
  auto hashOf = [&](const std::string& name, const std::string& text) {
    const fs::path folder = dir / name;
    fs::create_directories(folder);
    std::ofstream(folder / "study.pos") << study;
    std::ofstream(folder / "rope2d_decay.pos") << text;
    StudyRequest r;
    r.files = {(folder / "rope2d_decay.pos").string()};
    r.preset = "small";
    r.seeds = std::vector<uint64_t>{0};
    r.out = folder / "out";
    r.posc_binary = "/usr/bin/posc-under-test";
    std::string diags;
    auto jobs = expandStudy(r, diags);
    EXPECT_TRUE(jobs && jobs->size() == 1) << diags;
    return jobs && !jobs->empty() ? jobs->front().plan_hash : std::string();
  };
  const std::string original = hashOf("original", decay);
  const std::string moved = hashOf("moved", "// two more lines of comment\n// above everything\n" + decay);
  const size_t rates = decay.find("linspace(0.5, 0.05)");
  ASSERT_NE(rates, std::string::npos);
  std::string faster = decay;
  faster.replace(rates, std::string("linspace(0.5, 0.05)").size(), "linspace(0.5, 0.35)");
  ASSERT_FALSE(original.empty());
  EXPECT_EQ(original, moved);
  EXPECT_NE(original, hashOf("faster", faster));
}

TEST(StudyJobs, AWarmStartWhoseSourceIsNeitherInTheStudyNorOnDiskIsAnError) {
  const fs::path out = scratch("missing");
  StudyRequest r = decayAndSink(out);
  r.files = {POSC_SOURCE_DIR "/examples/addition/rope2d_decay_sink.pos"};
  const std::string msg = studyErrorOf(r);
  EXPECT_NE(msg.find("rope2d_decay_sink-small seed 0 warm-starts from 'rope2d_decay'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("add its file"), std::string::npos) << msg;
  // With the source's checkpoint in place, the warm start needs no job.
  for (int seed : {0, 1})
    placeFinalCheckpoint(out / ("seed" + std::to_string(seed)) / "rope2d_decay-small" / ("seed" + std::to_string(seed)));
  std::string diags;
  auto jobs = expandStudy(r, diags);
  ASSERT_TRUE(jobs) << diags;
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_FALSE((*jobs)[0].after);
}

// The plan hash names a warm-start file from outside the study by its path;
// the file's content hash, kept in job.json, catches a file replaced there:
// the job is stale and trains again. A record from before the digests is
// trusted as before.
TEST(StudyJobs, AWarmStartFileReplacedAtTheSamePathMakesItsJobStale) {
  const fs::path out = scratch("replaced");
  StudyRequest r = decayAndSink(out);
  r.files = {POSC_SOURCE_DIR "/examples/addition/rope2d_decay_sink.pos"};
  r.seeds = std::vector<uint64_t>{0};
  const fs::path checkpoint = out / "seed0" / "rope2d_decay-small" / "seed0" / "final.pt";
  placeFinalCheckpoint(checkpoint.parent_path());
  std::string diags;
  auto jobs = expandStudy(r, diags);
  ASSERT_TRUE(jobs && jobs->size() == 1) << diags;
  const Job& sink = jobs->front();
  EXPECT_EQ(sink.warm_start_digest, driver::stableHash("x"));
  JobRecord done;
  done.done = true;
  done.plan_hash = sink.plan_hash;
  done.warm_start_digest = sink.warm_start_digest;
  writeJobRecord(sink, done);
  ASSERT_EQ(readJobRecord(sink.out_dir)->warm_start_digest, sink.warm_start_digest);
  EXPECT_EQ(jobState(sink), JobState::Done);

  std::ofstream(checkpoint, std::ios::trunc) << "y";  // retrained elsewhere, or copied over
  auto again = expandStudy(r, diags);
  ASSERT_TRUE(again) << diags;
  EXPECT_EQ(again->front().plan_hash, sink.plan_hash) << "the path, and so the plan, is the same";
  EXPECT_EQ(jobState(again->front()), JobState::Stale);

  JobRecord before_digests = done;
  before_digests.warm_start_digest.clear();
  writeJobRecord(sink, before_digests);
  EXPECT_EQ(posc::testing::readFile((sink.out_dir / "job.json").string()).find("warm_start"), std::string::npos);
  EXPECT_EQ(jobState(again->front()), JobState::Done);

  // A train.init_from path (a safetensors file for every seed) is digested the same way.
  const fs::path weights = out / "weights.safetensors";
  std::ofstream(weights) << "z";
  StudyRequest from_file = decayAndSink(out / "from_file");
  from_file.files = {POSC_SOURCE_DIR "/examples/addition/rope2d_decay.pos"};
  from_file.overrides = {{"train.init_from", "\"" + weights.string() + "\""}};
  auto file_jobs = expandStudy(from_file, diags);
  ASSERT_TRUE(file_jobs && file_jobs->size() == 2) << diags;
  for (const Job& j : *file_jobs) EXPECT_EQ(j.warm_start_digest, driver::stableHash("z")) << j.label();
}

// The training hash: another test length changes every job's plan hash but
// not what it trains, through the warm start too; a record of that training
// makes the job one to evaluate again, when its run's status knows the
// training hash as well (a run of an older version does not). Another rate
// for the source changes the training hash of its warm start.
TEST(StudyJobs, AnotherTestLengthKeepsTheTrainingHashAndEvaluatesAgain) {
  const fs::path out = scratch("reevaluate");
  const std::vector<Job> jobs = seedZeroJobs(out);
  const std::vector<Job> longer = seedZeroJobs(out, {{"task.test_digits", "[3, 5]"}});
  const std::vector<Job> slower = seedZeroJobs(out, {{"train.lr", "1e-4"}});
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_NE(jobs[i].plan_hash, longer[i].plan_hash);
    EXPECT_EQ(jobs[i].training_hash, longer[i].training_hash) << jobs[i].label();
    EXPECT_NE(jobs[i].training_hash, slower[i].training_hash) << jobs[i].label();
  }
  const Job& sink = jobs[1];
  ASSERT_TRUE(sink.after);
  JobRecord done;
  done.done = true;
  done.plan_hash = sink.plan_hash;
  done.training_hash = sink.training_hash;
  writeJobRecord(sink, done);
  EXPECT_NE(posc::testing::readFile((sink.out_dir / "job.json").string()).find(R"("training_hash":")"),
            std::string::npos);
  EXPECT_EQ(readJobRecord(sink.out_dir)->training_hash, sink.training_hash);
  EXPECT_EQ(jobState(sink), JobState::Done);
  posc::testing::writeFile(sink.out_dir / "status.json",
                           R"({"state":"finished","pid":1,"plan_hash":"p","seeds_done":[0],"metrics_lines":0,)"
                           R"("seed":null,"step":0,"message":""})"
                           "\n");
  EXPECT_EQ(jobState(longer[1]), JobState::Stale) << "its run's status predates training hashes";
  posc::testing::writeFile(sink.out_dir / "status.json",
                           R"({"state":"finished","pid":1,"plan_hash":"p","training_hash":"t","seeds_done":[0],)"
                           R"("metrics_lines":0,"seed":null,"step":0,"message":""})"
                           "\n");
  EXPECT_EQ(jobState(longer[1]), JobState::Reevaluate);
  EXPECT_STREQ(describe(JobState::Reevaluate), "evaluation changed (trained weights kept)");
  EXPECT_EQ(jobState(slower[1]), JobState::Stale);
}

// A record of a version before training hashes: a finished run without a
// warm start is evaluated again when its plan.json, read back, gives the
// record's plan hash and the job's training hash; a plan.json of another
// plan (or none) leaves it stale, and a warm start always is.
TEST(StudyJobs, AFinishedRunOfAnOlderVersionIsKnownByItsPlanJson) {
  const fs::path out = scratch("reevaluate_legacy");
  const std::vector<Job> jobs = seedZeroJobs(out);
  const std::vector<Job> longer = seedZeroJobs(out, {{"task.test_digits", "[3, 5]"}});
  const Job& decay = jobs[0];
  ASSERT_FALSE(decay.after);
  auto planJsonWith = [&](const std::string& lr) {
    driver::Compilation c;
    driver::CompileRequest request;
    request.path = POSC_SOURCE_DIR "/examples/addition/rope2d_decay.pos";
    request.experiment.experiment = "rope2d_decay";
    request.experiment.preset = "small";
    if (!lr.empty()) request.experiment.overrides.push_back({"train.lr", lr});
    request.experiment.overrides.push_back({"train.seeds", "[0]"});
    EXPECT_TRUE(c.compile(request)) << c.diags.render(false);
    return c.plan ? plan::planJson(*c.plan) : std::string();
  };
  for (const Job& j : jobs) {
    JobRecord done;  // as written before 2026-12-07: no training hash
    done.done = true;
    done.plan_hash = j.plan_hash;
    writeJobRecord(j, done);
    posc::testing::writeFile(j.out_dir / "status.json",
                             R"({"state":"finished","pid":1,"plan_hash":"p","seeds_done":[0],"metrics_lines":0,)"
                             R"("seed":null,"step":0,"message":""})"
                             "\n");
    EXPECT_EQ(jobState(j), JobState::Done);
  }
  EXPECT_EQ(jobState(longer[0]), JobState::Stale) << "no plan.json";
  posc::testing::writeFile(decay.out_dir / "plan.json", planJsonWith(""));
  EXPECT_EQ(jobState(longer[0]), JobState::Reevaluate);
  EXPECT_EQ(jobState(longer[1]), JobState::Stale) << "a warm start";
  posc::testing::writeFile(decay.out_dir / "plan.json", planJsonWith("1e-4"));
  EXPECT_EQ(jobState(longer[0]), JobState::Stale) << "the plan read back is not the one the record names";
  posc::testing::writeFile(decay.out_dir / "plan.json", "{not json");
  EXPECT_EQ(jobState(longer[0]), JobState::Stale);
}

// A sweep over the warm start's own settings (here an argument of its sink)
// continues from runs made without the grid: the study folder's, since the
// grid point's folder has none. Each grid job reads them through
// --init-root, and its hash names the checkpoint.
TEST(StudyJobs, AGridWarmStartsFromTheStudyFoldersRunsWhenItsPointHasNone) {
  const fs::path out = scratch("grid-warm");
  StudyRequest r = decayAndSink(out);
  r.files = {POSC_SOURCE_DIR "/examples/addition/rope2d_decay_sink.pos"};
  r.seeds = std::vector<uint64_t>{0};
  r.grid = {{"attention.position_free_sink.kinds", {"[separator]", "[separator, special]"}}};
  const std::string msg = studyErrorOf(r);
  EXPECT_NE(msg.find("or '" + (out / "seed0/rope2d_decay-small/seed0/final.pt").string() + "'"), std::string::npos) << msg;
  placeFinalCheckpoint(out / "seed0" / "rope2d_decay-small" / "seed0");
  std::string diags;
  auto jobs = expandStudy(r, diags);
  ASSERT_TRUE(jobs) << diags;
  ASSERT_EQ(jobs->size(), 2u);
  for (const Job& j : *jobs) {
    EXPECT_FALSE(j.after);
    EXPECT_EQ(j.out_dir.parent_path().parent_path(), out / j.point_folder);
    const auto root = std::find(j.command.begin(), j.command.end(), "--init-root");
    ASSERT_NE(root, j.command.end()) << j.label();
    EXPECT_EQ(*(root + 1), (out / "seed0").string());
  }
  EXPECT_NE((*jobs)[0].plan_hash, (*jobs)[1].plan_hash);
  // A run in the point's own folder comes first, read without --init-root.
  placeFinalCheckpoint(out / (*jobs)[1].point_folder / "seed0" / "rope2d_decay-small" / "seed0");
  auto again = expandStudy(r, diags);
  ASSERT_TRUE(again) << diags;
  EXPECT_EQ(std::count((*again)[1].command.begin(), (*again)[1].command.end(), "--init-root"), 0);
  EXPECT_NE((*again)[1].plan_hash, (*jobs)[1].plan_hash);
  EXPECT_EQ((*again)[0].plan_hash, (*jobs)[0].plan_hash);
}

TEST(StudyJobs, TheSameExperimentTwiceIsAnError) {
  StudyRequest r = decayAndSink(scratch("twice"));
  r.files = {POSC_SOURCE_DIR "/examples/addition/rope2d.pos", POSC_SOURCE_DIR "/examples/addition/rope2d.pos"};
  std::string diags;
  EXPECT_THROW(expandStudy(r, diags), StudyError);
}

TEST(StudyJobs, AFileWithErrorsGivesItsLocatedDiagnostics) {
  const fs::path dir = scratch("bad");
  const fs::path file = dir / "bad.pos";
  std::ofstream(file) << "experiment bad {\n  model { layers = two }\n}\n";
  StudyRequest r;
  r.files = {file.string()};
  r.out = dir / "out";
  std::string diags;
  EXPECT_FALSE(expandStudy(r, diags));
  EXPECT_NE(diags.find("bad.pos:2:"), std::string::npos) << diags;
  EXPECT_FALSE(fs::exists(dir / "out")) << "nothing is written for a study that does not compile";
}

TEST(StudyJobs, OrderingKeepsTheGivenOrderAndRejectsCycles) {
  std::vector<Job> jobs(4);
  for (size_t i = 0; i < jobs.size(); ++i) jobs[i].experiment = "j" + std::to_string(i);
  jobs[0].after = 3;  // j0 starts from j3
  jobs[2].after = 1;
  auto ordered = orderByWarmStart(jobs);
  std::vector<std::string> names;
  for (const Job& j : ordered) names.push_back(j.experiment);
  EXPECT_EQ(names, (std::vector<std::string>{"j3", "j0", "j1", "j2"}));
  EXPECT_EQ(ordered[1].after, 0u);
  EXPECT_EQ(ordered[3].after, 2u);
  jobs[3].after = 0;
  EXPECT_THROW(orderByWarmStart(jobs), StudyError);
}

}  // namespace
}  // namespace posc::study
