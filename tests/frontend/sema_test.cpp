// Semantic analysis: values computed at compile time, formula translation,
// the order of extends / presets / overrides, and multi-error reporting.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>

#include "compiler/driver/compile.h"
#include "compiler/sema/evaluate.h"

namespace {

using posc::plan::FormulaNode;

// Compiles `text` as a file in a temporary folder (imports resolve to stdlib).
struct Compiled {
  posc::driver::Compilation c;
  bool ok = false;
  Compiled(const std::string& text, std::vector<posc::sema::Override> overrides = {},
           std::optional<std::string> preset = std::nullopt) {
    std::string dir = testing::TempDir();
    std::string path = dir + "/sema_test_input.pos";
    std::ofstream(path) << text;
    posc::driver::CompileRequest r;
    r.path = path;
    r.experiment.overrides = std::move(overrides);
    r.experiment.preset = preset;
    ok = c.compile(r);
  }
  const posc::plan::ExperimentPlan& plan() const { return *c.plan; }
};

}  // namespace

TEST(Evaluate, AlibiSlopesMatchThePaper) {
  // Power of two: 2^(-8/n * i), i = 1..n.
  auto s8 = posc::sema::alibiSlopes(8);
  ASSERT_EQ(s8.size(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_DOUBLE_EQ(s8[i], std::pow(2.0, -(i + 1)));
  // Six heads: the 4-head ladder (1/4, 1/16, 1/64, 1/256), then every other
  // slope of the 8-head ladder: 1/2, 1/8.
  auto s6 = posc::sema::alibiSlopes(6);
  std::vector<double> expected = {0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125};
  ASSERT_EQ(s6.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_DOUBLE_EQ(s6[i], expected[i]);
}

TEST(Sema, DecayRatesAndFormula) {
  Compiled x(R"(
import decay
experiment e {
  model { layers = 1  width = 64  heads = 4 }
  attention { use decay(rates = linspace(0.5, 0.2)) }
})");
  ASSERT_TRUE(x.ok) << x.c.diags.render();
  const auto& a = x.plan().attention;
  ASSERT_EQ(a.params.size(), 1u);
  EXPECT_EQ(a.params[0].name, "decay.rate");
  EXPECT_TRUE(a.params[0].per_head);
  EXPECT_FALSE(a.params[0].learned);
  ASSERT_EQ(a.params[0].init.size(), 4u);
  EXPECT_DOUBLE_EQ(a.params[0].init[0], 0.5);
  EXPECT_DOUBLE_EQ(a.params[0].init[1], 0.4);
  EXPECT_DOUBLE_EQ(a.params[0].init[3], 0.2);
  ASSERT_EQ(a.score_terms.size(), 1u);
  const auto& t = a.score_terms[0];
  EXPECT_TRUE(t.exempt_keys.contains(posc::plan::TokenKind::Separator));
  EXPECT_FALSE(t.exempt_keys.contains(posc::plan::TokenKind::Digit));
  EXPECT_TRUE(t.exempt_queries.empty());
  EXPECT_EQ(posc::plan::renderFormula(t.formula, a), "s * exp(-decay.rate[h] * abs(q.column - k.column))");
  // Topological order: every operand precedes its user.
  for (size_t i = 0; i < t.formula.nodes.size(); ++i)
    for (int o : {t.formula.nodes[i].a, t.formula.nodes[i].b, t.formula.nodes[i].c}) EXPECT_LT(o, static_cast<int>(i));
  EXPECT_EQ(t.formula.nodes.back().op, FormulaNode::Op::Mul);
}

TEST(Sema, ConstantsFoldAway) {
  Compiled x(R"(
experiment e {
  model { width = 64  heads = 4 }
  attention { score = s * (2 * 3 + exp(0)) - k.row / (4 - 2) }
})");
  ASSERT_TRUE(x.ok) << x.c.diags.render();
  const auto& f = x.plan().attention.score_terms[0].formula;
  EXPECT_EQ(posc::plan::renderFormula(f, x.plan().attention), "s * 7 - k.row / 2");
  int consts = 0;
  for (const auto& n : f.nodes) consts += n.op == FormulaNode::Op::Const;
  EXPECT_EQ(consts, 2);
  EXPECT_EQ(f.nodes.size(), 7u);  // s, 7, *, k.row, 2, /, -
}

TEST(Sema, ExtendsThenPresetThenOverrides) {
  std::string text = R"(
experiment base {
  model { layers = 6  width = 384 }
  train { steps = 100  lr = 0.001 }
  preset small { model { layers = 2  width = 64  heads = 4 }  train { steps = 10 } }
}
experiment variant extends base {
  train { steps = 200 }
  preset small { train { steps = 20 } }
})";
  Compiled plain(text);
  ASSERT_TRUE(plain.ok);
  EXPECT_EQ(plain.plan().name, "variant");
  EXPECT_EQ(plain.plan().train.steps, 200);
  EXPECT_EQ(plain.plan().model.layers, 6);
  EXPECT_EQ(plain.plan().model.mlp_hidden, 4 * 384);

  Compiled small(text, {}, "small");
  ASSERT_TRUE(small.ok) << small.c.diags.render();
  EXPECT_EQ(small.plan().train.steps, 20);  // the variant's preset refines the base's
  EXPECT_EQ(small.plan().model.layers, 2);
  EXPECT_EQ(small.plan().model.mlp_hidden, 4 * 64);  // derived after the preset

  Compiled overridden(text, {{"train.steps", "7"}, {"train.seeds", "[3, 4]"}, {"model.mlp_hidden", "100"}}, "small");
  ASSERT_TRUE(overridden.ok) << overridden.c.diags.render();
  EXPECT_EQ(overridden.plan().train.steps, 7);
  EXPECT_EQ(overridden.plan().train.seeds, (std::vector<uint64_t>{3, 4}));
  EXPECT_EQ(overridden.plan().model.mlp_hidden, 100);
  EXPECT_EQ(overridden.plan().overrides.size(), 3u);
}

TEST(Sema, AttentionAppendAndReplace) {
  std::string text = R"(
import rope
import sink
experiment base {
  attention { use rope2d() }
}
experiment appended extends base {
  attention += { use position_free_sink(pairs = 16..32) }
}
experiment replaced extends base {
  attention { use rope(channel = position) }
})";
  posc::driver::Compilation c;
  std::string path = testing::TempDir() + "/append.pos";
  std::ofstream(path) << text;
  posc::driver::CompileRequest r;
  r.path = path;
  r.experiment.experiment = "appended";
  ASSERT_TRUE(c.compile(r)) << c.diags.render();
  EXPECT_EQ(c.plan->attention.rotations.size(), 2u);
  ASSERT_EQ(c.plan->attention.key_zeroing.size(), 1u);
  EXPECT_EQ(c.plan->attention.key_zeroing[0].pair_begin, 16);
  EXPECT_EQ(c.plan->attention.key_zeroing[0].pair_end, 32);

  posc::driver::Compilation c2;
  r.experiment.experiment = "replaced";
  ASSERT_TRUE(c2.compile(r));
  ASSERT_EQ(c2.plan->attention.rotations.size(), 1u);
  EXPECT_EQ(c2.plan->attention.rotations[0].channel, posc::plan::Channel::Position);
  EXPECT_EQ(c2.plan->attention.rotations[0].pair_end, 32);
}

TEST(Sema, Rope2dSplitsPairsByRowAndColumn) {
  Compiled x("import rope\nexperiment e { model { width = 64  heads = 4 }  attention { use rope2d(base = 500) } }");
  ASSERT_TRUE(x.ok) << x.c.diags.render();
  const auto& r = x.plan().attention.rotations;
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].channel, posc::plan::Channel::Row);
  EXPECT_EQ(r[0].pair_begin, 0);
  EXPECT_EQ(r[0].pair_end, 4);
  EXPECT_EQ(r[1].channel, posc::plan::Channel::Column);
  EXPECT_EQ(r[1].pair_begin, 4);
  EXPECT_EQ(r[1].pair_end, 8);
  EXPECT_DOUBLE_EQ(r[1].base, 500);
}

