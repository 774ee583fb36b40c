// Documents as model input: token ids and the index channels every token
// carries, and the training stream of documents.
//
// Channels (plan::Channel) of a document token at prompt offset t:
//   position  t (answer tokens continue after the prompt)
//   column    0 (documents have no place values)
//   row       0
//   kind      content (keys, values, filler) as `digit`, template markers as
//             `separator`, <bos> <eos> <pad> <none> as `special` (plan.h)
//   segment   Document::segments: statement 1, 2, ... in order of appearance,
//             the question and its answer one past the last, 0 elsewhere
// So every positional component of the stdlib applies unchanged: RoPE over
// position, a sink on separators, a learned embedding of the segment.
//
// A training document draws its task, length, depth, distractor count,
// template and (for tasks that may lack it) whether its evidence is absent
// from the data generator, then one of its questions. After that question
// and its answer come review questions: as many as there are statements that
// hold one value under a key no other statement states, each the key
// question and answer of such a statement drawn uniformly with replacement
// (the drawn question's may come again). The loss is on every answer token
// and <eos> (task::Batch's loss mask). A lone question per document gives a
// retrieval head one lookup to learn from per sequence; the reviews give it
// about one per statement for a few tokens each. Drawn with replacement,
// the reviews hold no shortcut: asked once each, in random order, the last
// review could be answered by elimination, without any lookup (a PyTorch
// peer's loss settled at that level; docs/longctx.md, peer run P4).
// Evaluation asks one question, right after the context, as the first
// training question is.
//
// Deliberately free of LibTorch.
#pragma once

#include <array>
#include <cstdint>
#include <random>

#include "compiler/plan/plan.h"
#include "runtime/longctx/document.h"
#include "runtime/task/addition.h"

namespace posc::longctx {

// Rows of the model's embedding: every document token.
inline constexpr int kModelVocabulary = token::kVocabularySize;

// The most tokens a decoder emits for one question: the longest answer (a
// key, two tokens) and <eos>.
inline constexpr int kMaxAnswerTokens = 3;

plan::TokenKind tokenKind(int32_t token);

// The prompt of question `question`, and with `with_answer` its answer and
// <eos> after it (prompt_length marks where the answer starts).
task::Sequence encode(const Document& doc, int question, bool with_answer);

// Channels of the i-th token emitted after question `question`'s prompt
// (i = 0 is the first answer token), given the token emitted there.
std::array<int64_t, plan::kChannelCount> answerChannels(const Document& doc, int question, int i, int32_t token);

// One training document's spec, drawn from `rng` as the header describes.
DocumentSpec trainingSpec(const plan::DocumentTaskPlan& task, std::mt19937_64& rng);

// One training document as a sequence: question `question`, its answer,
// and with `review` the review questions (shuffled by `rng`). The offsets of
// every answer token (and <eos>) go to `answer_positions` when given.
task::Sequence trainingSequence(const Document& doc, int question, bool review, std::mt19937_64& rng,
                                std::vector<int>* answer_positions = nullptr);

// A batch of fresh training documents, right-padded with <pad>.
task::Batch sampleTrainingBatch(const plan::DocumentTaskPlan& task, int batch, std::mt19937_64& rng);

// The specs that cannot be laid out, as a message naming the setting to
// change; empty when every training draw fits (the shortest length holds the
// most distractors of the longest statements).
std::string checkTrainingSpecs(const plan::DocumentTaskPlan& task);

}  // namespace posc::longctx
