"""Long-context documents: posc's vocabulary, statements and questions.

Mirrors runtime/longctx (document.h, statements.cpp, vocabulary.cpp);
document.h describes the tasks (retrieval, composition, contradiction,
order), the three templates and the layout ``<bos> [rule r .] body Q: ...
kx ky``. Token ids, renderings and surface forms are posc's; the generator
is document_generator.py.
"""
from dataclasses import dataclass, field, replace
from typing import List, Optional

TEMPLATES, KEY_HALVES, VALUES, FILLER_WORDS, ORDER_GAP = 3, 48, 64, 128, 8
TASKS = ("retrieval", "composition", "contradiction", "order")

# Token ids (document.h, namespace token).
PAD, BOS, EOS, NONE = 0, 1, 2, 3
IS, STOP, SET, TO, SEMICOLON, UNDER, QUERY, GET, WHAT, FIRST = range(4, 14)
RULE, LATEST, EARLIEST, CORRECTION_RULE, CORRECTION, CHAIN = range(14, 20)
FIRST_KEY_HALF = 20
SECOND_KEY_HALF = FIRST_KEY_HALF + KEY_HALVES
FIRST_VALUE = SECOND_KEY_HALF + KEY_HALVES
FIRST_FILLER = FIRST_VALUE + VALUES
VOCABULARY_SIZE = FIRST_FILLER + FILLER_WORDS
MAX_ANSWER_TOKENS = 3  # a key and <eos>

_FIXED_NAMES = ["<pad>", "<bos>", "<eos>", "<none>", "is", ".", "set", "to", ";", "under", "Q:", "get", "what",
                "first", "rule", "latest", "earliest", "corrected", "correction", "chain"]
_RANGES = (("kx", FIRST_KEY_HALF, KEY_HALVES), ("ky", SECOND_KEY_HALF, KEY_HALVES), ("v", FIRST_VALUE, VALUES),
           ("w", FIRST_FILLER, FILLER_WORDS))


def token_class(t):
    """'special', 'marker', 'key', 'value' or 'filler'."""
    if t <= NONE:
        return "special"
    if t < FIRST_KEY_HALF:
        return "marker"
    if t < FIRST_VALUE:
        return "key"
    return "value" if t < FIRST_FILLER else "filler"


def render_token(t):
    if not 0 <= t < VOCABULARY_SIZE:
        return f"<?{t}>"
    if t < FIRST_KEY_HALF:
        return _FIXED_NAMES[t]
    for prefix, first, count in reversed(_RANGES):
        if t >= first:
            return f"{prefix}{t - first}"


def parse_token(text):
    """The id of a rendered token; None for a string that names none."""
    if text in _FIXED_NAMES:
        return _FIXED_NAMES.index(text)
    for prefix, first, count in _RANGES:
        rest = text[len(prefix):]
        if text.startswith(prefix) and rest.isdigit() and len(rest) <= 3 and (rest == "0" or rest[0] != "0"):
            if int(rest) < count:
                return first + int(rest)
    return None


def render(tokens):
    return " ".join(render_token(t) for t in tokens)


def parse(text):
    """Token ids of a space-separated rendering; ValueError names a bad word."""
    out = []
    for word in text.split():
        t = parse_token(word)
        if t is None:
            raise ValueError(f"{word!r} names no document token")
        out.append(t)
    return out


@dataclass
class Statement:
    begin: int
    end: int
    role: str  # evidence, superseded or distractor
    key: tuple
    key_token: int  # offset of the key's second half


@dataclass
class Span:
    tokens: List[int] = field(default_factory=list)
    statements: List[Statement] = field(default_factory=list)

    def append(self, piece):
        base = len(self.tokens)
        self.tokens += piece.tokens
        self.statements += [shift(st, base) for st in piece.statements]


def shift(st, by):
    return replace(st, begin=st.begin + by, end=st.end + by, key_token=st.key_token + by)


@dataclass
class Question:
    tokens: List[int]
    answer: List[int]  # the answer's tokens, then <eos>
    purpose: str  # main, hop 1, hop 2 or review


@dataclass
class DocumentSpec:
    task: str = "retrieval"
    length: int = 256
    depth: float = 0.5
    distance: Optional[int] = None
    distractors: int = 0
    near_duplicates: bool = False
    template_index: int = 0
    evidence_present: bool = True
    authority: str = "latest"  # latest, earliest or correction
    filler: bool = True
    seed: int = 0


@dataclass
class Document:
    spec: DocumentSpec
    context: List[int]  # <bos> [rule r .] body
    statements: List[Statement]
    questions: List[Question]  # questions[0] is the main one
    evidence_begin: int = -1

    def prompt(self, question=0):
        return self.context + self.questions[question].tokens

    def segments(self, question=0):
        """Per prompt token: statement 1, 2, ... in order, the question one past the last, 0 elsewhere."""
        out = [0] * (len(self.context) + len(self.questions[question].tokens))
        for n, st in enumerate(self.statements, 1):
            out[st.begin:st.end] = [n] * (st.end - st.begin)
        for i in range(len(self.context), len(out)):
            out[i] = len(self.statements) + 1
        return out


def key_tokens(key):
    return [FIRST_KEY_HALF + key[0], SECOND_KEY_HALF + key[1]]


def _object_tokens(obj):
    return key_tokens(obj) if isinstance(obj, tuple) else [FIRST_VALUE + obj]


def statement_span(templ, key, obj, role, correction):
    """One statement; obj is a value index or a key (composition's first hop)."""
    t = [CORRECTION] if correction else []
    if templ == 0:  # kx ky is v .
        key_at = len(t) + 1
        t += key_tokens(key) + [IS] + _object_tokens(obj) + [STOP]
    elif templ == 1:  # set kx ky to v ;
        t.append(SET)
        key_at = len(t) + 1
        t += key_tokens(key) + [TO] + _object_tokens(obj) + [SEMICOLON]
    else:  # v under kx ky .
        t += _object_tokens(obj) + [UNDER]
        key_at = len(t) + 1
        t += key_tokens(key) + [STOP]
    return Span(t, [Statement(0, len(t), role, key, key_at)])


def statement_length(templ, key_object, correction):
    return (5 if templ == 1 else 4) + (2 if key_object else 1) + (1 if correction else 0)


def longest_statement(templ):
    return (7 if templ == 1 else 6) + 1


def _opener(templ):
    return [[QUERY], [QUERY, GET], [QUERY, WHAT]][templ]


def key_question(templ, key):
    return _opener(templ) + ([UNDER] if templ == 2 else []) + key_tokens(key)


def chain_question(templ, key):
    q = key_question(templ, key)
    return q[:1] + [CHAIN] + q[1:]


def order_question(templ, a, b):
    return _opener(templ) + [FIRST] + key_tokens(a) + key_tokens(b)


def question_length(spec):
    opener = 1 if spec.template_index == 0 else 2
    if spec.task == "order":
        return opener + 1 + 4
    return opener + (1 if spec.task == "composition" else 0) + (1 if spec.template_index == 2 else 0) + 2


def header_length(spec):
    return 3 if spec.task == "contradiction" else 0