TEST(Sema, StretchDistribution) {
  Compiled x("import rope\nexperiment e { attention { use rope(stretch = uniform(1, 4)) } }");
  ASSERT_TRUE(x.ok) << x.c.diags.render();
  const auto& s = x.plan().attention.rotations[0].stretch;
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->kind, posc::plan::Distribution::Kind::Uniform);
  EXPECT_DOUBLE_EQ(s->a, 1);
  EXPECT_DOUBLE_EQ(s->b, 4);
  EXPECT_DOUBLE_EQ(s->eval_value, 1);
}

TEST(Sema, IndependentErrorsAreAllReported) {
  Compiled x(R"(
experiment e {
  model { layrs = 2  mlp = gelo  heads = 0 }
  train { steps = -5  schedule = cosin }
})");
  EXPECT_FALSE(x.ok);
  EXPECT_EQ(x.c.diags.errorCount(), 5);
}

TEST(Sema, BadOverrideIsLocatedInTheOverride) {
  Compiled x("experiment e { }", {{"train.stesp", "10"}, {"train.lr", "0.1 +"}});
  EXPECT_FALSE(x.ok);
  std::string text = x.c.diags.render();
  EXPECT_NE(text.find("unknown train setting 'stesp'"), std::string::npos) << text;
  EXPECT_NE(text.find("did you mean 'steps'?"), std::string::npos) << text;
  EXPECT_NE(text.find("--set train.lr:1:6: error: syntax error"), std::string::npos) << text;
}

