// The bf16 check: bf16_mixed on a CPU without native bf16 products is warned
// about at `model.precision`; on a CPU with them, or off the CPU, it is not.
#include <gtest/gtest.h>

#include <fstream>

#include "compiler/driver/compile.h"
#include "compiler/sema/resources.h"

namespace {

using posc::Severity;

constexpr const char* kBf16Experiment = R"(experiment e {
  model {
    layers = 1  width = 32  heads = 2
    precision = bf16_mixed
  }
})";

// Warnings of compiling `text` (which must compile).
std::vector<posc::Diagnostic> warningsOf(const std::string& text, bool on_cpu) {
  const std::string path = testing::TempDir() + "/precision_test_input.pos";
  std::ofstream(path) << text;
  posc::driver::Compilation c;
  posc::driver::CompileRequest r;
  r.path = path;
  r.experiment.on_cpu = on_cpu;
  EXPECT_TRUE(c.compile(r)) << c.diags.render();
  std::vector<posc::Diagnostic> out;
  for (const auto& d : c.diags.all())
    if (d.severity == Severity::Warning) out.push_back(d);
  return out;
}

}  // namespace

TEST(Precision, CpuFlagsWithNativeBf16) {
  EXPECT_TRUE(posc::sema::flagsHaveNativeBf16(" fpu avx2 avx512f avx512_bf16 avx512_vnni"));
  EXPECT_TRUE(posc::sema::flagsHaveNativeBf16("avx512f amx_bf16 amx_tile"));
  EXPECT_TRUE(posc::sema::flagsHaveNativeBf16("amx_bf16"));
  // AVX-512 alone, or flags that only contain the words, are not enough.
  EXPECT_FALSE(posc::sema::flagsHaveNativeBf16("fpu avx2 fma avx512f avx512bw avx512vl avx512_vnni"));
  EXPECT_FALSE(posc::sema::flagsHaveNativeBf16("avx512_bf16x amx_bf16_ avx512_fp16"));
  EXPECT_FALSE(posc::sema::flagsHaveNativeBf16(""));
}

TEST(Precision, EmulatedBf16IsWarnedAtTheSetting) {
  posc::SourceManager sources;
  const int32_t file = sources.add("p.pos", kBf16Experiment);
  posc::DiagnosticEngine diags(sources);
  posc::plan::ExperimentPlan plan;
  plan.model.precision = posc::plan::Precision::Bf16Mixed;
  const std::string text = kBf16Experiment;
  const uint32_t at = static_cast<uint32_t>(text.find("precision"));
  posc::sema::SettingsContext ctx{plan, diags, {}, {{"model.precision", {file, at, at + 9}}}};

  posc::sema::checkPrecision({file, 0, 10}, ctx, /*native_bf16=*/true);
  EXPECT_TRUE(diags.all().empty());

  posc::sema::checkPrecision({file, 0, 10}, ctx, /*native_bf16=*/false);
  ASSERT_EQ(diags.all().size(), 1u);
  const posc::Diagnostic& d = diags.all()[0];
  EXPECT_EQ(d.severity, Severity::Warning);
  EXPECT_EQ(d.range.begin, at);
  EXPECT_NE(d.message.find("emulated on this CPU"), std::string::npos) << d.message;
  EXPECT_NE(d.hint.find("precision = f32"), std::string::npos) << d.hint;
  const std::string shown = diags.render(d);
  EXPECT_NE(shown.find("p.pos:4:5"), std::string::npos) << shown;
  EXPECT_EQ(diags.errorCount(), 0);

  // f32 is never warned about.
  plan.model.precision = posc::plan::Precision::F32;
  posc::sema::checkPrecision({file, 0, 10}, ctx, /*native_bf16=*/false);
  EXPECT_EQ(diags.all().size(), 1u);
}

TEST(Precision, CompileWarnsOnlyWhereThisCpuEmulatesBf16) {
  const auto on_cpu = warningsOf(kBf16Experiment, /*on_cpu=*/true);
  EXPECT_EQ(on_cpu.size(), posc::sema::cpuHasNativeBf16() ? 0u : 1u);
  // A run on a GPU (`posc run --device cuda`) is not judged by this CPU.
  EXPECT_TRUE(warningsOf(kBf16Experiment, /*on_cpu=*/false).empty());
}
