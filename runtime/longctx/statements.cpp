// The surface forms of long-context documents (statements.h).
#include "runtime/longctx/statements.h"

namespace posc::longctx {

std::vector<int32_t> keyTokens(const Key& k) {
  return {token::kFirstKeyHalf + k.first, token::kSecondKeyHalf + k.second};
}
std::vector<int32_t> objectTokens(const Object& o) {
  if (o.key) return keyTokens(*o.key);
  return {token::kFirstValue + o.value};
}

void shift(Statement& st, int by) {
  st.begin += by;
  st.end += by;
  st.key_token += by;
}

void append(Span& run, const Span& piece) {
  int base = run.size();
  run.tokens.insert(run.tokens.end(), piece.tokens.begin(), piece.tokens.end());
  for (Statement st : piece.statements) {
    shift(st, base);
    run.statements.push_back(st);
  }
}

Span statementSpan(int templ, const Key& key, const Object& object, StatementRole role, bool correction) {
  Span span;
  auto& t = span.tokens;
  if (correction) t.push_back(token::kCorrection);
  auto key_tokens = keyTokens(key);
  auto object_tokens = objectTokens(object);
  int key_at = 0;
  switch (templ) {
    case 0:  // kx ky is v .
      key_at = static_cast<int>(t.size()) + 1;
      t.insert(t.end(), key_tokens.begin(), key_tokens.end());
      t.push_back(token::kIs);
      t.insert(t.end(), object_tokens.begin(), object_tokens.end());
      t.push_back(token::kStop);
      break;
    case 1:  // set kx ky to v ;
      t.push_back(token::kSet);
      key_at = static_cast<int>(t.size()) + 1;
      t.insert(t.end(), key_tokens.begin(), key_tokens.end());
      t.push_back(token::kTo);
      t.insert(t.end(), object_tokens.begin(), object_tokens.end());
      t.push_back(token::kSemicolon);
      break;
    default:  // v under kx ky .
      t.insert(t.end(), object_tokens.begin(), object_tokens.end());
      t.push_back(token::kUnder);
      key_at = static_cast<int>(t.size()) + 1;
      t.insert(t.end(), key_tokens.begin(), key_tokens.end());
      t.push_back(token::kStop);
      break;
  }
  span.statements.push_back(Statement{0, span.size(), role, key, key_at});
  return span;
}

int longestStatement(int templ) { return (templ == 1 ? 7 : 6) + 1; }
int statementLength(int templ, bool key_object, bool correction) {
  return (templ == 1 ? 5 : 4) + (key_object ? 2 : 1) + (correction ? 1 : 0);
}

namespace {

std::vector<int32_t> questionOpener(int templ) {
  switch (templ) {
    case 0: return {token::kQuery};
    case 1: return {token::kQuery, token::kGet};
    default: return {token::kQuery, token::kWhat};
  }
}

}  // namespace

std::vector<int32_t> keyQuestion(int templ, const Key& key) {
  auto q = questionOpener(templ);
  if (templ == 2) q.push_back(token::kUnder);
  auto k = keyTokens(key);
  q.insert(q.end(), k.begin(), k.end());
  return q;
}

std::vector<int32_t> chainQuestion(int templ, const Key& key) {
  auto q = keyQuestion(templ, key);
  q.insert(q.begin() + 1, token::kChain);
  return q;
}

std::vector<int32_t> orderQuestion(int templ, const Key& a, const Key& b) {
  auto q = questionOpener(templ);
  q.push_back(token::kFirst);
  for (const Key& k : {a, b}) {
    auto t = keyTokens(k);
    q.insert(q.end(), t.begin(), t.end());
  }
  return q;
}

int questionLength(const DocumentSpec& spec) {
  int opener = spec.template_index == 0 ? 1 : 2;
  if (spec.task == TaskType::Order) return opener + 1 + 4;
  int chain = spec.task == TaskType::Composition ? 1 : 0;
  return opener + chain + (spec.template_index == 2 ? 1 : 0) + 2;
}

int headerLength(const DocumentSpec& spec) { return spec.task == TaskType::Contradiction ? 3 : 0; }

}  // namespace posc::longctx
