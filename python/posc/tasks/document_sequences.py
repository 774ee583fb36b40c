"""Documents as model input: tokens, channels and the training stream.

Mirrors runtime/longctx/sequence.cpp. Channels of a document token at offset t:
position t (answer tokens continue after the prompt), column 0, row 0, kind
(keys, values and filler 0, markers 1, <bos> <eos> <pad> <none> 2) and
segment (statement 1, 2, ... in order of appearance, the question and
everything after it one past the last statement, 0 elsewhere).

A training sequence is one drawn question with its answer, then review
questions (sequence.h says why); the loss is on every answer token and
<eos>. ``training_batch`` reproduces posc's document batches from its data
stream (posc.rng: libstdc++'s distributions).
"""
from .batch import DIGIT, SEPARATOR, SPECIAL, Sequence, make_batch
from .documents import (EOS, PAD, QUERY, RULE, SEMICOLON, STOP, DocumentSpec, Question, key_question, token_class)
from .document_generator import can_lack_evidence, generate
from ..rng import canonical, uniform_int


def token_kind(t):
    return {"marker": SEPARATOR, "special": SPECIAL}.get(token_class(t), DIGIT)


def encode(doc, question=0, with_answer=False):
    """Question `question`'s prompt, and with_answer its answer and <eos>."""
    prompt, segments = doc.prompt(question), doc.segments(question)
    tokens = prompt + (doc.questions[question].answer if with_answer else [])
    s = Sequence(prompt_length=len(prompt))
    answer_segment = segments[-1] if segments else 0
    for t, token in enumerate(tokens):
        s.push(token, kind=token_kind(token), segment=segments[t] if t < len(segments) else answer_segment)
    return s


def answer_channels(doc, question, i, token):
    """The channels of the i-th token emitted after the prompt."""
    prompt = len(doc.context) + len(doc.questions[question].tokens)
    return [prompt + i, 0, 0, token_kind(token), len(doc.statements) + 1]


def segments_of(tokens):
    """The segment channel of any document token sequence, from its tokens
    alone: statements are the runs of keys, values and markers between
    filler words (a run split after each '.' or ';'), the optional header
    `rule r .` is none, and everything from the first `Q:` on is one past
    the last statement."""
    out, n = [0] * len(tokens), 0
    query = tokens.index(QUERY) if QUERY in tokens else len(tokens)
    start = 4 if len(tokens) > 1 and tokens[1] == RULE else 0  # <bos> rule r .
    open_statement = False
    for i in range(start, query):
        cls = token_class(tokens[i])
        if cls in ("filler", "special"):
            open_statement = False
            continue
        if not open_statement:
            n, open_statement = n + 1, True
        out[i] = n
        if tokens[i] in (STOP, SEMICOLON):
            open_statement = False
    for i in range(query, len(tokens)):
        out[i] = n + 1
    return out


def channels_of(tokens):
    """The 5 channels of a document token sequence, from its tokens alone."""
    return [list(range(len(tokens))), [0] * len(tokens), [0] * len(tokens), [token_kind(t) for t in tokens],
            segments_of(tokens)]


def training_spec(task, rng):
    """One training document's spec from posc's data stream (trainingSpec)."""
    spec = DocumentSpec(task=task.tasks[uniform_int(0, len(task.tasks) - 1, rng)])
    spec.length = uniform_int(task.train_min_length, task.train_max_length, rng)
    spec.depth = canonical(rng)
    spec.distractors = task.train_distractors[uniform_int(0, len(task.train_distractors) - 1, rng)]
    spec.near_duplicates = task.near_duplicates
    spec.template_index = uniform_int(0, task.templates - 1, rng)
    spec.authority = task.authority
    spec.filler = task.filler
    absent = canonical(rng) < task.absent_share
    spec.evidence_present = not (can_lack_evidence(spec.task) and absent)
    spec.seed = rng()
    return spec


def review_questions(doc):
    """For every statement holding one value under a key no other statement
    states, its key question and answer, in document order."""
    counts = {}
    for st in doc.statements:
        counts[st.key] = counts.get(st.key, 0) + 1
    out = []
    for st in doc.statements:
        values = [t for t in doc.context[st.begin:st.end] if token_class(t) == "value"]
        if counts[st.key] == 1 and len(values) == 1:
            out.append(Question(key_question(doc.spec.template_index, st.key), [values[0], EOS], "review"))
    return out


def training_sequence(doc, question, review, rng):
    """(sequence, answer offsets): question `question` with its answer, then
    with `review` as many review questions as there are, drawn with
    replacement."""
    s = encode(doc, question, True)
    answers = list(range(s.prompt_length, len(s.tokens)))
    if not review:
        return s, answers
    reviewable = review_questions(doc)
    extra = [reviewable[uniform_int(0, len(reviewable) - 1, rng)] for _ in range(len(reviewable))]
    segment = len(doc.statements) + 1
    for q in extra:
        for token in q.tokens + q.answer:
            s.push(token, kind=token_kind(token), segment=segment)
        answers += range(len(s.tokens) - len(q.answer), len(s.tokens))
    return s, answers


def training_batch(task, batch, rng):
    """A batch of fresh training documents, right-padded with <pad>, the
    loss on the positions before each answer token (longctx::sampleTrainingBatch)."""
    sequences, masks = [], []
    for _ in range(batch):
        doc = generate(training_spec(task, rng))
        question = uniform_int(0, len(doc.questions) - 1, rng)
        s, answers = training_sequence(doc, question, True, rng)
        sequences.append(s)
        masks.append([t - 1 for t in answers])
    return make_batch(sequences, PAD, loss_mask_rows=masks)

