"""posc's document generator (runtime/longctx/document.cpp, layout.cpp) in Python.

``generate(spec)`` lays out one document: the task's evidence at its depth
(or distance), distractor statements at random places in the remaining
room, filler words elsewhere, and the questions with their answers. Every
draw comes from ``random.Random(spec.seed)`` in posc's order, so the result
is the document posc builds from the same spec.
"""
import math
import random
from dataclasses import replace

from .documents import (BOS, EOS, FILLER_WORDS, FIRST_FILLER, FIRST_VALUE, KEY_HALVES, NONE, ORDER_GAP, RULE, STOP,
                        LATEST, EARLIEST, CORRECTION_RULE, TEMPLATES, VALUES, Document, Question, Span, chain_question,
                        header_length, key_question, key_tokens, longest_statement, order_question, question_length,
                        statement_length, statement_span, shift)


def can_lack_evidence(task):
    return task in ("retrieval", "composition")


def minimum_length(spec):
    """The fewest prompt tokens with which a spec lays out at every depth."""
    templ = min(max(spec.template_index, 0), TEMPLATES - 1)
    plain = statement_length(templ, False, False)
    fixed = 1 + header_length(spec) + question_length(spec)
    if not spec.filler:
        return fixed + ((1 if spec.evidence_present else 0) + max(0, spec.distractors)) * plain
    evidence = {"retrieval": plain if spec.evidence_present else 0,
                "composition": (statement_length(templ, True, False) if spec.evidence_present else 0) + plain,
                "contradiction": 2 * plain + 1, "order": 2 * plain}[spec.task]
    distractor = longest_statement(templ) - 1 if spec.task == "composition" else plain
    anchored = {"retrieval": 1 if spec.evidence_present else 0, "composition": 2 if spec.evidence_present else 1,
                "contradiction": 2, "order": 1}[spec.task]
    slack = anchored * (distractor - 1) if spec.distractors > 0 else 0
    return fixed + evidence + max(0, spec.distractors) * distractor + slack


class KeyPool:
    """Fresh keys and every other draw of a document, from one random.Random."""

    def __init__(self, rng):
        self.rng, self.used = rng, []

    def draw(self, n):
        return self.rng.randrange(n)

    def take(self, key):
        if key in self.used:
            return False
        self.used.append(key)
        return True

    def fresh(self):
        while True:
            key = (self.draw(KEY_HALVES), self.draw(KEY_HALVES))
            if self.take(key):
                return key

    def near_duplicate(self, like, shared_half):
        def make(h):
            return (like[0], h) if shared_half == 0 else (h, like[1])
        free = [h for h in range(KEY_HALVES) if make(h) not in self.used]
        if not free:
            raise ValueError(f"too many near-duplicate distractors: a key has only {2 * (KEY_HALVES - 1)} near "
                             "duplicates")
        key = make(free[self.draw(len(free))])
        self.take(key)
        return key


def lay_body(body, anchored, distractors, pool):
    """Anchored (offset, span) pieces at their offsets, each distractor in a
    free region chosen in proportion to its room, filler elsewhere (layBody)."""
    anchored = sorted(anchored, key=lambda p: p[0])
    regions, cursor = [], 0
    for offset, span in anchored:
        regions.append({"begin": cursor, "end": offset, "pieces": [], "used": 0})
        cursor = offset + len(span.tokens)
    regions.append({"begin": cursor, "end": body, "pieces": [], "used": 0})
    for i, d in enumerate(distractors):
        size = len(d.tokens)
        room = sum(r["end"] - r["begin"] - r["used"] for r in regions if r["end"] - r["begin"] - r["used"] >= size)
        if room == 0:
            raise ValueError(f"the document is too short: no room left in its body for distractor {i + 1} of "
                             f"{len(distractors)} ({size} tokens)")
        pick = pool.draw(room)
        for r in regions:
            left = r["end"] - r["begin"] - r["used"]
            if left < size:
                continue
            if pick < left:
                r["used"] += size
                r["pieces"].append(d)
                break
            pick -= left
    laid = Span()
    for ri, r in enumerate(regions):
        fill = r["end"] - r["begin"] - r["used"]
        at = sorted(((pool.draw(fill + 1), i) for i in range(len(r["pieces"]))), key=lambda x: x[0])
        written = 0
        for point, index in at:
            laid.tokens += [FIRST_FILLER + pool.draw(FILLER_WORDS) for _ in range(point - written)]
            written = point
            laid.append(r["pieces"][index])
        laid.tokens += [FIRST_FILLER + pool.draw(FILLER_WORDS) for _ in range(fill - written)]
        if ri < len(anchored):
            laid.append(anchored[ri][1])
    return laid


