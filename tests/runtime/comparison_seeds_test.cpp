// The comparison page (runtime/report/comparison.h) from hand-made run
// summaries: a variant measured on one seed beside others is flagged, since
// one seed's accuracy past the training length ranks nothing; with two seeds
// or more everywhere, or a single variant, the page says nothing of it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/report/comparison.h"

namespace {

using posc::report::RunSummary;

RunSummary run(const std::string& variant, std::vector<uint64_t> seeds) {
  RunSummary r;
  r.dir = "/nonexistent/" + variant;
  r.variant = r.experiment = variant;
  for (uint64_t s : seeds)
    for (int digits : {10, 20}) r.records.push_back({s, digits, digits == 10 ? 90 : static_cast<int>(s) * 40, 90});
  return r;
}

const char* kFlag = "measured on one seed.**";

TEST(ComparisonSeeds, AVariantOnOneSeedBesideOthersIsFlagged) {
  const auto page = posc::report::buildComparison({run("decay", {0}), run("sink", {0, 1, 2})}, "/tmp");
  EXPECT_NE(page.markdown.find("**decay is measured on one seed.** A difference to it is not a ranking"),
            std::string::npos)
      << page.markdown;
  EXPECT_NE(page.html.find("measured on one seed."), std::string::npos);

  const auto both = posc::report::buildComparison({run("decay", {0}), run("sink", {1})}, "/tmp");
  EXPECT_NE(both.markdown.find("**decay, sink are measured on one seed.** A difference to them"), std::string::npos)
      << both.markdown;
}

TEST(ComparisonSeeds, SeveralSeedsEverywhereOrASingleVariantSayNothing) {
  EXPECT_EQ(posc::report::buildComparison({run("decay", {0, 1}), run("sink", {0, 1, 2})}, "/tmp")
                .markdown.find(kFlag),
            std::string::npos);
  EXPECT_EQ(posc::report::buildComparison({run("decay", {0})}, "/tmp").markdown.find(kFlag), std::string::npos);
}

}  // namespace
