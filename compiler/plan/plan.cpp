#include "compiler/plan/plan.h"

namespace posc::plan {

const char* channelName(Channel c) {
  switch (c) {
    case Channel::Position: return "position";
    case Channel::Column: return "column";
    case Channel::Row: return "row";
    case Channel::Kind: return "kind";
  }
  return "?";
}

const char* tokenKindName(TokenKind k) {
  switch (k) {
    case TokenKind::Digit: return "digit";
    case TokenKind::Separator: return "separator";
    case TokenKind::Special: return "special";
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
  }
  return "?";
}

}  // namespace posc::plan