def _validate(spec):
    if not 0 <= spec.template_index < TEMPLATES:
        raise ValueError(f"template {spec.template_index} does not exist: templates are 0 to {TEMPLATES - 1}")
    if not 0.0 <= spec.depth <= 1.0:
        raise ValueError(f"depth {spec.depth} is outside [0, 1]")
    if spec.distance is not None and spec.distance < 0:
        raise ValueError(f"distance {spec.distance} is negative")
    if spec.distractors < 0:
        raise ValueError(f"{spec.distractors} distractors")
    if not spec.evidence_present and not can_lack_evidence(spec.task):
        raise ValueError(f"a {spec.task} document always holds its evidence")
    if not spec.filler:
        if spec.task != "retrieval":
            raise ValueError(f"a {spec.task} document needs filler: documents without filler are retrieval only")
        if spec.distance is not None:
            raise ValueError("a document without filler places its evidence by depth, not distance")
    elif spec.length < minimum_length(spec):
        raise ValueError(f"length {spec.length} is too short for a {spec.task} document with {spec.distractors} "
                         f"distractors: it needs at least {minimum_length(spec)} tokens")


def _round_offset(fraction, room):
    return int(math.floor(fraction * room + 0.5)) if fraction * room >= 0 else -int(math.floor(-fraction * room + 0.5))


