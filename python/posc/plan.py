"""The parts of posc's resolved plan that Python needs, read from its text.

A posc checkpoint carries the plan as ``posc emit plan`` prints it (metadata
key ``plan``; also ``plan.txt`` in a results folder). ``Plan.parse`` reads
from it what decides the data and the training: the task (addition or
documents) and its evaluation, the channels randomised per sequence, the
per-sequence stretch and Abacus offsets drawn in training, which score
parameters are learned, and the optimiser's settings. The layout of the
text is posc's (compiler/plan/dump.cpp); a line this parser cannot read is
an error that quotes it, never a silent default.
"""
import re
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

CHANNELS = ("position", "column", "row", "kind", "segment")
ORDERS = {"reversed (units first)": "reversed", "padded (most significant first)": "padded",
          "padded, reversed (units first)": "padded_reversed"}


@dataclass
class AdditionTask:
    """task { kind = addition }: runtime/task/addition.h."""
    operands: int = 2
    digits_per_token: int = 1
    order: str = "reversed"  # reversed, padded or padded_reversed
    train_min_digits: int = 1
    train_max_digits: int = 10
    sampling: str = "lengths"  # task.sampling: lengths or values
    test_digits: List[int] = field(default_factory=list)
    problems_per_length: int = 90
    test_seed: int = 1234
    bos: bool = False
    protocol: str = "lengths"  # eval.protocol: lengths or adderboard
    kind: str = "addition"


@dataclass
class DocumentProtocol:
    """The evaluation cells of a document task (runtime/longctx/protocol.h)."""
    tasks: List[str] = field(default_factory=lambda: ["retrieval"])
    lengths: List[int] = field(default_factory=lambda: [256])
    depths: List[float] = field(default_factory=lambda: [0.5])
    distractors: List[int] = field(default_factory=lambda: [0])
    fraction: float = 1.0
    problems: int = 50
    templates: int = 3
    absent_share: float = 0.0


@dataclass
class DocumentTask:
    """task { kind = documents }: runtime/longctx/document.h, sequence.h."""
    tasks: List[str] = field(default_factory=lambda: ["retrieval"])
    train_min_length: int = 32
    train_max_length: int = 128
    filler: bool = True
    train_distractors: List[int] = field(default_factory=lambda: [0])
    templates: int = 3
    absent_share: float = 0.0
    near_duplicates: bool = False
    authority: str = "latest"
    test_seed: int = 1234
    protocol: DocumentProtocol = field(default_factory=DocumentProtocol)
    kind: str = "documents"


@dataclass
class TrainSettings:
    """The optimiser and schedule of the train section."""
    steps: int = 0
    batch: int = 64
    lr: float = 1e-3
    betas: Tuple[float, float] = (0.9, 0.99)
    eps: float = 1e-8
    weight_decay: float = 0.1
    decay_all: bool = False  # train.weight_decay_on = all: decay on norm gains and biases too
    bias_correction: bool = True  # train.bias_correction
    schedule: str = "cosine"
    warmup: int = 0
    min_lr_ratio: float = 0.1
    grad_clip: float = 1.0


@dataclass
class Plan:
    """What Python reads from a plan text (see the module docstring)."""
    task: object  # AdditionTask or DocumentTask
    train: TrainSettings
    sampled_channels: List[Tuple[int, int]] = field(default_factory=list)  # (channel index, range)
    stretch: Optional[Tuple[str, float, float]] = None  # the first non-fixed stretch: (kind, a, b)
    embed_offsets: List[int] = field(default_factory=list)  # per absolute embedding: Abacus offset, 0 for none
    learned_params: List[str] = field(default_factory=list)  # score parameter tensor names
    fixed_params: List[str] = field(default_factory=list)
    text: str = ""

    @staticmethod
    def parse(text):
        sections = _sections(text)
        task_lines = sections.get("task", [])
        if not task_lines:
            raise ValueError("plan text has no task section")
        if task_lines[0].startswith("task documents"):
            task = _documents(task_lines, sections.get("eval", []))
        else:
            task = _addition(task_lines, sections.get("eval", []))
        plan = Plan(task=task, train=_train(sections.get("train", [])), text=text)
        _attention(sections.get("attention", []), plan)
        return plan


def _sections(text):
    out, current = {}, None
    for line in text.splitlines():
        if line and not line.startswith(" "):
            current = line.split()[0]
            out.setdefault(current, []).append(line)
        elif current is not None:
            out[current].append(line.strip())
    return out


def _match(pattern, line):
    m = re.fullmatch(pattern, line)
    if m is None:
        raise ValueError(f"unexpected plan line: {line!r}")
    return m


def _ints(text):
    return [int(x) for x in text.replace(",", " ").split()]


