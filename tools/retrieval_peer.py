# An independent PyTorch peer for the long-context retrieval task: a 2-layer
# pre-norm transformer (RoPE, ALiBi or both) trained on its own generator of
# `kx ky is v .` documents, to tell what makes key -> value lookup among
# distractors learnable at CPU size, apart from posc's code. It shares no code
# with posc; docs/longctx.md records the runs.
#
#   /usr/bin/python3 tools/retrieval_peer.py [--key_tokens 1|2] [--filler 0|1] [--filler_from STEP]
#       [--length T] [--nmin N --nmax N] [--pos rope|alibi|both] [--review 0|1]
#       [--qs K] [--qend 0|1] [--induction 1] [--init_std S] [--emb_std S] [--lr ..] [--batch ..]
#       [--steps ..]
#
# A document: <bos>, N+1 statements `k is v .` (k one or two tokens) shuffled
# among filler words to `length` tokens, then questions. --qend 0 asks
# `Q: k ? A:` (the answer after A:); --qend 1 asks `Q: ? k` (the answer right
# after the key). --review 1 asks every statement once in random order,
# --qs K asks K statements drawn with replacement, otherwise one question.
# --induction 1 replaces the task by copying a repeated 10-token sequence (a
# check that the model and optimiser learn an induction head at all).
# Every 250 steps it prints the training loss and the accuracy of the first
# question on 256 fresh documents beside chance (1 / statements).
import math, random, sys, time, argparse
import torch, torch.nn as nn, torch.nn.functional as F
p = argparse.ArgumentParser()
p.add_argument('--key_tokens', type=int, default=2)
p.add_argument('--halves', type=int, default=48)
p.add_argument('--filler', type=int, default=1)   # 1: filler words pad the body to --length; 0: none
p.add_argument('--nmin', type=int, default=1); p.add_argument('--nmax', type=int, default=2)
p.add_argument('--width', type=int, default=128); p.add_argument('--layers', type=int, default=2)
p.add_argument('--heads', type=int, default=4)
p.add_argument('--lr', type=float, default=1e-3); p.add_argument('--batch', type=int, default=32)
p.add_argument('--steps', type=int, default=3000); p.add_argument('--review', type=int, default=1)
p.add_argument('--mlp', type=int, default=1); p.add_argument('--seed', type=int, default=0)
p.add_argument('--length', type=int, default=40)
p.add_argument('--pos', default='rope')
p.add_argument('--induction', type=int, default=0)
p.add_argument('--qend', type=int, default=0)  # question ends with the key
p.add_argument('--qs', type=int, default=0)  # >0: that many questions drawn with replacement
p.add_argument('--init_std', type=float, default=0)  # >0: GPT-2 style N(0, std) weights (posc's 0.02), zero biases
p.add_argument('--emb_std', type=float, default=0)  # >0: then the token embeddings N(0, emb_std)
p.add_argument('--filler_from', type=int, default=0)  # >0: documents without filler before this step
a = p.parse_args()
torch.manual_seed(a.seed); random.seed(a.seed); torch.set_num_threads(1)
STEP = 0  # the training step (documents follow --filler_from)
PAD,BOS,EOS,IS,STOP,Q,QM,A = range(8)
KX = 8; KY = KX + a.halves; V = KY + a.halves; NV = 64; W = V + NV; NW = 128; VOC = W + NW
def key(): return (random.randrange(a.halves), random.randrange(a.halves))
def ktoks(k): return [KX+k[0], KY+k[1]] if a.key_tokens == 2 else [KX+k[0]]
def doc():
    n = random.randint(a.nmin, a.nmax) + 1
    keys = []
    while len(keys) < n:
        k = key()
        if a.key_tokens == 1: k = (k[0], 0)
        if k not in keys: keys.append(k)
    vals = [random.randrange(NV) for _ in keys]
    stm = [ktoks(k) + [IS, V+v, STOP] for k, v in zip(keys, vals)]
    body_len = a.length - 1 - (len(ktoks(keys[0])) + 3)
    filler = max(0, body_len - sum(map(len, stm)))
    nf = filler if a.filler > 0 and STEP >= a.filler_from else 0
    pieces = stm + [[W+random.randrange(NW)] for _ in range(nf)]
    random.shuffle(pieces)
    toks = [BOS] + [t for pc in pieces for t in pc]
    order = list(range(n)); random.shuffle(order)
    qs = order if a.review else order[:1]
    if a.qs: qs = [random.randrange(n) for _ in range(a.qs)]
    mask = []
    for i, qi in enumerate(qs):
        toks += ([Q, QM] + ktoks(keys[qi])) if a.qend else ([Q] + ktoks(keys[qi]) + [QM, A])
        mask.append(len(toks) - 1); toks += [V+vals[qi]]
    return toks, mask, n - 1
