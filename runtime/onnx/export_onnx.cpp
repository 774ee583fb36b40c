// Building the ONNX graph of a hand-set model (see export_onnx.h).
#include "runtime/onnx/export_onnx.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace posc::onnx_export {

bool available() { return true; }

namespace {

using ::onnx::GraphProto;
using ::onnx::ModelProto;
using ::onnx::NodeProto;
using ::onnx::TensorProto;

class GraphBuilder {
 public:
  explicit GraphBuilder(GraphProto& g) : g_(g) {}

  std::string fresh(const std::string& stem) { return fmt::format("{}_{}", stem, counter_++); }

  // A double initializer of the given shape.
  std::string doubles(const std::string& name, const std::vector<int64_t>& dims, const std::vector<double>& values) {
    TensorProto* t = g_.add_initializer();
    t->set_name(name);
    t->set_data_type(TensorProto::DOUBLE);
    for (int64_t d : dims) t->add_dims(d);
    for (double v : values) t->add_double_data(v);
    return name;
  }
  std::string ints(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int64_t>& values) {
    TensorProto* t = g_.add_initializer();
    t->set_name(name);
    t->set_data_type(TensorProto::INT64);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t v : values) t->add_int64_data(v);
    return name;
  }
  std::string scalar(double v) { return doubles(fresh("const"), {}, {v}); }

  NodeProto* node(const std::string& op, const std::vector<std::string>& inputs, const std::string& output) {
    NodeProto* n = g_.add_node();
    n->set_op_type(op);
    n->set_name(output);
    for (const std::string& i : inputs) n->add_input(i);
    n->add_output(output);
    return n;
  }
  std::string op(const std::string& type, const std::vector<std::string>& inputs, const std::string& stem) {
    std::string out = fresh(stem);
    node(type, inputs, out);
    return out;
  }
  static void intsAttr(NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void intAttr(NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(v);
  }

 private:
  GraphProto& g_;
  int counter_ = 0;
};

// W (out, in) as the (in, out) initializer a MatMul x W^T needs.
std::string transposed(GraphBuilder& b, const std::string& name, const plan::WeightTensor& w, int rows, int cols) {
  std::vector<double> t(static_cast<size_t>(rows) * cols, 0.0);
  if (w.present)
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) t[static_cast<size_t>(c) * rows + r] = w.at(r, c);
  return b.doubles(name, {cols, rows}, t);
}

// x W^T (+ b): W absent is written as zeros; b absent is left out.
std::string linear(GraphBuilder& b, const std::string& x, const std::string& name, const plan::WeightTensor& w,
                   const plan::WeightTensor& bias, int out, int in) {
  std::string y = b.op("MatMul", {x, transposed(b, name + ".weight", w, out, in)}, name);
  if (bias.present) y = b.op("Add", {y, b.doubles(name + ".bias", {out}, bias.values)}, name + "_bias");
  return y;
}

}  // namespace

