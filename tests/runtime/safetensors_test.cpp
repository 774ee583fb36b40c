// safetensors checkpoints:
//   - a file written byte by byte here (header length, JSON, raw floats) reads
//     back as the tensors it spells, so the reader follows the format and not
//     only posc's writer;
//   - a model round-trips through its GPT names exactly, with its shape and
//     plan in the metadata;
//   - the GPT name table, both ways, for every kind of posc tensor;
//   - broken files and misfitting tensors are errors that name the problem;
//     a warm start keeps posc's own extras fresh when the file lacks them.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstring>
#include <fstream>
#include <map>

#include "runtime/model/gpt.h"
#include "runtime/train/safetensors.h"
#include "tests/runtime/train_test_plans.h"

namespace {

using namespace posc;
namespace fs = std::filesystem;

std::string littleEndian64(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  return s;
}

void writeBytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

// A file of two tensors: "a" F32 [2, 2] = 1, 2, 3, 4 and "b" F64 [1] = 0.5.
std::string handWrittenFile(const std::string& header_override = "") {
  std::string header = header_override.empty()
                           ? R"({"__metadata__":{"format":"test"},"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
                             R"("b":{"dtype":"F64","shape":[1],"data_offsets":[16,24]}})"
                           : header_override;
  std::string data(24, '\0');
  const float a[4] = {1, 2, 3, 4};
  const double b = 0.5;
  std::memcpy(data.data(), a, 16);  // this machine is little-endian, as the format
  std::memcpy(data.data() + 16, &b, 8);
  return littleEndian64(header.size()) + header + data;
}

TEST(Safetensors, ReadsAFileWrittenByHand) {
  posc::testing::ScratchDir dir("safetensors");
  writeBytes(dir.path() / "x.safetensors", handWrittenFile());
  const train::SafetensorsFile f = train::readSafetensors(dir.path() / "x.safetensors");
  ASSERT_EQ(f.tensors.size(), 2u);
  EXPECT_EQ(f.metadata.at("format"), "test");
  std::map<std::string, torch::Tensor> t(f.tensors.begin(), f.tensors.end());
  EXPECT_EQ(t["a"].scalar_type(), torch::kFloat);
  EXPECT_TRUE(torch::equal(t["a"], torch::tensor({1.0f, 2.0f, 3.0f, 4.0f}).reshape({2, 2})));
  EXPECT_EQ(t["b"].scalar_type(), torch::kDouble);
  EXPECT_EQ(t["b"].item<double>(), 0.5);
}

TEST(Safetensors, WritesWhatItReadsWithAlignedData) {
  posc::testing::ScratchDir dir("safetensors");
  const train::NamedTensors in = {{"x", torch::arange(6, torch::kFloat).reshape({2, 3})},
                                  {"y", torch::tensor({7L, -8L})},
                                  {"z", torch::zeros({0, 4}, torch::kDouble)}};
  train::writeSafetensors(in, {{"k", "v"}}, dir.path() / "w.safetensors");
  std::ifstream file(dir.path() / "w.safetensors", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(file)), {});
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[static_cast<size_t>(i)])) << (8 * i);
  EXPECT_EQ(n % 8, 0u) << "the header is padded to a multiple of 8";
  EXPECT_EQ(bytes.size(), 8 + n + 6 * 4 + 2 * 8);
  const train::SafetensorsFile back = train::readSafetensors(dir.path() / "w.safetensors");
  ASSERT_EQ(back.tensors.size(), 3u);
  EXPECT_EQ(back.metadata.at("k"), "v");
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(back.tensors[i].first, in[i].first);
    EXPECT_TRUE(torch::equal(back.tensors[i].second, in[i].second)) << in[i].first;
  }
}

TEST(Safetensors, GptNamesBothWays) {
  const std::pair<const char*, const char*> table[] = {
      {"tok_emb.weight", "transformer.wte.weight"},
      {"abs_emb0.weight", "transformer.wpe.weight"},
      {"block0.norm1.weight", "transformer.h.0.ln_1.weight"},
      {"block11.norm1.bias", "transformer.h.11.ln_1.bias"},
      {"block3.attn.qkv.weight", "transformer.h.3.attn.c_attn.weight"},
      {"block3.attn.out.bias", "transformer.h.3.attn.c_proj.bias"},
      {"block1.norm2.weight", "transformer.h.1.ln_2.weight"},
      {"block1.mlp.fc1.weight", "transformer.h.1.mlp.c_fc.weight"},
      {"block1.mlp.fc2.bias", "transformer.h.1.mlp.c_proj.bias"},
      {"norm_f.weight", "transformer.ln_f.weight"},
      {"lm_head.weight", "lm_head.weight"},
      {"block0.attn.null_value", "posc.block0.attn.null_value"},
      {"score_params.decay_rate", "posc.score_params.decay_rate"},
      {"abs_emb1.weight", "posc.abs_emb1.weight"},
  };
  for (const auto& [posc_name, gpt] : table) {
    EXPECT_EQ(train::gptName(posc_name), gpt);
    EXPECT_EQ(train::poscName(gpt), std::optional<std::string>(posc_name));
  }
  EXPECT_EQ(train::poscName("transformer.h.0.attn.bias"), std::nullopt);
}

