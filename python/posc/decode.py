"""Greedy decoding and posc's evaluation, in Python.

As posc's decoder (runtime/eval/greedy.cpp, documents.cpp): the prompt is
read, then the argmax token is appended with the channels it would have in
a training sequence, until <eos> or the most answer tokens the problem can
need. Addition feeds a non-digit token back with its own kind and column 0
and relabels randomised channels with each problem's evaluation labels;
problems are decoded in groups of equal prompt length. This decoder runs a
full forward pass per emitted token (posc's KV cache gives the same tokens:
its reference decoder checks that).
"""
import torch

from .tasks import document_sequences, protocol
from .tasks.addition import AdditionTokenizer, evaluation_problems
from .tasks.document_generator import generate
from .tasks.documents import EOS, MAX_ANSWER_TOKENS


def _device(model):
    return next(model.parameters()).device


@torch.no_grad()
def greedy(model, prompts, next_channels, max_tokens, eos):
    """Decodes equal-length prompts together. prompts: list of (tokens,
    channels) with channels as 5 lists; next_channels(row, i, token) gives
    the channels of row's i-th emitted token; max_tokens per row. Returns
    each row's emitted tokens (up to and including <eos>)."""
    device = _device(model)
    tokens = torch.tensor([t for t, _ in prompts], device=device)
    channels = torch.tensor([c for _, c in prompts], device=device).transpose(0, 1)
    out = [[] for _ in prompts]
    done = [False] * len(prompts)
    for i in range(max(max_tokens)):
        nxt = model(tokens, channels)[:, -1].argmax(-1).tolist()
        for r, t in enumerate(nxt):
            if not done[r]:
                out[r].append(t)
                done[r] = t == eos or len(out[r]) >= max_tokens[r]
        if all(done):
            break
        step = [next_channels(r, min(i, max_tokens[r] - 1), t) for r, t in enumerate(nxt)]
        tokens = torch.cat([tokens, torch.tensor(nxt, device=device).view(-1, 1)], 1)
        channels = torch.cat([channels, torch.tensor(step, device=device).t().unsqueeze(-1)], 2)
    return out


def _groups(lengths, batch):
    """Indices grouped by prompt length (stable), in chunks of at most batch."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    start = 0
    while start < len(order):
        end = start
        while end < len(order) and end - start < batch and lengths[order[end]] == lengths[order[start]]:
            end += 1
        yield order[start:end]
        start = end


def decode_addition(model, tokenizer, problems, samplings=(), batch=90):
    """Greedy answers (token lists) for addition problems, in their order."""
    prompts, labels = [], []
    for p in problems:
        s = tokenizer.encode_prompt(p)
        labels.append(tokenizer.labels(list(samplings), p))
        prompts.append((s.tokens, labels[-1].apply([list(c) for c in s.channels])))
    answers = [None] * len(problems)
    for group in _groups([len(t) for t, _ in prompts], batch):
        def next_channels(r, i, token, group=group):
            p = problems[group[r]]
            return labels[group[r]].apply(tokenizer.emitted_channels(p, i, token))
        emitted = greedy(model, [prompts[g] for g in group], next_channels,
                         [tokenizer.max_answer_tokens(problems[g]) for g in group], tokenizer.vocab.eos)
        for g, e in zip(group, emitted):
            answers[g] = e
    return answers


def evaluate_addition(model, plan, batch=90):
    """{digits: (correct, total)} over posc's test problems of an addition plan."""
    tokenizer = AdditionTokenizer(plan.task)
    out = {}
    for digits, problems in evaluation_problems(plan.task).items():
        answers = decode_addition(model, tokenizer, problems, plan.sampled_channels, batch)
        correct = sum(tokenizer.decode_answer(a) == p.answer for a, p in zip(answers, problems))
        out[digits] = (correct, len(problems))
    return out


def decode_documents(model, prompts, batch=32):
    """Greedy answers for (document, question) pairs, in their order."""
    answers = [None] * len(prompts)
    seqs = [document_sequences.encode(doc, q, False) for doc, q in prompts]
    for group in _groups([len(s.tokens) for s in seqs], batch):
        def next_channels(r, i, token, group=group):
            doc, q = prompts[group[r]]
            return document_sequences.answer_channels(doc, q, i, token)
        emitted = greedy(model, [(seqs[g].tokens, seqs[g].channels) for g in group], next_channels,
                         [MAX_ANSWER_TOKENS] * len(group), EOS)
        for g, e in zip(group, emitted):
            answers[g] = e
    return answers


def evaluate_documents(model, plan, batch=32):
    """Per protocol cell of a document plan: its grades as posc counts them
    (correct, abstained, unsupported, wrong over main questions; hop1, hop2
    correct for composition's controls)."""
    results = []
    cells, _ = protocol.plan_cells(plan.task)
    for cell in cells:
        docs = [generate(spec) for spec in protocol.cell_documents(plan.task, cell)]
        prompts = [(d, q) for d in docs for q in range(len(d.questions))]
        counts = dict.fromkeys(("correct", "abstained", "unsupported", "wrong", "hop1", "hop2"), 0)
        for (doc, q), answer in zip(prompts, decode_documents(model, prompts, batch)):
            g = protocol.grade(doc, q, answer)
            if q == 0:
                counts[g] += 1
            elif g == "correct":
                counts[f"hop{q}"] += 1
        results.append((cell, len(docs), counts))
    return results
