"""The addition task in Python: posc's tokens, channels and problems, exactly.

Mirrors runtime/task (addition.h, tokenizer.cpp, sampling.cpp,
adder_protocol.cpp). Layout for two operands, reversed, one digit per token
(12345 + 678):

    tokens   5 4 3 2 1 + 8 7 6 = 3 2 0 3 1 <eos>
    position 0 1 2 3 4 5 6 7 8 9 ...
    column   1 2 3 4 5 0 1 2 3 0 1 2 3 4 5 0
    row      0 0 0 0 0 1 1 1 1 2 2 2 2 2 2 2
    kind     D D D D D S D D D S D D D D D X     (0 digit, 1 separator, 2 special)

Column is a digit token's place value (units = 1), 0 elsewhere; row is the
operand index, the answer's row is the operand count, and a separator takes
the row of what follows it. With k digits per token a token holds a k-digit
chunk's value, cut from the units end. Padded orders zero-pad every operand
to W = max(train_max_digits, longest operand) digits rounded up to a
multiple of k, and the answer to W + k digits (more when the carry needs
it): most significant first (``padded``) or units first
(``padded_reversed``). A ``<bos>`` token (column 0, row 0, special) opens the
sequence when the task has one. Segment is 0 throughout.

Numbers are Python ints, so lengths of thousands of digits are exact.
"""
import random
from dataclasses import dataclass
from typing import List

from ..rng import MT19937_64, MASK64, splitmix64, uniform_below
from .batch import DIGIT, SEPARATOR, SPECIAL, COLUMN, KIND, ChannelLabels, Sequence, make_batch


@dataclass
class Problem:
    operands: List[int]
    answer: int

    @staticmethod
    def of(*operands):
        return Problem(list(operands), sum(operands))


def digits_of(n):
    """Decimal digits of a non-negative int, units first."""
    return [int(c) for c in reversed(str(n))]


def _ceil_div(a, b):
    return (a + b - 1) // b


def _carry_digits(operands):
    """Smallest e >= 1 with 10^e >= operands."""
    e, power = 1, 10
    while power < operands:
        e, power = e + 1, power * 10
    return e


class Vocabulary:
    """Ids 0..10^k - 1 are digit tokens (the chunk's value), then '+', '=',
    <eos>, <pad>, and <bos> when the task has one."""

    def __init__(self, digits_per_token=1, has_bos=False):
        if not 1 <= digits_per_token <= 9:
            raise ValueError(f"digits per token must be in [1, 9], got {digits_per_token}")
        self.k, self.has_bos = digits_per_token, has_bos
        self.digit_tokens = 10 ** digits_per_token
        self.plus, self.equals = self.digit_tokens, self.digit_tokens + 1
        self.eos, self.pad, self.bos = self.digit_tokens + 2, self.digit_tokens + 3, self.digit_tokens + 4
        self.size = self.digit_tokens + 4 + (1 if has_bos else 0)

    def render(self, token):
        if 0 <= token < self.digit_tokens:
            return str(token).zfill(self.k)
        names = {self.plus: "+", self.equals: "=", self.eos: "<eos>", self.pad: "<pad>"}
        if self.has_bos:
            names[self.bos] = "<bos>"
        if token not in names:
            raise ValueError(f"token {token} is outside the vocabulary")
        return names[token]


