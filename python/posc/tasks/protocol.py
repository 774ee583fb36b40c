"""The document protocol's cells, their documents and grading, as posc runs them.

Mirrors runtime/longctx/protocol.cpp: the cells are the cross product of
tasks x lengths x depths x distractors (or a seeded share of it), cells too
short for their distractors are skipped, and problem i of a cell is
``generate(spec)`` with template i mod templates, a seed mixed from the test
seed, every coordinate of the cell and i, and its evidence absent for the
declared share of retrieval and composition problems, spread evenly.
"""
import math
import random
import struct
from dataclasses import dataclass

from ..rng import mix_seed
from .documents import EOS, FIRST_KEY_HALF, FIRST_VALUE, NONE, SECOND_KEY_HALF, TASKS, DocumentSpec, token_class
from .document_generator import can_lack_evidence, minimum_length


@dataclass(frozen=True)
class Cell:
    task: str
    length: int
    depth: float
    distractors: int


def plan_cells(task):
    """(cells, skipped) of a DocumentTask's protocol (longctx::planCells)."""
    p = task.protocol
    all_cells = [Cell(t, length, depth, n) for t in p.tasks for length in p.lengths for depth in p.depths
                 for n in p.distractors]
    chosen = list(range(len(all_cells)))
    if p.fraction < 1.0:
        rng = random.Random(mix_seed(task.test_seed, 0x66726163))
        for i in range(len(chosen), 1, -1):
            j = rng.randrange(i)
            chosen[i - 1], chosen[j] = chosen[j], chosen[i - 1]
        chosen = sorted(chosen[:math.ceil(p.fraction * len(all_cells))])
    cells, skipped = [], []
    for i in chosen:
        cell = all_cells[i]
        needed = max(minimum_length(DocumentSpec(task=cell.task, template_index=templ, distractors=cell.distractors))
                     for templ in range(p.templates))
        if cell.length < needed or not 0.0 <= cell.depth <= 1.0:
            skipped.append(cell)
        else:
            cells.append(cell)
    return cells, skipped


def cell_documents(task, cell):
    """The DocumentSpecs of one cell (longctx::cellDocuments)."""
    p = task.protocol
    depth_bits = struct.unpack("<Q", struct.pack("<d", cell.depth))[0]
    base = task.test_seed
    for word in (TASKS.index(cell.task), cell.length, depth_bits, cell.distractors):
        base = mix_seed(base, word)
    specs = []
    for i in range(p.problems):
        absent = can_lack_evidence(cell.task) and (
            math.floor((i + 1) * p.absent_share + 1e-9) > math.floor(i * p.absent_share + 1e-9))
        specs.append(DocumentSpec(task=cell.task, length=cell.length, depth=cell.depth, distractors=cell.distractors,
                                  near_duplicates=task.near_duplicates, template_index=i % p.templates,
                                  authority=task.authority, evidence_present=not absent, seed=mix_seed(base, i)))
    return specs


def _until_eos(tokens):
    tokens = list(tokens)
    return tokens[:tokens.index(EOS)] if EOS in tokens else tokens


def _mentioned(doc, answer):
    c = doc.context
    if len(answer) == 1:
        return answer[0] in c
    return any(c[i] == answer[0] and c[i + 1] == answer[1] for i in range(len(c) - 1))


def _well_formed(a):
    if len(a) == 1:
        return token_class(a[0]) == "value"
    return len(a) == 2 and FIRST_KEY_HALF <= a[0] < SECOND_KEY_HALF and SECOND_KEY_HALF <= a[1] < FIRST_VALUE


def grade(doc, question, generated):
    """'correct', 'abstained' (<none> where the document holds the answer),
    'unsupported' (malformed, or never mentioned) or 'wrong'."""
    answer = _until_eos(generated)
    if answer == _until_eos(doc.questions[question].answer):
        return "correct"
    if answer == [NONE]:
        return "abstained"
    if not _well_formed(answer) or not _mentioned(doc, answer):
        return "unsupported"
    return "wrong"