// model.init_std and model.embedding_std: positive scales, shown by the plan
// only when set away from the default (so existing plans and their hashes
// stay as they were).
TEST(Sema, InitialScalesArePositiveAndShownWhenSet) {
  Compiled plain("experiment e { }");
  ASSERT_TRUE(plain.ok) << plain.c.diags.render();
  EXPECT_EQ(plain.plan().model.init_std, 0.02);
  EXPECT_EQ(posc::plan::dumpPlan(plain.plan()).find("initial weights"), std::string::npos);
  Compiled set("experiment e { model { init_std = 0.05 } }");
  ASSERT_TRUE(set.ok) << set.c.diags.render();
  EXPECT_EQ(set.plan().model.init_std, 0.05);
  EXPECT_NE(posc::plan::dumpPlan(set.plan()).find("  initial weights N(0, 0.05)\n"), std::string::npos);
  EXPECT_EQ(posc::plan::dumpPlan(set.plan()).find("initial token embeddings"), std::string::npos);
  EXPECT_FALSE(set.plan().model.embedding_std.has_value());
  Compiled emb("experiment e { model { embedding_std = 1 } }");
  ASSERT_TRUE(emb.ok) << emb.c.diags.render();
  EXPECT_EQ(emb.plan().model.embedding_std, 1.0);
  EXPECT_NE(posc::plan::dumpPlan(emb.plan()).find("  initial token embeddings N(0, 1)\n"), std::string::npos);
  Compiled negative("experiment e { model { embedding_std = -1 } }");
  EXPECT_FALSE(negative.ok);
  Compiled zero("experiment e { model { init_std = 0 } }");
  EXPECT_FALSE(zero.ok);
  EXPECT_NE(zero.c.diags.render().find("init_std"), std::string::npos) << zero.c.diags.render();
}