TEST(Safetensors, ModelRoundTripsWithItsShapeAndPlanInTheMetadata) {
  posc::testing::ScratchDir dir("safetensors");
  plan::ExperimentPlan p = posc::testing::tinyAdditionPlan();
  posc::testing::addLearnedDecay(p);
  torch::manual_seed(1);
  model::Gpt a(p, 16);
  train::saveSafetensorsCheckpoint(*a, p, dir.path() / "m.safetensors");
  const train::SafetensorsFile f = train::readSafetensors(dir.path() / "m.safetensors");
  EXPECT_EQ(f.metadata.at("format"), "pt");
  EXPECT_EQ(f.metadata.at("posc_format"), "posc-gpt");
  EXPECT_EQ(f.metadata.at("n_layer"), "2");
  EXPECT_EQ(f.metadata.at("n_embd"), "64");
  EXPECT_EQ(f.metadata.at("n_head"), "4");
  EXPECT_EQ(f.metadata.at("head_dim"), "16");
  EXPECT_EQ(f.metadata.at("vocab_size"), "16");
  EXPECT_EQ(f.metadata.at("plan"), plan::dumpPlan(p));
  std::map<std::string, torch::Tensor> by(f.tensors.begin(), f.tensors.end());
  EXPECT_EQ(by.at("transformer.h.1.attn.c_attn.weight").sizes(), (std::vector<int64_t>{3 * 64, 64}));
  EXPECT_EQ(by.count("posc.score_params.decay_rate"), 1u);

  torch::manual_seed(2);
  model::Gpt b(p, 16);
  const train::WarmStartReport r = train::warmStartSafetensors(*b, dir.path() / "m.safetensors");
  EXPECT_TRUE(r.kept_fresh.empty());
  EXPECT_TRUE(r.unused.empty());
  auto pa = a->named_parameters(), pb = b->named_parameters();
  for (const auto& item : pa) EXPECT_TRUE(torch::equal(item.value(), pb[item.key()])) << item.key();
}

TEST(Safetensors, BrokenFilesAreNamedErrors) {
  posc::testing::ScratchDir dir("safetensors");
  const fs::path f = dir.path() / "bad.safetensors";
  auto expectError = [&](const std::string& bytes, const std::string& message) {
    writeBytes(f, bytes);
    try {
      train::readSafetensors(f);
      ADD_FAILURE() << "no error for: " << message;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(f.string()), std::string::npos) << e.what();
    }
  };
  expectError("abc", "shorter than its 8-byte header length");
  expectError(littleEndian64(1000) + "{}", "its header claims 1000 bytes");
  expectError(littleEndian64(5) + "{\"a\":", "its header is not JSON");
  expectError(handWrittenFile(R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,40]}})"),
              "tensor 'a': bytes 0..40 lie outside the 24 bytes of data");
  expectError(handWrittenFile(R"({"a":{"dtype":"F32","shape":[3,2],"data_offsets":[0,16]}})"),
              "tensor 'a': shape [3, 2] of F32 needs 24 bytes, its offsets span 16");
  expectError(handWrittenFile(R"({"a":{"dtype":"Q4","shape":[2],"data_offsets":[0,2]}})"), "unknown dtype \"Q4\"");
  expectError(handWrittenFile(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})"),
              "shape holds something other than sizes");
}

TEST(Safetensors, WarmStartNamesMissingAndMisshapenTensors) {
  posc::testing::ScratchDir dir("safetensors");
  plan::ExperimentPlan p = posc::testing::tinyAdditionPlan();
  torch::manual_seed(1);
  model::Gpt a(p, 16);
  train::NamedTensors tensors = train::gptTensors(*a);
  // A file without the decay parameter warm-starts a model that has one.
  train::writeSafetensors(tensors, {}, dir.path() / "plain.safetensors");
  plan::ExperimentPlan with_decay = p;
  posc::testing::addLearnedDecay(with_decay);
  model::Gpt b(with_decay, 16);
  const train::WarmStartReport r = train::warmStartSafetensors(*b, dir.path() / "plain.safetensors");
  ASSERT_EQ(r.kept_fresh.size(), 1u);
  EXPECT_EQ(r.kept_fresh[0], "score_params.decay_rate (absent)");
  // Without a GPT tensor, or with one of another shape: an error naming it.
  train::NamedTensors missing;
  for (const auto& t : tensors)
    if (t.first != "transformer.h.1.mlp.c_fc.weight") missing.push_back(t);
  train::writeSafetensors(missing, {}, dir.path() / "missing.safetensors");
  try {
    train::warmStartSafetensors(*b, dir.path() / "missing.safetensors");
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("has no tensor 'transformer.h.1.mlp.c_fc.weight' (posc's block1.mlp.fc1.weight, "
                                         "shape [256, 64])"),
              std::string::npos)
        << e.what();
  }
  train::NamedTensors misshapen = tensors;
  for (auto& t : misshapen)
    if (t.first == "transformer.wte.weight") t.second = torch::zeros({15, 64});
  train::writeSafetensors(misshapen, {}, dir.path() / "misshapen.safetensors");
  try {
    train::warmStartSafetensors(*b, dir.path() / "misshapen.safetensors");
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'transformer.wte.weight' has shape [15, 64]; the model's tok_emb.weight "
                                         "has [16, 64]"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
