"""Tokenised sequences, padded batches and randomised channels, as posc makes them.

Every token carries five integer channels (plan::Channel): position, column,
row, kind (0 digit/content, 1 separator/marker, 2 special) and segment. A
batch (runtime/task/batch.cpp) right-pads each sequence with the pad token:
padding continues the position channel, has column 0, the row of the
sequence's last token and kind special; ``targets[t] = tokens[t + 1]`` and
``loss_mask`` marks the positions whose target counts. Randomised channels
(runtime/task/sampling.cpp) relabel a channel's values 0..V of each row by a
sorted sample of V + 1 distinct integers below a range (Floyd's algorithm).
"""
from dataclasses import dataclass, field
from typing import List

import torch

from ..rng import MT19937_64, splitmix64, uniform_below

POSITION, COLUMN, ROW, KIND, SEGMENT = range(5)
CHANNEL_COUNT = 5
DIGIT, SEPARATOR, SPECIAL = 0, 1, 2  # values of the kind channel


@dataclass
class Sequence:
    """One tokenised problem: tokens, their channels (5 lists) and where the
    answer starts (tokens before it are the prompt)."""
    tokens: List[int] = field(default_factory=list)
    channels: List[List[int]] = field(default_factory=lambda: [[] for _ in range(CHANNEL_COUNT)])
    prompt_length: int = 0

    def push(self, token, position=None, column=0, row=0, kind=DIGIT, segment=0):
        values = (len(self.tokens) if position is None else position, column, row, kind, segment)
        for c, v in enumerate(values):
            self.channels[c].append(v)
        self.tokens.append(token)

    def tensors(self):
        """(tokens (1, L), channels (5, 1, L)) int64, ready for the model."""
        return torch.tensor([self.tokens]), torch.tensor(self.channels).unsqueeze(1)


@dataclass
class Batch:
    """A rectangular batch: tokens, targets, loss_mask (B, L) and channels (5, B, L)."""
    tokens: torch.Tensor
    targets: torch.Tensor
    loss_mask: torch.Tensor
    channels: torch.Tensor


def make_batch(sequences, pad, loss_mask_rows=None):
    """Right-pads sequences into a Batch (task::makeBatch). The loss mask is
    the answer (from prompt_length - 1 to the last target) unless
    loss_mask_rows gives each row's masked positions."""
    length = max(len(s.tokens) for s in sequences)
    tokens, targets, mask = [], [], []
    channels = [[] for _ in range(CHANNEL_COUNT)]
    for r, s in enumerate(sequences):
        n = len(s.tokens)
        tokens.append(s.tokens + [pad] * (length - n))
        targets.append(s.tokens[1:] + [pad] * (length - n + 1) if n else [pad] * length)
        if loss_mask_rows is None:
            mask.append([1 if max(0, s.prompt_length - 1) <= t < n - 1 else 0 for t in range(length)])
        else:
            wanted = set(loss_mask_rows[r])
            mask.append([1 if t in wanted else 0 for t in range(length)])
        last_row = s.channels[ROW][-1] if n else 0
        pad_values = (list(range(n, length)), [0] * (length - n), [last_row] * (length - n),
                      [SPECIAL] * (length - n), [0] * (length - n))
        for c in range(CHANNEL_COUNT):
            channels[c].append(s.channels[c] + pad_values[c])
    return Batch(torch.tensor(tokens), torch.tensor(targets), torch.tensor(mask), torch.tensor(channels))


def sorted_sample(n, value_range, rng):
    """n distinct integers of 0..range-1, sorted (Floyd's algorithm on posc's sampler)."""
    chosen = set()
    for j in range(value_range - n, value_range):
        t = uniform_below(j + 1, rng)
        chosen.add(j if t in chosen else t)
    return sorted(chosen)


def _fits(largest, smallest, value_range):
    if smallest < 0 or largest + 1 > value_range:
        raise ValueError(f"channel values 0..{largest} do not fit the range 0..{value_range - 1}")


def randomize_channels(samplings, batch, rng):
    """Relabels each row's values of each sampled channel in place
    (task::randomizeChannels); samplings are (channel, range) pairs."""
    for channel, value_range in samplings:
        rows = batch.channels[channel].tolist()
        for r, row in enumerate(rows):
            _fits(max(row), min(row), value_range)
            label = sorted_sample(max(row) + 1, value_range, rng)
            rows[r] = [label[v] for v in row]
        batch.channels[channel] = torch.tensor(rows)


class ChannelLabels:
    """One test problem's evaluation labels (task::evaluationLabels): the
    same relabelling in every decoder, drawn from a generator seeded by the
    problem's digits. Values past a map keep its last label."""

    def __init__(self, maps=()):
        self.maps = list(maps)  # (channel, labels)

    @staticmethod
    def for_problem(samplings, full_sequence, operands):
        """operands: the problem's operands as lists of digits, units first."""
        if not samplings:
            return ChannelLabels()
        seed = 0x7E57
        for digits in operands:
            seed = splitmix64(seed ^ len(digits))
            for d in digits:
                seed = splitmix64(seed ^ d)
        rng = MT19937_64(seed)
        maps = []
        for channel, value_range in samplings:
            values = full_sequence.channels[channel]
            largest = max(values) if values else 0
            _fits(largest, 0, value_range)
            maps.append((channel, sorted_sample(largest + 1, value_range, rng)))
        return ChannelLabels(maps)

    def apply(self, channels):
        """Relabels a list of 5 channel lists, or 5 values of one token, in place."""
        for channel, label in self.maps:
            values = channels[channel]
            if isinstance(values, list):
                channels[channel] = [label[min(max(v, 0), len(label) - 1)] for v in values]
            else:
                channels[channel] = label[min(max(values, 0), len(label) - 1)]
        return channels