def generate(spec):
    """The document a DocumentSpec describes (longctx::generate); ValueError
    with the reason for a spec that cannot be laid out."""
    _validate(spec)
    pool = KeyPool(random.Random(spec.seed))
    templ, header = spec.template_index, header_length(spec)
    length = spec.length if spec.filler else minimum_length(spec)
    body = length - 1 - header - question_length(spec)

    def primary_offset(size):
        room = body - size
        if spec.distance is not None:
            if spec.distance > room:
                raise ValueError(f"distance {spec.distance} is past the start of the body ({room} tokens before the "
                                 f"question at most)")
            return room - spec.distance
        if not spec.filler:
            return size * _round_offset(spec.depth, spec.distractors)
        return _round_offset(spec.depth, room)

    anchored, questions, primary = [], [], False
    queried = pool.fresh()
    if spec.task == "retrieval":
        v = pool.draw(VALUES)
        if spec.evidence_present:
            s = statement_span(templ, queried, v, "evidence", False)
            anchored.append((primary_offset(len(s.tokens)), s))
            primary = True
            questions.append(Question(key_question(templ, queried), [FIRST_VALUE + v, EOS], "main"))
        else:
            questions.append(Question(key_question(templ, queried), [NONE, EOS], "main"))
    elif spec.task == "composition":
        middle = pool.fresh()
        c = pool.draw(VALUES)
        hop2 = statement_span(templ, middle, c, "evidence", False)
        c_answer = [FIRST_VALUE + c, EOS]
        if spec.evidence_present:
            hop1 = statement_span(templ, queried, middle, "evidence", False)
            n1, n2 = len(hop1.tokens), len(hop2.tokens)
            at1 = primary_offset(n1)
            first_fraction = at1 / (body - n1) if body > n1 else 0.0
            at2 = _round_offset(math.fmod(first_fraction + 0.5, 1.0), body - n2)
            if at2 < at1 + n1 and at1 < at2 + n2:  # overlap in a very short body
                at2 = at1 + n1 if at1 + n1 + n2 <= body else at1 - n2
            if at2 < 0:
                raise ValueError("the document is too short for the two hops of a composition")
            anchored += [(at1, hop1), (at2, hop2)]
            primary = True
            questions.append(Question(chain_question(templ, queried), c_answer, "main"))
            questions.append(Question(key_question(templ, queried), key_tokens(middle) + [EOS], "hop 1"))
        else:
            anchored.append((primary_offset(len(hop2.tokens)), hop2))
            questions.append(Question(chain_question(templ, queried), [NONE, EOS], "main"))
            questions.append(Question(key_question(templ, queried), [NONE, EOS], "hop 1"))
        questions.append(Question(key_question(templ, middle), c_answer, "hop 2"))
    elif spec.task == "contradiction":
        holds = pool.draw(VALUES)
        other = pool.draw(VALUES - 1)
        other = other + 1 if other >= holds else other
        authoritative = statement_span(templ, queried, holds, "evidence", spec.authority == "correction")
        superseded = statement_span(templ, queried, other, "superseded", False)
        a, s, n = primary_offset(len(authoritative.tokens)), len(superseded.tokens), len(authoritative.tokens)
        if spec.authority == "latest" and a < s:
            a = s
        if spec.authority == "earliest" and a + n > body - s:
            a = body - s - n
        starts = []
        if spec.authority != "earliest":
            starts += [x for x in range(0, a + 1) if x + s <= a]
        if spec.authority != "latest":
            starts += [x for x in range(a + n, body + 1) if x + s <= body]
        if not starts:
            raise ValueError("the document is too short for two contradicting statements")
        at = starts[pool.draw(len(starts))]
        anchored += [(a, authoritative), (at, superseded)]
        primary = True
        questions.append(Question(key_question(templ, queried), [FIRST_VALUE + holds, EOS], "main"))
    elif spec.task == "order":
        second = pool.fresh()
        first_statement = statement_span(templ, queried, pool.draw(VALUES), "evidence", False)
        second_statement = statement_span(templ, second, pool.draw(VALUES), "evidence", False)
        gap = pool.draw(ORDER_GAP + 1)
        d = statement_length(templ, False, False)
        reserved = spec.distractors * d + (d - 1) if spec.distractors > 0 else 0
        room = body - len(first_statement.tokens) - len(second_statement.tokens) - reserved
        gap = min(gap, max(0, room))
        pair = first_statement
        pair.tokens += [FIRST_FILLER + pool.draw(FILLER_WORDS) for _ in range(gap)]
        pair.append(second_statement)
        anchored.append((primary_offset(len(pair.tokens)), pair))
        primary = True
        swap = pool.draw(2) == 1
        question = order_question(templ, second, queried) if swap else order_question(templ, queried, second)
        questions.append(Question(question, key_tokens(queried) + [EOS], "main"))
    else:
        raise ValueError(f"unknown document task {spec.task!r}")
    primary_at = anchored[0][0] if primary else -1

    distractors = []
    for i in range(spec.distractors):
        key = pool.near_duplicate(queried, i % 2) if spec.near_duplicates else pool.fresh()
        obj = pool.draw(VALUES)
        if spec.task == "composition" and pool.draw(2) == 1:
            obj = pool.fresh()
        distractors.append(statement_span(templ, key, obj, "distractor", False))

    laid = lay_body(body, anchored, distractors, pool)
    start = 1 + header
    context = [BOS]
    if header:
        context += [RULE, {"latest": LATEST, "earliest": EARLIEST}.get(spec.authority, CORRECTION_RULE), STOP]
    context += laid.tokens
    doc_spec = replace(spec, length=length)
    return Document(doc_spec, context, [shift(st, start) for st in laid.statements], questions,
                    start + primary_at if primary else -1)
