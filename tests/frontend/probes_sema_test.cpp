// The probes section: defaults taken from the task, explicit settings, a
// preset replacing a probe of the same kind, and located errors.
#include <gtest/gtest.h>

#include <fstream>

#include "compiler/driver/compile.h"

namespace {

using posc::plan::ProbeKind;

struct CompiledProbes {
  posc::driver::Compilation c;
  bool ok = false;
  CompiledProbes(const std::string& text, std::optional<std::string> preset = std::nullopt,
                 std::vector<std::string> probe_calls = {}) {
    std::string path = testing::TempDir() + "/probes_sema_test_input.pos";
    std::ofstream(path) << text;
    posc::driver::CompileRequest r;
    r.path = path;
    r.experiment.preset = preset;
    r.experiment.probe_calls = std::move(probe_calls);
    ok = c.compile(r);
  }
};

const char* kSource = R"(
experiment e {
  task { train_max_digits = 10  test_digits = [10, 40, 100]  problems_per_length = 50  test_seed = 7 }
  model { layers = 3  width = 64  heads = 4 }
  probes {
    reach()
    kernel(place = 4, sweep = -30..31, layer = 2, head = auto)
    bands(lengths = 20..41, step = 10)
    teacher_forced(problems = 20)
    stop()
  }
  preset small {
    task { train_max_digits = 5 }
    probes { reach(lengths = [3, 6], threshold = 0.5, seed = 3) }
  }
}
)";

}  // namespace

TEST(Probes, DefaultsComeFromTheTask) {
  CompiledProbes c(kSource);
  ASSERT_TRUE(c.ok) << c.c.diags.render();
  const auto& probes = c.c.plan->probes;
  ASSERT_EQ(probes.size(), 5u);
  EXPECT_EQ(probes[0].kind, ProbeKind::Reach);
  EXPECT_EQ(probes[0].lengths, (std::vector<int>{10, 40, 100}));
  EXPECT_EQ(probes[0].problems, 50);
  EXPECT_EQ(probes[0].problem_seed, 7u);
  EXPECT_DOUBLE_EQ(probes[0].threshold, 0.9);

  EXPECT_EQ(probes[1].kind, ProbeKind::Kernel);
  EXPECT_EQ(probes[1].place, 4);
  EXPECT_EQ(probes[1].length, 10);  // the training length
  EXPECT_EQ(probes[1].sweep_begin, -30);
  EXPECT_EQ(probes[1].sweep_end, 31);
  EXPECT_EQ(probes[1].head.layer, 2);
  EXPECT_EQ(probes[1].head.head, -1);

  EXPECT_EQ(probes[2].kind, ProbeKind::Bands);
  EXPECT_EQ(probes[2].lengths, (std::vector<int>{20, 30, 40}));
  EXPECT_EQ(probes[2].place, 5);  // half the training length

  EXPECT_EQ(probes[3].kind, ProbeKind::TeacherForced);
  EXPECT_EQ(probes[3].length, 100);  // the longest test length
  EXPECT_EQ(probes[3].problems, 20);
  EXPECT_EQ(probes[3].lookup_heads, 2);

  EXPECT_EQ(probes[4].kind, ProbeKind::Stop);
  EXPECT_EQ(probes[4].lengths, (std::vector<int>{10, 100}));  // training and longest test length
  EXPECT_EQ(probes[4].problems, 60);
  EXPECT_EQ(probes[4].problem_seed, 7u);
}

TEST(Probes, PresetReplacesAProbeOfTheSameKind) {
  CompiledProbes c(kSource, "small");
  ASSERT_TRUE(c.ok) << c.c.diags.render();
  const auto& probes = c.c.plan->probes;
  ASSERT_EQ(probes.size(), 5u);
  EXPECT_EQ(probes[0].lengths, (std::vector<int>{3, 6}));
  EXPECT_DOUBLE_EQ(probes[0].threshold, 0.5);
  EXPECT_EQ(probes[0].problem_seed, 3u);
  EXPECT_EQ(probes[1].length, 5);  // defaults follow the preset's task
  EXPECT_EQ(probes[4].lengths, (std::vector<int>{5, 100}));
}

TEST(Probes, PlaceBeyondTheProblemIsReportedAtTheArgument) {
  CompiledProbes c(R"(
experiment e {
  probes { kernel(place = 30, length = 12) }
}
)");
  EXPECT_FALSE(c.ok);
  const std::string out = c.c.diags.render();
  EXPECT_NE(out.find(":3:27: error: answer place 30 has no operand digit in its column at 12 digits"), std::string::npos)
      << out;
  EXPECT_NE(out.find("help: choose a place in 1..12"), std::string::npos) << out;
}

// `posc probe --probe 'CALL'`: a call from the command line comes after the
// preset, so it replaces the preset's probe of its kind whole (what it does
// not say takes the defaults, not the declared values), and adds a kind the
// file does not declare; its errors are located in the argument.
TEST(Probes, CommandLineCallReplacesTheDeclaredProbeOfItsKind) {
  CompiledProbes c(kSource, "small", {"reach(lengths = [200, 400])", "sink_share(problems = 3)"});
  ASSERT_TRUE(c.ok) << c.c.diags.render();
  const auto& probes = c.c.plan->probes;
  ASSERT_EQ(probes.size(), 6u);
  EXPECT_EQ(probes[0].kind, ProbeKind::Reach);
  EXPECT_EQ(probes[0].lengths, (std::vector<int>{200, 400}));
  EXPECT_DOUBLE_EQ(probes[0].threshold, 0.9);
  EXPECT_EQ(probes[0].problem_seed, 7u);
  EXPECT_EQ(probes[5].kind, ProbeKind::SinkShare);
  EXPECT_EQ(probes[5].problems, 3);

  CompiledProbes bad(kSource, std::nullopt, {"reach(lengths = [3], threshold = 2)"});
  EXPECT_FALSE(bad.ok);
  const std::string out = bad.c.diags.render();
  EXPECT_NE(out.find("--probe:1:34: error:"), std::string::npos) << out;

  CompiledProbes not_a_call(kSource, std::nullopt, {"lengths = [3]"});
  EXPECT_FALSE(not_a_call.ok);
  CompiledProbes number(kSource, std::nullopt, {"3 + 4"});
  EXPECT_FALSE(number.ok);
  EXPECT_NE(number.c.diags.render().find("--probe takes a declared probe's name or a probe call"), std::string::npos)
      << number.c.diags.render();
}
