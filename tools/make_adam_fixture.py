#!/usr/bin/env python3
"""Reference for the optimizer step of attncap train (src/train/train_opt.c): PyTorch's own Adam
(torch.optim.Adam, L2 weight decay), clip_grad_norm_, and the weight average of `--ema`
(ema = d ema + (1 - d) p after each step, d = min(D, (1 + t) / (10 + t)), t = steps before this one).

Regenerate: /usr/bin/python3 tools/make_adam_fixture.py > tests/fixtures/adam/adam.json
"""
import json

import torch

torch.manual_seed(7)
n, steps = 53, 7
lr, wd, clip, D = 0.01, 0.001, 1.5, 0.9
p = torch.nn.Parameter(torch.randn(n))
p0 = p.detach().clone()
opt = torch.optim.Adam([p], lr=lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=wd)
ema = p0.clone().double()  # the average starts at the initial weights
grads, norms = [], []
for t in range(steps):
    # a few steps big enough to be clipped, a few not
    g = torch.randn(n) * (0.6 if t % 2 else 0.05)
    grads.append(g.tolist())
    p.grad = g.clone()
    norms.append(float(torch.nn.utils.clip_grad_norm_([p], clip)))
    opt.step()
    d = min(D, (1.0 + t) / (10.0 + t))
    ema = d * ema + (1 - d) * p.detach().double()
st = opt.state[p]
json.dump({"n": n, "steps": steps, "lr": lr, "wd": wd, "clip": clip, "ema_decay": D,
           "p0": p0.tolist(), "grads": grads, "norms": norms, "p": p.detach().tolist(),
           "m": st["exp_avg"].tolist(), "v": st["exp_avg_sq"].tolist(), "ema": ema.tolist()},
          __import__("sys").stdout)