class AdditionTokenizer:
    """task::Tokenizer for an AdditionTask (posc.plan)."""

    def __init__(self, task):
        if task.operands < 2:
            raise ValueError("addition needs 2+ operands")
        self.task = task
        self.vocab = Vocabulary(task.digits_per_token, task.bos)

    # Shapes: every count depends on the operands alone, never on the answer.
    def _padded(self):
        return self.task.order != "reversed"

    def _units_first(self):
        return self.task.order != "padded"

    def _longest(self, p):
        return max([1] + [len(str(n)) for n in p.operands])

    def _padded_operand_tokens(self, p):
        k = self.task.digits_per_token
        return _ceil_div(max(self.task.train_max_digits, self._longest(p)), k)

    def _padded_answer_tokens(self, p):
        return self._padded_operand_tokens(p) + _ceil_div(_carry_digits(self.task.operands), self.task.digits_per_token)

    def _operand_tokens(self, p, n):
        return self._padded_operand_tokens(p) if self._padded() else _ceil_div(len(str(n)), self.task.digits_per_token)

    def _answer_tokens(self, p):
        if self._padded():
            return self._padded_answer_tokens(p)
        return _ceil_div(len(str(p.answer)), self.task.digits_per_token)

    def prompt_length(self, p):
        return (1 if self.task.bos else 0) + sum(self._operand_tokens(p, n) + 1 for n in p.operands)

    def _push_number(self, s, n, tokens, row):
        k = self.task.digits_per_token
        if len(str(n)) > tokens * k:
            raise ValueError(f"{n} does not fit in {tokens} tokens of {k} digits")
        for i in range(tokens):
            chunk = i if self._units_first() else tokens - 1 - i
            s.push((n // 10 ** (chunk * k)) % 10 ** k, column=chunk + 1, row=row, kind=DIGIT)

    def _encode(self, p, with_answer):
        if len(p.operands) != self.task.operands:
            raise ValueError(f"problem has {len(p.operands)} operands, task has {self.task.operands}")
        s, v = Sequence(), self.vocab
        if self.task.bos:
            s.push(v.bos, column=0, row=0, kind=SPECIAL)
        for row, n in enumerate(p.operands):
            if row > 0:
                s.push(v.plus, column=0, row=row, kind=SEPARATOR)
            self._push_number(s, n, self._operand_tokens(p, n), row)
        s.push(v.equals, column=0, row=self.task.operands, kind=SEPARATOR)
        s.prompt_length = len(s.tokens)
        if with_answer:
            self._push_number(s, p.answer, self._answer_tokens(p), self.task.operands)
            s.push(v.eos, column=0, row=self.task.operands, kind=SPECIAL)
        return s

    def encode(self, p):
        """The whole training sequence: prompt, answer, <eos>."""
        return self._encode(p, True)

    def encode_prompt(self, p):
        """The prompt alone (operands, separators, '='), as the model sees it at test time."""
        return self._encode(p, False)

    def answer_channels(self, p, i):
        """The 5 channels of the i-th answer token (Tokenizer::answerChannels):
        kind digit, whatever the model emits."""
        column = i + 1
        if self.task.order == "padded":
            column = max(0, self._padded_answer_tokens(p) - i)
        elif self.task.order == "padded_reversed":
            column = i + 1 if i < self._padded_answer_tokens(p) else 0
        return [self.prompt_length(p) + i, column, self.task.operands, DIGIT, 0]

    def emitted_channels(self, p, i, token):
        """The channels posc's decoder feeds back with the i-th emitted token:
        a non-digit token (normally <eos>) gets its own kind and column 0."""
        ch = self.answer_channels(p, i)
        if token >= self.vocab.digit_tokens:
            ch[KIND] = SEPARATOR if token in (self.vocab.plus, self.vocab.equals) else SPECIAL
            ch[COLUMN] = 0
        return ch

    def max_answer_tokens(self, p):
        """Answer tokens plus <eos>: the most a decoder emits."""
        if self._padded():
            return self._padded_answer_tokens(p) + 1
        return _ceil_div(self._longest(p) + _carry_digits(self.task.operands), self.task.digits_per_token) + 1

    def decode_answer(self, generated):
        """The number the generated tokens spell up to <eos>; None when <eos>
        never came, came first, or a token before it is not a digit token."""
        if self.vocab.eos not in generated:
            return None
        body = list(generated[:generated.index(self.vocab.eos)])
        if not body or any(t < 0 or t >= self.vocab.digit_tokens for t in body):
            return None
        chunks = body if self._units_first() else body[::-1]
        return sum(t * 10 ** (i * self.task.digits_per_token) for i, t in enumerate(chunks))

    def labels(self, samplings, p):
        """The problem's evaluation labels for randomised channels."""
        return ChannelLabels.for_problem(samplings, self.encode(p), [digits_of(n) for n in p.operands])

    def render(self, tokens):
        return " ".join(self.vocab.render(t) for t in tokens)


def random_number(length, rng):
    """Uniform with exactly `length` digits (task::randomNumber)."""
    if length < 1:
        raise ValueError("length must be at least 1")
    digits = [uniform_below(10, rng) for _ in range(length - 1)]
    low = 0 if length == 1 else 1
    digits.append(low + uniform_below(9 - low + 1, rng))
    return int("".join(str(d) for d in reversed(digits)))


def random_value(min_length, max_length, rng):
    """Uniform over the values of min_length..max_length digits (task::randomValue):
    max_length uniform digits, leading zeros dropped, drawn again while shorter
    than min_length."""
    while True:
        digits = [uniform_below(10, rng) for _ in range(max_length)]
        value = int("".join(str(d) for d in reversed(digits)))
        if len(str(value)) >= min_length:
            return value


def sample_training_problem(task, rng):
    """Each operand's length uniform in the training range, then its digits;
    with task.sampling = values, each operand's value uniform instead."""
    operands = []
    for _ in range(task.operands):
        if task.sampling == "values":
            operands.append(random_value(task.train_min_digits, task.train_max_digits, rng))
            continue
        length = task.train_min_digits + uniform_below(task.train_max_digits - task.train_min_digits + 1, rng)
        operands.append(random_number(length, rng))
    return Problem.of(*operands)


def sample_problem(task, digits, rng):
    """A test problem: every operand has exactly `digits` digits."""
    return Problem.of(*[random_number(digits, rng) for _ in range(task.operands)])


def test_problems(task, digits):
    """posc's fixed test set for one length: a function of (test_seed, digits)."""
    seed = splitmix64(splitmix64(task.test_seed) ^ splitmix64((0x5EED + digits) & MASK64))
    rng = MT19937_64(seed)
    return [sample_problem(task, digits, rng) for _ in range(task.problems_per_length)]


ADDER_BOARD_EDGE_CASES = [
    (0, 0), (0, 1), (9999999999, 0), (9999999999, 1), (9999999999, 9999999999), (5000000000, 5000000000),
    (1111111111, 8888888889), (1234567890, 9876543210), (9999999999, 9999999999), (1, 9999999999),
]


def adder_board_problems():
    """The 10-digit leaderboard's 10,010 cases: its edge cases, then 10,000
    pairs of random.Random(2025) (task::adderBoardProblems)."""
    rng = random.Random(2025)
    pairs = list(ADDER_BOARD_EDGE_CASES)
    for _ in range(10000):
        a = rng.randint(0, 9999999999)
        pairs.append((a, rng.randint(0, 9999999999)))
    return [Problem.of(a, b) for a, b in pairs]


def evaluation_problems(task):
    """{digits: problems} as posc's evaluation decodes them."""
    if task.protocol == "adderboard":
        return {10: adder_board_problems()}
    return {d: test_problems(task, d) for d in task.test_digits}


def training_batch(task, tokenizer, batch, rng):
    """One training batch of fresh problems (task::sampleTrainingBatch)."""
    return make_batch([tokenizer.encode(sample_training_problem(task, rng)) for _ in range(batch)], tokenizer.vocab.pad)
