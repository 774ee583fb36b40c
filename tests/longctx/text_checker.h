// An independent reader of long-context documents for the generator's tests:
// it sees only the rendered text of a prompt ("<bos> rule latest . w3 kx1 ky2
// is v7 . ... Q: kx1 ky2"), parses the statements and the question with
// its own grammar of the three templates, and derives the answer the
// document determines. It shares no code with the generator beyond the
// token spellings, so agreement means the generator's answers follow from
// the text a model reads.
#pragma once

#include <string>
#include <vector>

namespace posc::longctx::testing {

struct ReadStatement {
  int begin = 0;                     // word index in the prompt
  int end = 0;
  std::string key;                   // "kx1 ky2"
  std::string object;                // "v7", or a key for a chain's first hop
  bool correction = false;           // opened by `correction`
};

struct ReadDocument {
  std::string rule;                  // "latest", "earliest", "corrected", or "" without a header
  std::vector<ReadStatement> statements;
  std::vector<int> filler_runs;      // lengths of the filler runs between statements
  int question_begin = 0;            // word index of Q:
  std::vector<std::string> question; // the words after Q:, ending with the asked key(s)
};

// Parses a rendered prompt; throws std::runtime_error on a word sequence no
// template produces.
ReadDocument readDocument(const std::string& prompt);

// The answer the text determines, rendered with <eos> ("v7 <eos>",
// "kx1 ky2 <eos>", "<none> <eos>").
std::string deriveAnswer(const ReadDocument& doc);

// The key the question asks about ("kx1 ky2"; the first of the two for an
// order question).
std::vector<std::string> questionKeys(const ReadDocument& doc);

}  // namespace posc::longctx::testing