// `--set attention.C.A=value`: an argument of the section's `use C(...)`,
// replaced (given by name or by position) or added, applied after the preset
// and recorded among the plan's overrides; `C#2` picks a second use.
TEST(Sema, AttentionArgumentsAreSetFromTheCommandLine) {
  const std::string text = R"(
import decay, alibi
experiment e {
  model { layers = 1  width = 64  heads = 4 }
  attention {
    use decay(column, linspace(0.5, 0.2))
    use alibi(channel = column, slopes = 0.25, exempt_keys = [separator])
  }
  preset p { attention += { use decay(channel = position, rates = 0.1) } }
})";
  Compiled x(text, {{"attention.alibi.slopes", "0.125"}, {"attention.decay#1.rates", "[1, 2, 3, 4]"}});
  ASSERT_TRUE(x.ok) << x.c.diags.render();
  const auto& a = x.plan().attention;
  ASSERT_EQ(a.params.size(), 2u);
  EXPECT_EQ(a.params[0].name, "decay.rate");
  EXPECT_EQ(a.params[0].init, (std::vector<double>{1, 2, 3, 4}));  // positional argument replaced
  EXPECT_EQ(a.params[1].name, "alibi.slope");
  EXPECT_EQ(a.params[1].init, (std::vector<double>{0.125, 0.125, 0.125, 0.125}));
  // The other arguments are kept: decay still on the column, alibi's exemption.
  ASSERT_EQ(a.score_terms.size(), 2u);
  EXPECT_EQ(posc::plan::renderFormula(a.score_terms[0].formula, a), "s * exp(-decay.rate[h] * abs(q.column - k.column))");
  EXPECT_TRUE(a.score_terms[1].exempt_keys.contains(posc::plan::TokenKind::Separator));
  EXPECT_EQ(x.plan().overrides, (std::vector<std::string>{"attention.alibi.slopes=0.125", "attention.decay#1.rates=[1, 2, 3, 4]"}));

  // After the preset: its second decay is `decay#2`; an argument it does not
  // give is added.
  Compiled second(text, {{"attention.decay#2.exempt_queries", "[digit]"}}, "p");
  ASSERT_TRUE(second.ok) << second.c.diags.render();
  ASSERT_EQ(second.plan().attention.score_terms.size(), 3u);
  EXPECT_TRUE(second.plan().attention.score_terms[0].exempt_queries.empty());
  EXPECT_TRUE(second.plan().attention.score_terms[2].exempt_queries.contains(posc::plan::TokenKind::Digit));
  EXPECT_EQ(second.plan().attention.params[2].init, (std::vector<double>{0.1, 0.1, 0.1, 0.1}));

  // Two `--set`s on one use both apply.
  Compiled both(text, {{"attention.alibi.slopes", "0.5"}, {"attention.alibi.exempt_keys", "[]"}});
  ASSERT_TRUE(both.ok) << both.c.diags.render();
  EXPECT_EQ(both.plan().attention.params[1].init[0], 0.5);
  EXPECT_TRUE(both.plan().attention.score_terms[1].exempt_keys.empty());
}

TEST(Sema, BadAttentionArgumentOverridesAreExplained) {
  const std::string text = R"(
import decay, alibi, rope
experiment e {
  model { layers = 1  width = 64  heads = 4 }
  attention { use rope2d()  use decay()  use decay(channel = position) }
})";
  auto errorOf = [&](const std::string& key, const std::string& value) {
    Compiled x(text, {{key, value}});
    EXPECT_FALSE(x.ok) << key;
    return x.c.diags.render();
  };
  std::string e = errorOf("attention.rope2.base", "10");
  EXPECT_NE(e.find("the attention section uses no component 'rope2'"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'rope2d'?"), std::string::npos) << e;
  EXPECT_NE(e.find("its uses: rope2d, decay"), std::string::npos) << e;
  e = errorOf("attention.rope2d.bas", "10");
  EXPECT_NE(e.find("component 'rope2d' has no parameter 'bas'"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'base'?"), std::string::npos) << e;
  e = errorOf("attention.decay.rates", "0.1");
  EXPECT_NE(e.find("'decay' is used 2 times"), std::string::npos) << e;
  EXPECT_NE(e.find("attention.decay#1.rates"), std::string::npos) << e;
  EXPECT_NE(e.find("sema_test_input.pos:5:29: note: used here"), std::string::npos) << e;
  e = errorOf("attention.decay#3.rates", "0.1");
  EXPECT_NE(e.find("'decay' is used 2 times"), std::string::npos) << e;
  e = errorOf("attention.decay#0.rates", "0.1");
  EXPECT_NE(e.find("names no use"), std::string::npos) << e;
  e = errorOf("attention.rope2d", "10");
  EXPECT_NE(e.find("needs attention.COMPONENT.ARGUMENT=value"), std::string::npos) << e;
  // The value is checked as the argument, located in the override.
  e = errorOf("attention.decay#2.rates", "-1");
  EXPECT_NE(e.find("decay rates must be positive"), std::string::npos) << e;
  e = errorOf("attention.rope2d.base", "\"ten\"");
  EXPECT_NE(e.find("--set attention.rope2d.base:1:1: error:"), std::string::npos) << e;
}
