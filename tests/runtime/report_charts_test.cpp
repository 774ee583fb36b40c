// The training charts of a run's report (runtime/report/report.h), from a
// hand-written metrics.jsonl: a loss that spans decades goes on a log axis,
// a seed logged once is drawn as a point, the learning rate and throughput
// get their own charts, and evaluations during training become one series
// per length, the mean over seeds, lengths in numeric order.
#include <gtest/gtest.h>

#include <string>

#include "runtime/report/report.h"

namespace {

using posc::report::trainingCharts;

TEST(ReportCharts, LossOnALogAxisSinglePointsShownLearningRateAndThroughputApart) {
  const std::string log =
      "{\"seed\":0,\"step\":50,\"loss\":2.4,\"lr\":5e-05,\"tokens_per_s\":5000.0}\n"
      "{\"seed\":0,\"step\":100,\"loss\":3.7e-08,\"lr\":1e-04,\"tokens_per_s\":5200.0}\n"
      "{\"seed\":1,\"step\":50,\"loss\":1.5,\"lr\":5e-05,\"tokens_per_s\":4800.0}\n";
  const auto charts = trainingCharts(log, "decay");
  EXPECT_TRUE(charts.loss.log_y);
  ASSERT_EQ(charts.loss.series.size(), 2u);
  EXPECT_EQ(charts.loss.series[0].style, posc::plot::Style::Line);
  EXPECT_EQ(charts.loss.series[1].style, posc::plot::Style::LineAndPoints);  // seed 1: one point
  EXPECT_EQ(charts.lr.series[0].y, (std::vector<double>{5e-05, 1e-04}));
  EXPECT_EQ(charts.throughput.series[1].y, (std::vector<double>{4800.0}));
  EXPECT_FALSE(charts.accuracy);
  // A loss within two decades stays on a linear axis from 0.
  const auto flat = trainingCharts("{\"seed\":0,\"step\":1,\"loss\":2.0}\n{\"seed\":0,\"step\":2,\"loss\":0.5}\n", "x");
  EXPECT_FALSE(flat.loss.log_y);
  EXPECT_EQ(flat.loss.y_min, 0.0);
}

TEST(ReportCharts, AccuracyDuringTrainingIsTheMeanOverSeedsPerLength) {
  const std::string log =
      "{\"seed\":0,\"step\":100,\"eval\":{\"10\":1.0,\"20\":0.5,\"100\":0.0}}\n"
      "{\"seed\":1,\"step\":100,\"eval\":{\"10\":0.5,\"20\":0.25,\"100\":0.0}}\n"
      "{\"seed\":0,\"step\":200,\"eval\":{\"10\":1.0,\"20\":1.0,\"100\":0.5}}\n";
  const auto charts = trainingCharts(log, "decay");
  ASSERT_TRUE(charts.accuracy);
  const auto& s = charts.accuracy->series;
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].name, "10 digits");
  EXPECT_EQ(s[1].name, "20 digits");
  EXPECT_EQ(s[2].name, "100 digits");
  EXPECT_EQ(s[0].x, (std::vector<double>{100, 200}));
  EXPECT_EQ(s[0].y, (std::vector<double>{75.0, 100.0}));  // (100 + 50) / 2, then seed 0 alone
  EXPECT_EQ(s[1].y, (std::vector<double>{37.5, 100.0}));
  EXPECT_TRUE(charts.loss.series.empty());
}

}  // namespace
