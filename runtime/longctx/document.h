// Long-context documents: the synthetic task family of the factorial
// long-context protocol (length x evidence location x distractors x task
// type). A document is a filler scaffold holding a few statements of the form
// "key is value", one or two of which are the evidence a question needs, plus
// N distractors of the same form about other keys, then the question.
// Attention competition, not arithmetic, decides these tasks, so the same
// positional components can be compared where a head must find one
// statement among many at a chosen depth.
//
// Tasks:
//   retrieval      one fact; ask its key. Without evidence (the key is never
//                  stated) the correct answer is the abstention token <none>.
//   composition    a -> b and b -> c placed apart (b is itself a key); ask
//                  for the end of the chain from a (Q: chain a, answer c), plus
//                  the two single-fact control questions a -> ? and b -> ?
//                  (answers b and c) on the same document.
//   contradiction  an earlier and a later statement about the same key; a
//                  header says which one holds: `rule latest`, `rule
//                  earliest`, or `rule corrected` (the statement opened by
//                  the `correction` marker holds, wherever it is).
//   order          two statements close together (at most kOrderGap filler
//                  tokens apart); ask which of the two keys came first.
//
// Vocabulary (ids fixed by the constants below): the specials, the markers of
// the templates, key halves (a key is two tokens, kx ky; a near-duplicate key
// shares one half with the queried key, the first for even-numbered
// distractors, the second for odd), values and filler words. Three templates give
// each statement and question a different surface form:
//   template 0   kx ky is v .            question  Q: kx ky
//   template 1   set kx ky to v ;        question  Q: get kx ky
//   template 2   v under kx ky .         question  Q: what under kx ky
// Composition's first hop states a key as the value (kx ky is kx' ky' .),
// and its main question opens with `chain` (Q: chain kx ky).
// Order asks  Q: first kx ky kx' ky'  (template 0; the other templates use
// their own question opener before `first`).
// A question ends with the key it asks (the answer follows it directly), so
// the head that finds the statement can match the key at the last prompt
// token itself. Closing the question with markers instead (`Q: kx ky ? A:`,
// this generator's first form) makes the model first move the key to the
// answer position with a second head as well as to each statement's value:
// two compositions instead of one, and CPU-sized models stayed at chance
// among distractors with it (docs/longctx.md has the runs).
//
// Layout of a prompt (`length` tokens with the main question):
//   <bos> [rule r .] body Q: ... kx ky
// The body is filler with the statements inserted whole. The evidence starts
// at body offset round(depth * (B - s)), B the body length and s the length of
// the evidence span (the statement, or for order the pair with its gap): depth
// 0 is the start of the body, depth 1 ends the span right before the question.
// `distance`, when set, replaces depth: the evidence span ends that many body
// tokens before the question. Distractors go to uniformly random places in
// the rest of the body, never inside another statement.
//
// Every random choice comes from one PythonRandom stream seeded by the spec's
// seed (randbelow only), so documents are a pure function of the spec, the
// same on every platform, and reproducible with Python's random.Random.
//
// Deliberately free of LibTorch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/plan/plan.h"

