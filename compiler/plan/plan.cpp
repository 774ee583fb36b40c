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

}  // namespace posc::plan