std::string exportModel(const plan::ExperimentPlan& plan, const std::string& producer_version) {
  if (!plan.handset) throw std::logic_error("exportModel: the plan has no hand-set model");
  const plan::HandsetModel& m = *plan.handset;
  ModelProto model;
  model.set_ir_version(7);
  model.set_producer_name("posc");
  model.set_producer_version(producer_version);
  model.set_doc_string(fmt::format("hand-set model '{}' ({})", plan.name, plan.source_path));
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(13);
  GraphProto& g = *model.mutable_graph();
  g.set_name(plan.name);
  GraphBuilder b(g);

  auto* input = g.add_input();
  input->set_name("tokens");
  auto* it = input->mutable_type()->mutable_tensor_type();
  it->set_elem_type(TensorProto::INT64);
  it->mutable_shape()->add_dim()->set_dim_param("batch");
  it->mutable_shape()->add_dim()->set_dim_param("sequence");

  // Residual stream [batch, sequence, width].
  std::string x = b.op("Gather", {b.doubles("embed.weight", {m.vocab, m.embed_width}, m.embed.values), "tokens"}, "embedded");
  int width = m.embed_width;

  // distance[i][j] = i - j (query i, key j), and the causal mask j <= i.
  const std::string shape = b.op("Shape", {"tokens"}, "shape");
  const std::string length = b.op("Gather", {shape, b.ints("one_index", {}, {1})}, "length");
  const std::string positions_int = b.op("Range", {b.ints("zero_int", {}, {0}), length, b.ints("one_int", {}, {1})}, "positions_int");
  NodeProto* cast = b.node("Cast", {positions_int}, "positions");
  GraphBuilder::intAttr(cast, "to", TensorProto::DOUBLE);
  NodeProto* rows = b.node("Unsqueeze", {"positions", b.ints("axis_1", {1}, {1})}, "query_positions");
  (void)rows;
  b.node("Unsqueeze", {"positions", b.ints("axis_0", {1}, {0})}, "key_positions");
  b.node("Sub", {"query_positions", "key_positions"}, "distance");
  b.node("GreaterOrEqual", {"distance", b.scalar(0.0)}, "causal");
  const std::string minus_inf = b.scalar(-std::numeric_limits<double>::infinity());
  const std::string zero = b.scalar(0.0);
  const std::string last_axis = b.ints("last_axis", {1}, {-1});

  for (size_t li = 0; li < m.layers.size(); ++li) {
    const plan::HandsetLayer& l = m.layers[li];
    const std::string p = fmt::format("layer{}", li + 1);
    if (l.width != width) {
      x = b.op("Pad", {x, b.ints(p + ".pads", {6}, {0, 0, 0, 0, 0, l.width - width}), zero}, p + "_widened");
      width = l.width;
    }
    const int inner = l.heads * l.head_dim;
    if (inner > 0) {
      const std::string split = b.ints(p + ".split_heads", {4}, {0, 0, l.heads, l.head_dim});
      auto heads = [&](const std::string& name, const plan::WeightTensor& w, const plan::WeightTensor& bias,
                       const std::vector<int64_t>& perm) {
        std::string y = linear(b, x, p + "." + name, w, bias, inner, width);
        y = b.op("Reshape", {y, split}, p + "_" + name + "_heads");
        std::string t = b.fresh(p + "_" + name + "_t");
        GraphBuilder::intsAttr(b.node("Transpose", {y}, t), "perm", perm);
        return t;
      };
      const std::string q = heads("query", l.query, l.query_bias, {0, 2, 1, 3});
      const std::string k = heads("key", l.key, l.key_bias, {0, 2, 3, 1});
      const std::string v = heads("value", l.value, l.value_bias, {0, 2, 1, 3});
      std::string s = b.op("MatMul", {q, k}, p + "_scores");
      s = b.op("Mul", {s, b.scalar(1.0 / std::sqrt(static_cast<double>(l.head_dim)))}, p + "_scaled");
      std::vector<double> slopes(l.alibi.begin(), l.alibi.end());
      const std::string penalty = b.op("Mul", {b.doubles(p + ".alibi_slopes", {l.heads, 1, 1}, slopes), "distance"}, p + "_alibi");
      s = b.op("Sub", {s, penalty}, p + "_alibi_scores");
      s = b.op("Where", {"causal", s, minus_inf}, p + "_masked");
      std::string top = b.fresh(p + "_max");
      GraphBuilder::intsAttr(b.node("ReduceMax", {s}, top), "axes", {-1});
      std::string denominator_extra;
      if (plan.model.softmax == plan::SoftmaxKind::Softmax1) {
        // e^s_j / (1 + sum e^s) = e^(s_j - m) / (e^-m + sum e^(s - m)), m = max(0, max s)
        top = b.op("Max", {top, zero}, p + "_max0");
        denominator_extra = b.op("Exp", {b.op("Neg", {top}, p + "_negmax")}, p + "_one");
      }
      const std::string e = b.op("Exp", {b.op("Sub", {s, top}, p + "_shifted")}, p + "_exp");
      std::string sum = b.op("ReduceSum", {e, last_axis}, p + "_sum");
      if (!denominator_extra.empty()) sum = b.op("Add", {sum, denominator_extra}, p + "_denominator");
      const std::string weights = b.op("Div", {e, sum}, p + "_attention");
      std::string o = b.op("MatMul", {weights, v}, p + "_mixed");
      std::string ot = b.fresh(p + "_mixed_t");
      GraphBuilder::intsAttr(b.node("Transpose", {o}, ot), "perm", {0, 2, 1, 3});
      o = b.op("Reshape", {ot, b.ints(p + ".merge_heads", {3}, {0, 0, inner})}, p + "_merged");
      o = linear(b, o, p + ".out", l.out, l.out_bias, width, inner);
      x = b.op("Add", {x, o}, p + "_after_attention");
    }
    if (l.mlp_hidden > 0) {
      const std::string gate = linear(b, x, p + ".gate", l.gate, l.gate_bias, l.mlp_hidden, width);
      const std::string up = linear(b, x, p + ".up", l.up, l.up_bias, l.mlp_hidden, width);
      const std::string h = b.op("Mul", {b.op("Relu", {gate}, p + "_relu"), up}, p + "_reglu");
      const std::string down = linear(b, h, p + ".down", l.down, l.down_bias, width, l.mlp_hidden);
      x = b.op("Add", {x, down}, p + "_after_mlp");
    }
  }
  if (m.identity_head) b.node("Identity", {x}, "logits");
  else b.node("MatMul", {x, transposed(b, "unembed.weight", m.unembed, m.vocab, width)}, "logits");

  auto* output = g.add_output();
  output->set_name("logits");
  auto* ot = output->mutable_type()->mutable_tensor_type();
  ot->set_elem_type(TensorProto::DOUBLE);
  ot->mutable_shape()->add_dim()->set_dim_param("batch");
  ot->mutable_shape()->add_dim()->set_dim_param("sequence");
  ot->mutable_shape()->add_dim()->set_dim_value(m.vocab);

  try {
    ::onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("internal error: ONNX's checker rejects the exported graph: {}", e.what()));
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes)) throw std::runtime_error("internal error: the ONNX model could not be serialised");
  return bytes;
}

}  // namespace posc::onnx_export