namespace posc::longctx {

// The task types and the contradiction rule are the plan's (a `.pos` file
// names them); their names too.
using TaskType = plan::DocumentTask;
inline constexpr int kTaskTypeCount = plan::kDocumentTaskCount;
using Authority = plan::Authority;  // which of two statements about one key holds
using plan::authorityName;
inline const char* taskTypeName(TaskType t) { return plan::documentTaskName(t); }

// Whether a task's documents may leave out their evidence (retrieval and
// composition ask about a key the document never states; the correct answer
// is then <none>).
bool canLackEvidence(TaskType t);

// What a token is, for the kind channel and for probes.
enum class TokenClass : uint8_t { Filler, Key, Value, Marker, Special };

inline constexpr int kTemplates = 3;
inline constexpr int kKeyHalves = 48;   // first and second halves each: 48 x 48 keys
inline constexpr int kValues = 64;
inline constexpr int kFillerWords = 128;
inline constexpr int kOrderGap = 8;     // most filler tokens between the order pair

// Token ids.
namespace token {
inline constexpr int32_t kPad = 0, kBos = 1, kEos = 2, kNone = 3;
// Markers.
inline constexpr int32_t kIs = 4, kStop = 5, kSet = 6, kTo = 7, kSemicolon = 8, kUnder = 9,
                         kQuery = 10, kGet = 11, kWhat = 12, kFirst = 13, kRule = 14, kLatest = 15,
                         kEarliest = 16, kCorrectionRule = 17, kCorrection = 18, kChain = 19;
inline constexpr int32_t kFirstKeyHalf = 20;                          // kx0 .. kx47
inline constexpr int32_t kSecondKeyHalf = kFirstKeyHalf + kKeyHalves;  // ky0 .. ky47
inline constexpr int32_t kFirstValue = kSecondKeyHalf + kKeyHalves;    // v0 .. v63
inline constexpr int32_t kFirstFiller = kFirstValue + kValues;         // w0 .. w127
inline constexpr int32_t kVocabularySize = kFirstFiller + kFillerWords;
}  // namespace token

TokenClass tokenClass(int32_t token);
std::string renderToken(int32_t token);  // "<bos>", "is", "kx3", "ky17", "v9", "w100", ...
// The inverse of renderToken; nullopt for a string that names no token.
std::optional<int32_t> parseToken(const std::string& text);
// Space-separated rendering of a token sequence.
std::string render(const std::vector<int32_t>& tokens);

struct Key {
  int first = 0, second = 0;  // halves, each in [0, kKeyHalves)
  bool operator==(const Key&) const = default;
};

struct DocumentSpec {
  TaskType task = TaskType::Retrieval;
  int length = 256;             // prompt tokens with the main question, <bos> to its last key
  double depth = 0.5;           // evidence location: fraction of the body's room
  std::optional<int> distance;  // instead of depth: body tokens after the evidence span
  int distractors = 0;          // statements about other keys
  bool near_duplicates = false; // each distractor key shares one half with the queried key
  int template_index = 0;       // surface form, in [0, kTemplates)
  bool evidence_present = true; // retrieval and composition: false asks about an unstated key
  Authority authority = Authority::Latest;  // contradiction
  // false (retrieval only): no filler words; the body is the statements
  // alone, the evidence the round(depth x distractors)-th of them, and
  // `length` is ignored (the document's spec records the length it took).
  bool filler = true;
  uint64_t seed = 0;
};

// Why a statement is in the document.
enum class StatementRole : uint8_t {
  Evidence,    // states the answer (for composition: either hop; for order: either item)
  Superseded,  // contradiction: the statement that does not hold
  Distractor,
};

struct Statement {
  int begin = 0, end = 0;  // token offsets in the prompt, [begin, end)
  StatementRole role = StatementRole::Distractor;
  Key key;
  int32_t key_token = 0;  // offset of the key's second half in the prompt
};

struct Question {
  std::vector<int32_t> tokens;  // Q: ... kx ky
  std::vector<int32_t> answer;  // the answer's tokens, then <eos>
  std::string purpose;          // "main", or for composition "hop 1" / "hop 2"
};

struct Document {
  DocumentSpec spec;
  std::vector<int32_t> context;       // <bos> [rule r .] body
  std::vector<Statement> statements;  // in order of appearance
  std::vector<Question> questions;    // questions[0] is the main one
  int evidence_begin = -1;            // prompt offset of the evidence span; -1 without evidence

  // The prompt for question i: context followed by its tokens.
  std::vector<int32_t> prompt(int question = 0) const;
  // Per prompt token (question i): its class and its segment (statements
  // numbered 1, 2, ... in order of appearance; the question is one past the
  // last statement; filler, header and <bos> are 0).
  std::vector<TokenClass> classes(int question = 0) const;
  std::vector<int32_t> segments(int question = 0) const;
};

// Builds the document a spec describes. Throws std::invalid_argument, with
// the reason, for a spec that cannot be laid out (a length too short for its
// statements, a depth outside [0, 1], a distance past the body, more
// near-duplicate distractors than the key space allows, ...).
Document generate(const DocumentSpec& spec);

// The fewest prompt tokens with which a spec can be laid out at every depth:
// its statements and question, and beside each piece placed at its depth the
// room (up to a distractor's length less one) that may be too small for a
// distractor. generate() lays out every spec of at least this length.
// Without filler: the length the statements and question take.
int minimumLength(const DocumentSpec& spec);

}  // namespace posc::longctx
