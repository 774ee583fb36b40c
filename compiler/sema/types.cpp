// Checking compile-time values against the parameter types of components
// and primitives.
#include "compiler/sema/types.h"

#include <fmt/format.h>

#include <algorithm>

#include "compiler/sema/formula.h"

namespace posc::sema {

const std::vector<std::string>& componentTypes() {
  static const std::vector<std::string> types = {"int", "real", "bool", "text", "channel", "kinds",
                                                 "pairs", "dist", "values", "heads", "any"};
  return types;
}

using VK = Value::Kind;

bool convertValue(const Value& v, const std::string& type, const std::string& what, const plan::ModelPlan& model,
                const ReportError& error, Value& out) {
  out = v;
  int pairs = model.head_dim / 2;
  if (type == "any") return true;
  if (type == "int") {
    if (v.isInteger()) return true;
    error(v.range, fmt::format("{} must be an integer, not {}", what, v.describe()));
    return false;
  }
  if (type == "real") {
    if (v.kind == VK::Number) return true;
    error(v.range, fmt::format("{} must be a number, not {}", what, v.describe()));
    return false;
  }
  if (type == "bool") {
    if (v.kind == VK::Bool) return true;
    error(v.range, fmt::format("{} must be true or false, not {}", what, v.describe()));
    return false;
  }
  if (type == "text") {
    if (v.kind == VK::String) return true;
    error(v.range, fmt::format("{} must be a string, not {}", what, v.describe()));
    return false;
  }
  if (type == "channel") {
    plan::Channel c;
    if (v.kind == VK::Symbol && channelFromName(v.text, c)) return true;
    Diagnostic& d = error(v.range, v.kind == VK::Symbol ? fmt::format("unknown position channel '{}'", v.text)
                                                        : fmt::format("{} must be a channel, not {}", what, v.describe()));
    size_t notes = d.notes.size();
    if (v.kind == VK::Symbol) suggest(d, v.text, channelNames());
    if (d.notes.size() == notes) d.hint = "the channels are position, column, row and kind";
    return false;
  }
  if (type == "kinds") {
    std::vector<Value> items = v.kind == VK::List ? v.elements : std::vector<Value>{v};
    if (v.kind == VK::None) items.clear();
    static const std::vector<std::string> kinds = {"digit", "separator", "special"};
    for (const Value& k : items) {
      bool ok = k.kind == VK::Symbol && std::find(kinds.begin(), kinds.end(), k.text) != kinds.end();
      if (!ok) {
        Diagnostic& d = error(k.range, k.kind == VK::Symbol ? fmt::format("unknown token kind '{}'", k.text)
                                                            : fmt::format("{} must list token kinds, not {}", what, k.describe()));
        if (k.kind == VK::Symbol) suggest(d, k.text, kinds);
        d.hint = "the token kinds are digit, separator and special";
        return false;
      }
    }
    out.kind = VK::List;
    out.elements = items;
    return true;
  }
  if (type == "pairs") {
    if (v.kind == VK::Symbol && v.text == "all") {
      out.kind = VK::Range;
      out.lo = 0;
      out.hi = pairs;
      return true;
    }
    if (v.kind != VK::Range) {
      error(v.range, fmt::format("{} must be a range of rotation pairs like 0..{}, not {}", what, pairs, v.describe()));
      return false;
    }
    if (v.lo < 0 || v.hi > pairs || v.lo >= v.hi) {
      Diagnostic& d = error(v.range, v.lo >= v.hi ? fmt::format("pair range {}..{} is empty", v.lo, v.hi)
                                                  : fmt::format("pair range {}..{} is out of bounds: a head has {} rotation pairs (0..{})",
                                                                v.lo, v.hi, pairs, pairs));
      d.hint = fmt::format("head_dim {} = width {} / {} heads gives head_dim / 2 = {} pairs", model.head_dim,
                           model.width, model.heads, pairs);
      return false;
    }
    return true;
  }
  if (type == "dist") {
    if (v.kind == VK::Dist || v.kind == VK::None) return true;
    if (v.kind == VK::Number) {
      out.kind = VK::Dist;
      out.dist.kind = plan::Distribution::Kind::Fixed;
      out.dist.a = out.dist.b = out.dist.eval_value = v.number;
      return true;
    }
    error(v.range, fmt::format("{} must be a distribution such as uniform(1, 4), not {}", what, v.describe()));
    return false;
  }
  if (type == "values") {
    if (v.kind == VK::Number) return true;
    if (v.kind == VK::List) {
      for (const Value& x : v.elements)
        if (x.kind != VK::Number) {
          error(x.range, fmt::format("{} must hold numbers, not {}", what, x.describe()));
          return false;
        }
      return true;
    }
    error(v.range, fmt::format("{} must be a number or a list of numbers, not {}", what, v.describe()));
    return false;
  }
  if (type == "heads") {
    if (v.kind == VK::Symbol && v.text == "all") return true;
    std::vector<Value> items = v.kind == VK::List ? v.elements : std::vector<Value>{v};
    for (const Value& h : items)
      if (!h.isInteger() || h.number < 0 || h.number >= model.heads) {
        error(h.range, h.isInteger() ? fmt::format("head {} does not exist: the model has {} heads (0..{})",
                                                   h.render(), model.heads, model.heads - 1)
                                     : fmt::format("{} must be head indices or all, not {}", what, h.describe()));
        return false;
      }
    out.kind = VK::List;
    out.elements = items;
    return true;
  }
  error(v.range, fmt::format("internal error: unknown type '{}'", type));
  return false;
}

}  // namespace posc::sema