def _addition(lines, eval_lines):
    t = AdditionTask()
    m = _match(r"(\d+) operands, (\d+) digits? per token, (.+)", lines[1])
    t.operands, t.digits_per_token, t.order = int(m[1]), int(m[2]), ORDERS[m[3]]
    m = _match(r"training operands of (\d+)\.\.(\d+) digits, (each value equally likely, )?fresh every batch", lines[2])
    t.train_min_digits, t.train_max_digits = int(m[1]), int(m[2])
    t.sampling = "values" if m[3] else "lengths"
    m = _match(r"test digits \[([\d ]*)\], (\d+) problems each, test seed (\d+)", lines[3])
    t.test_digits, t.problems_per_length, t.test_seed = _ints(m[1]), int(m[2]), int(m[3])
    t.bos = "a <bos> token opens every sequence" in lines
    if any(line.startswith("protocol adderboard") for line in eval_lines):
        t.protocol = "adderboard"
    return t


def _names(text):
    return [x.strip() for x in text.split(",") if x.strip()]


def _documents(lines, eval_lines):
    t = DocumentTask(tasks=_names(_match(r"task documents \[(.*)\]", lines[0])[1]))
    line = lines[1]
    m = re.match(r"training prompts of (\d+)\.\.(\d+) tokens, ", line)
    if m:
        t.train_min_length, t.train_max_length = int(m[1]), int(m[2])
    elif line.startswith("training prompts without filler"):
        t.filler = False
    else:
        raise ValueError(f"unexpected plan line: {line!r}")
    m = _match(r".*distractors from \[([\d ]*)\], (\d+) templates?, fresh every batch; .*", line)
    t.train_distractors, t.templates = _ints(m[1]), int(m[2])
    m = _match(r"evidence absent in ([^ ]+) of retrieval and composition documents"
               r"(, distractor keys near-duplicates)?; contradictions: rule (\w+)", lines[2])
    t.absent_share, t.near_duplicates, t.authority = float(m[1]), bool(m[2]), m[3]
    p = t.protocol
    for line in eval_lines[1:]:
        if line.startswith("protocol "):
            m = _match(r"protocol \[(.*)\] x lengths \[([\d ]*)\] x depths \[(.*)\] x distractors \[([\d ]*)\]"
                       r"(?:, a seeded (.+) of the cells)?", line)
            p.tasks, p.lengths, p.distractors = _names(m[1]), _ints(m[2]), _ints(m[4])
            p.depths = [float(x) for x in _names(m[3])]
            p.fraction = float(m[5]) if m[5] else 1.0
        elif " documents per cell, " in line:
            m = _match(r"(\d+) documents per cell, (\d+) templates?, evidence absent in ([^ ]+), test seed (\d+); "
                       r"regression set: lengths <= (\d+)", line)
            p.problems, p.templates, p.absent_share, t.test_seed = int(m[1]), int(m[2]), float(m[3]), int(m[4])
    return t


def _train(lines):
    s = TrainSettings()
    if not lines:
        return s
    m = _match(r"(\d+) steps, batch (\d+), adamw lr ([^ ]+) betas \(([^,]+), ([^)]+)\) eps ([^ ]+) "
               r"weight decay ([^ ,]+)( on every tensor)?(, no bias correction)?", lines[1])
    s.steps, s.batch, s.lr = int(m[1]), int(m[2]), float(m[3])
    s.betas, s.eps, s.weight_decay = (float(m[4]), float(m[5])), float(m[6]), float(m[7])
    s.decay_all, s.bias_correction = m[8] is not None, m[9] is None
    m = _match(r"schedule (\w+), warm-up (\d+) steps(?:, down to ([^ ]+) x lr)?, grad clip ([^ ]+)", lines[2])
    s.schedule, s.warmup = m[1], int(m[2])
    s.min_lr_ratio = float(m[3]) if m[3] else 1.0
    s.grad_clip = 0.0 if m[4] == "off" else float(m[4])
    return s


def _attention(lines, plan):
    for line in lines:
        if line.startswith("embed "):
            m = re.search(r", training offset 0\.\.(\d+) on nonzero indices", line)
            plan.embed_offsets.append(int(m[1]) if m else 0)
        elif line.startswith("randomise "):
            m = _match(r"randomise (\w+): .* sorted sample of 0\.\.(\d+) .*", line)
            plan.sampled_channels.append((CHANNELS.index(m[1]), int(m[2]) + 1))
        elif line.startswith("rotate ") and plan.stretch is None:
            m = re.search(r", stretch (uniform|log_uniform)\(([^,]+), ([^)]+)\)", line)
            if m:
                plan.stretch = (m[1], float(m[2]), float(m[3]))
    for name, learned in _score_params(lines):
        (plan.learned_params if learned else plan.fixed_params).append(name)


def _score_params(lines):
    """(tensor name, learned) of each `param` line, named as posc's
    parameterTensorNames (compiler/plan/plan.cpp) names them."""
    out, taken = [], set()
    for i, line in enumerate(x for x in lines if x.startswith("param ")):
        m = _match(r"param ([^ \[]+)(?:\[h\])?(?:\[\d+\])?(?: table)? (learned|fixed).*", line)
        s = "".join(c if c.isalnum() else "_" for c in m[1])
        if not s or s in taken:
            s += f"_{i}"
        taken.add(s)
        out.append((s, m[2] == "learned"))
    return out


def learned_parameter_names(text):
    """The learned score parameters' tensor names of a plan text."""
    return [name for name, learned in _score_params(_sections(text).get("attention", [])) if learned]
