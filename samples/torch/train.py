"""samples/torch/train.py: the whole flow on a small transformer-like model with PyTorch.

    # stagepart's own collector (CUPTI + NVTX, injected; output bytes through the helper)
    stagepart profile --attach --warmup-steps 2 -o profile.json -- python samples/torch/train.py

    # Nsight Systems (NVTX ranges, the default)
    nsys profile -t cuda,nvtx -o run python samples/torch/train.py
    nsys export --type sqlite run.nsys-rep
    stagepart import nsys run.sqlite --warmup-steps 2 -o profile.json

    # or the PyTorch profiler (record_function ranges)
    python samples/torch/train.py --kineto trace.json
    stagepart import kineto trace.json --warmup-steps 2 -o profile.json

    stagepart partition profile.json -s 4 -o plan.json
    stagepart export plan.json --to pippy

Needs torch and a CUDA device; not run in CI (the helper's logic is tested there with stand-in
modules, tests/python/test_stagepart_torch.py).
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "profiler", "python"))
import stagepart_torch  # noqa: E402


class Block(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = torch.nn.LayerNorm(d)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(d, 4 * d), torch.nn.GELU(), torch.nn.Linear(4 * d, d))

    def forward(self, x):
        return x + self.mlp(self.norm(x))


class Model(torch.nn.Module):
    def __init__(self, vocab=8192, d=1024, n=8):
        super().__init__()
        self.embedding = torch.nn.Embedding(vocab, d)
        self.layers = torch.nn.ModuleList(Block(d) for _ in range(n))
        self.head = torch.nn.Linear(d, vocab)

    def forward(self, tokens):
        x = self.embedding(tokens)
        for block in self.layers:
            x = block(x)
        return self.head(x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--kineto", metavar="TRACE", help="record with torch.profiler instead of NVTX")
    args = ap.parse_args()
    model = Model().cuda()
    opt = torch.optim.AdamW(model.parameters())
    ann = stagepart_torch.annotate(model, ["embedding", "layers.*", "head"],
                                   ranges="record_function" if args.kineto else "nvtx")
    tokens = torch.randint(0, 8192, (8, 512), device="cuda")

    def step():
        with ann.step():
            logits = model(tokens)
            with ann.loss():  # the loss is computed outside the model: name it
                loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), tokens.flatten())
            loss.backward()
            with ann.optimizer():
                opt.step()
                opt.zero_grad()

    if args.kineto:
        acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=acts) as prof:
            for _ in range(args.steps):
                step()
        prof.export_chrome_trace(args.kineto)
    else:
        for _ in range(args.steps):
            step()
    torch.cuda.synchronize()
    for name, s in ann.sizes().items():
        print(f"{name:12s} output {s['activation_bytes']:>12d} B  params {s['param_bytes']:>12d} B")


if __name__ == "__main__":
    main()
