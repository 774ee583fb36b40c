// The independent reader of rendered documents (text_checker.h).
#include "tests/longctx/text_checker.h"

#include <sstream>
#include <stdexcept>

namespace posc::longctx::testing {
namespace {

bool starts(const std::string& w, const char* prefix) { return w.rfind(prefix, 0) == 0; }
bool isFiller(const std::string& w) { return starts(w, "w"); }
bool isKeyFirst(const std::string& w) { return starts(w, "kx"); }
bool isValue(const std::string& w) { return w.size() > 1 && w[0] == 'v'; }

struct Reader {
  std::vector<std::string> words;
  size_t at = 0;

  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("word " + std::to_string(at) + ": " + what);
  }
  const std::string& peek(size_t ahead = 0) const {
    static const std::string end = "<end>";
    return at + ahead < words.size() ? words[at + ahead] : end;
  }
  std::string take() {
    if (at >= words.size()) fail("unexpected end");
    return words[at++];
  }
  void expect(const std::string& w) {
    if (peek() != w) fail("expected '" + w + "', read '" + peek() + "'");
    ++at;
  }
  std::string key() {
    std::string a = take();
    std::string b = take();
    if (!isKeyFirst(a) || !starts(b, "ky")) fail("expected a key, read '" + a + " " + b + "'");
    return a + " " + b;
  }
  // A value or a key.
  std::string object() {
    if (isValue(peek())) return take();
    return key();
  }
};

}  // namespace

ReadDocument readDocument(const std::string& prompt) {
  Reader r;
  std::istringstream in(prompt);
  for (std::string w; in >> w;) r.words.push_back(w);
  ReadDocument doc;
  r.expect("<bos>");
  if (r.peek() == "rule") {
    r.take();
    doc.rule = r.take();
    r.expect(".");
  }
  int filler = 0;
  while (r.peek() != "Q:") {
    if (isFiller(r.peek())) {
      ++filler;
      r.take();
      continue;
    }
    doc.filler_runs.push_back(filler);
    filler = 0;
    ReadStatement st;
    st.begin = static_cast<int>(r.at);
    if (r.peek() == "correction") {
      st.correction = true;
      r.take();
    }
    if (r.peek() == "set") {  // set k to o ;
      r.take();
      st.key = r.key();
      r.expect("to");
      st.object = r.object();
      r.expect(";");
    } else if (isKeyFirst(r.peek()) && r.peek(2) == "is") {  // k is o .
      st.key = r.key();
      r.expect("is");
      st.object = r.object();
      r.expect(".");
    } else {  // o under k .
      st.object = r.object();
      r.expect("under");
      st.key = r.key();
      r.expect(".");
    }
    st.end = static_cast<int>(r.at);
    doc.statements.push_back(st);
  }
  doc.filler_runs.push_back(filler);
  doc.question_begin = static_cast<int>(r.at);
  r.expect("Q:");
  while (r.at < r.words.size()) doc.question.push_back(r.take());
  if (doc.question.size() < 2 || !isKeyFirst(doc.question[doc.question.size() - 2]))
    r.fail("a question that does not end with a key");
  return doc;
}

std::vector<std::string> questionKeys(const ReadDocument& doc) {
  std::vector<std::string> keys;
  for (size_t i = 0; i + 1 < doc.question.size(); ++i)
    if (isKeyFirst(doc.question[i])) keys.push_back(doc.question[i] + " " + doc.question[i + 1]);
  return keys;
}

std::string deriveAnswer(const ReadDocument& doc) {
  auto has = [&](const char* w) {
    for (const auto& q : doc.question)
      if (q == w) return true;
    return false;
  };
  auto keys = questionKeys(doc);
  // Statements about a key, in document order.
  auto about = [&](const std::string& key) {
    std::vector<const ReadStatement*> out;
    for (const auto& st : doc.statements)
      if (st.key == key) out.push_back(&st);
    return out;
  };
  // What holds for a key under the document's rule; "" when nothing is said.
  auto holds = [&](const std::string& key) -> std::string {
    auto said = about(key);
    if (said.empty()) return "";
    if (said.size() == 1) return said[0]->object;
    if (doc.rule == "latest") return said.back()->object;
    if (doc.rule == "earliest") return said.front()->object;
    if (doc.rule == "corrected")
      for (const auto* st : said)
        if (st->correction) return st->object;
    throw std::runtime_error("conflicting statements about " + key + " and no rule that settles them");
  };

  if (has("first")) {
    if (keys.size() != 2) throw std::runtime_error("an order question names two keys");
    auto a = about(keys[0]), b = about(keys[1]);
    if (a.empty() || b.empty()) throw std::runtime_error("an order question about an unstated key");
    return (a.front()->begin < b.front()->begin ? keys[0] : keys[1]) + " <eos>";
  }
  if (keys.size() != 1) throw std::runtime_error("a key question names one key");
  std::string answer = holds(keys[0]);
  if (has("chain")) {  // follow keys to a value
    for (int hops = 0; !answer.empty() && isKeyFirst(answer) && hops < 16; ++hops) answer = holds(answer);
  }
  return (answer.empty() ? "<none>" : answer) + " <eos>";
}

}  // namespace posc::longctx::testing
