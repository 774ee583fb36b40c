"""Training a posc model in PyTorch, as posc trains it.

posc's step (runtime/train/trainer.cpp): the mean cross-entropy over the
answer tokens of the batch (log-softmax in float32, or float64 for a f64
model), AdamW with weight decay on matrices only (parameters of two or more
dimensions) and none on vectors (on every tensor with train.weight_decay_on =
all; without bias correction with train.bias_correction = false), the global
gradient norm clipped, and the
learning rate of ``lr_at`` (linear warm-up, then cosine, linear or
constant down to min_lr_ratio x lr). ``fine_tune`` runs that loop on a
posc.stream.DataStream (posc's own batches) or any iterable of batches;
``PoscGPT.save_safetensors`` then writes a file posc warm-starts from
(``train { init_from = "model.safetensors" }`` or ``--set
'train.init_from="model.safetensors"'``).

Per-sequence stretch factors (random stretch) are not applied: the emitted
rotations take the evaluation factor, so ``fine_tune`` refuses such plans.
Nor are dropout (posc draws its masks from LibTorch's generator) and
bf16_mixed's autocast: the model trains in its weights' dtype.
"""
import dataclasses
import math

import torch


def masked_loss(logits, targets, mask):
    """posc's training loss: mean negative log-likelihood of the targets where mask is set."""
    if logits.dtype != torch.float64:
        logits = logits.float()
    wanted = mask.reshape(-1).nonzero().reshape(-1)
    flat = logits.reshape(-1, logits.size(-1)).index_select(0, wanted)
    nll = -torch.log_softmax(flat, -1).gather(-1, targets.reshape(-1)[wanted].unsqueeze(-1)).squeeze(-1)
    return nll.sum() / max(1, wanted.numel())


def batch_loss(model, batch, embed_offsets=None):
    """The loss of one posc.tasks.Batch under the model."""
    device = next(model.parameters()).device
    logits = model(batch.tokens.to(device), batch.channels.to(device), embed_offsets)
    return masked_loss(logits, batch.targets.to(device), batch.loss_mask.to(device))


def lr_at(settings, step):
    """The learning rate of step `step` (0-based), posc's learningRateAt."""
    lr = settings.lr
    if settings.warmup > 0 and step < settings.warmup:
        return lr * (step + 1) / settings.warmup
    if settings.schedule == "constant":
        return lr
    min_lr = lr * settings.min_lr_ratio
    span = settings.steps - 1 - max(settings.warmup, 0)
    p = min(max((step - max(settings.warmup, 0)) / span if span > 0 else 1.0, 0.0), 1.0)
    if settings.schedule == "cosine":
        return min_lr + (lr - min_lr) * 0.5 * (1.0 + math.cos(math.pi * p))
    return lr - (lr - min_lr) * p


class AdamWWithoutBiasCorrection(torch.optim.Optimizer):
    """AdamW as posc steps it with train.bias_correction = false (MLX's
    default): p <- p (1 - lr wd); m <- b1 m + (1 - b1) g; v <- b2 v + (1 - b2) g^2;
    p <- p - lr m / (sqrt(v) + eps)."""

    def __init__(self, groups, lr, betas, eps):
        super().__init__(groups, dict(lr=lr, betas=betas, eps=eps, weight_decay=0.0))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["exp_avg"], state["exp_avg_sq"] = torch.zeros_like(p), torch.zeros_like(p)
                m, v = state["exp_avg"], state["exp_avg_sq"]
                p.mul_(1 - group["lr"] * group["weight_decay"])
                m.mul_(b1).add_(p.grad, alpha=1 - b1)
                v.mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
                p.addcdiv_(m, v.sqrt().add_(group["eps"]), value=-group["lr"])


def optimizer_for(model, settings):
    """AdamW with posc's two groups: decay on matrices (every tensor with
    train.weight_decay_on = all), none on the rest; without bias correction
    when the plan says so."""
    params = [p for p in model.parameters() if p.requires_grad]
    decayed = [p for p in params if settings.decay_all or p.dim() >= 2]
    groups = [{"params": decayed, "weight_decay": settings.weight_decay},
              {"params": [p for p in params if not any(p is d for d in decayed)], "weight_decay": 0.0}]
    groups = [g for g in groups if g["params"]]
    if not settings.bias_correction:
        return AdamWWithoutBiasCorrection(groups, lr=settings.lr, betas=settings.betas, eps=settings.eps)
    return torch.optim.AdamW(groups, lr=settings.lr, betas=settings.betas, eps=settings.eps)


def fine_tune(model, batches, settings, steps=None, on_step=None):
    """Trains `steps` steps (default settings.steps) from the model's weights.
    batches: a DataStream (next_batch) or an iterable of Batch or (Batch,
    stretch, offsets). settings: posc.plan.TrainSettings (model.plan.train
    holds the run's). Returns the losses, one per step."""
    if getattr(getattr(batches, "plan", None), "stretch", None) is not None:
        raise ValueError("this plan draws a stretch factor per training sequence, which the emitted rotations "
                         "cannot apply; train it with posc")
    if steps is not None:
        settings = dataclasses.replace(settings, steps=steps)  # the schedule spans the steps run
    source = iter(batches) if not hasattr(batches, "next_batch") else None
    optimizer = optimizer_for(model, settings)
    model.train()
    losses = []
    for step in range(settings.steps):
        item = batches.next_batch() if source is None else next(source)
        batch, _, offsets = item if isinstance(item, tuple) else (item, None, None)
        for group in optimizer.param_groups:
            group["lr"] = lr_at(settings, step)
        optimizer.zero_grad()
        loss = batch_loss(model, batch, offsets)
        loss.backward()
        if settings.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), settings.grad_clip)
        optimizer.step()
        losses.append(loss.item())
        if on_step:
            on_step(step, loss.item())
    model.eval()
    return losses
