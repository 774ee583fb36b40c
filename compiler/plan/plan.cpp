// The plan's names (channels, token kinds, probe kinds) and the rotation
// frequency ladder (see plan.h).
#include "compiler/plan/plan.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

namespace posc::plan {

const char* channelName(Channel c) {
  switch (c) {
    case Channel::Position: return "position";
    case Channel::Column: return "column";
    case Channel::Row: return "row";
    case Channel::Kind: return "kind";
    case Channel::Segment: return "segment";
  }
  return "?";
}

const char* mlpName(MlpKind k) {
  switch (k) {
    case MlpKind::Gelu: return "gelu";
    case MlpKind::Reglu: return "reglu";
    case MlpKind::Swiglu: return "swiglu";
  }
  return "?";
}

const char* normName(NormKind k) { return k == NormKind::LayerNorm ? "layernorm" : "rmsnorm"; }

const char* tokenKindName(TokenKind k) {
  switch (k) {
    case TokenKind::Digit: return "digit";
    case TokenKind::Separator: return "separator";
    case TokenKind::Special: return "special";
  }
  return "?";
}

const char* documentTaskName(DocumentTask t) {
  switch (t) {
    case DocumentTask::Retrieval: return "retrieval";
    case DocumentTask::Composition: return "composition";
    case DocumentTask::Contradiction: return "contradiction";
    case DocumentTask::Order: return "order";
  }
  return "?";
}

const char* authorityName(Authority a) {
  switch (a) {
    case Authority::Latest: return "latest";
    case Authority::Earliest: return "earliest";
    case Authority::Correction: return "correction";
  }
  return "?";
}

const char* probeKindName(ProbeKind k) {
  switch (k) {
    case ProbeKind::Reach: return "reach";
    case ProbeKind::SinkShare: return "sink_share";
    case ProbeKind::Kernel: return "kernel";
    case ProbeKind::Bands: return "bands";
    case ProbeKind::TeacherForced: return "teacher_forced";
    case ProbeKind::Stop: return "stop";
    case ProbeKind::EvidenceMass: return "evidence_mass";
  }
  return "?";
}

std::vector<double> Param::initialValues(int heads) const {
  const size_t n = static_cast<size_t>((per_head ? heads : 1) * width());
  if (init.size() == n) return init;
  return std::vector<double>(n, init.empty() ? 0.0 : init[0]);
}

std::vector<std::string> parameterTensorNames(const AttentionPlan& attention) {
  std::vector<std::string> names;
  std::set<std::string> taken;
  for (size_t i = 0; i < attention.params.size(); ++i) {
    std::string s;
    for (char c : attention.params[i].name) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    if (s.empty() || taken.count(s)) s += "_" + std::to_string(i);
    taken.insert(s);
    names.push_back(s);
  }
  return names;
}

std::vector<double> inverseFrequencies(const Rotation& r) {
  const int n = r.pair_end - r.pair_begin;
  std::vector<double> theta(static_cast<size_t>(std::max(n, 0)));
  for (int i = 0; i < n; ++i) {
    const double t = std::pow(r.base, -static_cast<double>(i) / static_cast<double>(n));
    double gamma = 0;  // Position Interpolation: every pair interpolated
    if (r.yarn_length > 0) {
      const double turns = r.yarn_length * t / (2 * M_PI);
      gamma = std::clamp((turns - r.yarn_alpha) / (r.yarn_beta - r.yarn_alpha), 0.0, 1.0);
    }
    theta[static_cast<size_t>(i)] = (1 - gamma) * t / r.interpolate + gamma * t;
  }
  return theta;
}

}  // namespace posc::plan
