"""posc's training data stream, batch for batch.

posc draws a seed's batches from one std::mt19937_64 seeded through
SplitMix64 (runtime/train/trainer.cpp, sampling.cpp), in this order each
step: the batch (addition problems, or documents), the relabelling of
randomised channels, one stretch factor per sequence when a rotation draws
one, then each Abacus table's offset per sequence. ``DataStream`` makes the
same draws, so ``next_batch()`` returns the batch posc trains on at that
step (``posc run --dump-training`` writes posc's for comparison), and a
fine-tune in Python can continue on posc's own stream.
"""
import math

import torch

from .rng import data_rng, unit_53
from .tasks import addition, document_sequences
from .tasks.batch import randomize_channels


class DataStream:
    """The training batches of `plan` (posc.plan.Plan) for one seed."""

    def __init__(self, plan, seed):
        self.plan, self.rng = plan, data_rng(seed)
        if plan.task.kind == "addition":
            self.tokenizer = addition.AdditionTokenizer(plan.task)

    def next_batch(self, batch=None):
        """(Batch, stretch (B,) float64 or None, embed_offsets (E, B) int64 or None)."""
        p, rng = self.plan, self.rng
        size = batch or p.train.batch
        if p.task.kind == "documents":
            b = document_sequences.training_batch(p.task, size, rng)
        else:
            b = addition.training_batch(p.task, self.tokenizer, size, rng)
        randomize_channels(p.sampled_channels, b, rng)
        stretch = None
        if p.stretch is not None:
            kind, lo, hi = p.stretch
            u = [unit_53(rng) for _ in range(size)]
            stretch = torch.tensor([lo + (hi - lo) * x if kind == "uniform" else
                                    math.exp(math.log(lo) + (math.log(hi) - math.log(lo)) * x) for x in u],
                                   dtype=torch.float64)
        offsets = None
        if any(o > 0 for o in p.embed_offsets):
            offsets = torch.zeros(len(p.embed_offsets), size, dtype=torch.int64)
            for i, o in enumerate(p.embed_offsets):
                if o > 0:
                    offsets[i] = torch.tensor([rng() % (o + 1) for _ in range(size)])
        return b, stretch, offsets