def ind():
    seq = [V + random.randrange(NV) for _ in range(10)]
    toks = [BOS] + seq + seq
    return toks, list(range(11, 20)), 63
def batch(bs):
    ds = [ind() if a.induction else doc() for _ in range(bs)]
    L = max(len(d[0]) for d in ds)
    x = torch.full((bs, L), PAD); m = torch.zeros(bs, L, dtype=torch.bool)
    for i, (t, mk, _) in enumerate(ds):
        x[i, :len(t)] = torch.tensor(t); m[i, mk] = True
    return x, m, ds
class Rope(nn.Module):
    def __init__(s, d):
        super().__init__(); s.inv = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))
    def forward(s, x):
        T = x.shape[-2]; f = torch.outer(torch.arange(T).float(), s.inv)
        c, si = f.cos(), f.sin(); x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.stack([x1*c - x2*si, x1*si + x2*c], -1).flatten(-2)
class Block(nn.Module):
    def __init__(s):
        super().__init__(); d = a.width; s.h = a.heads; s.dh = d // a.heads
        s.ln1 = nn.LayerNorm(d); s.qkv = nn.Linear(d, 3*d, bias=False); s.o = nn.Linear(d, d, bias=False)
        s.ln2 = nn.LayerNorm(d); s.ff = nn.Sequential(nn.Linear(d, 4*d), nn.GELU(), nn.Linear(4*d, d)); s.rope = Rope(s.dh)
    def forward(s, x):
        B, T, d = x.shape
        q, k, v = s.qkv(s.ln1(x)).view(B, T, 3, s.h, s.dh).permute(2, 0, 3, 1, 4)
        if a.pos in ('rope', 'both'): q, k = s.rope(q), s.rope(k)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(s.dh)
        if a.pos in ('alibi', 'both'):
            slopes = torch.tensor([2 ** (-8 * (i + 1) / s.h) for i in range(s.h)]).view(1, -1, 1, 1)
            idx = torch.arange(T); dist = (idx.view(-1, 1) - idx.view(1, -1)).clamp(min=0).float()
            att = att - slopes * dist
        att = att.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float('-inf')).softmax(-1)
        x = x + s.o((att @ v).transpose(1, 2).reshape(B, T, d))
        if a.mlp: x = x + s.ff(s.ln2(x))
        return x
class M(nn.Module):
    def __init__(s):
        super().__init__(); s.e = nn.Embedding(VOC, a.width); s.b = nn.ModuleList([Block() for _ in range(a.layers)])
        s.ln = nn.LayerNorm(a.width); s.out = nn.Linear(a.width, VOC, bias=False)
    def forward(s, x):
        h = s.e(x)
        for b in s.b: h = b(h)
        return s.out(s.ln(h))
m = M()
if a.init_std > 0:
    with torch.no_grad():
        for name, w in m.named_parameters():
            if name.endswith('bias') or '.ln' in name or name.startswith('ln'): continue
            w.normal_(0.0, a.init_std)
if a.emb_std > 0:
    with torch.no_grad(): m.e.weight.normal_(0.0, a.emb_std)
opt = torch.optim.AdamW(m.parameters(), lr=a.lr, weight_decay=0.1)
t0 = time.time()
for step in range(1, a.steps + 1):
    STEP = step
    lr = a.lr * min(1, step / 200) * 0.5 * (1 + math.cos(math.pi * step / a.steps))
    for g in opt.param_groups: g['lr'] = lr
    x, mk, _ = batch(a.batch)
    logits = m(x[:, :-1]); tgt = x[:, 1:]; mm = mk[:, :-1]
    loss = F.cross_entropy(logits[mm], tgt[mm])
    opt.zero_grad(); loss.backward(); torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0); opt.step()
    if step % 250 == 0 or step == a.steps:
        with torch.no_grad():
            x, mk, ds = batch(256)
            pred = m(x).argmax(-1)
            # first question only (as evaluation asks one)
            ok = [pred[i, d[1][0]].item() == x[i, d[1][0] + 1].item() for i, d in enumerate(ds)]
            acc = sum(ok) / len(ok)
            chance = sum(1 / (d[2] + 1) for d in ds) / len(ds)
        print(f"step {step} loss {loss.item():.3f} acc {acc:.3f} chance {chance:.3f} t {time.time()-t0:.0f}s", flush=True)
