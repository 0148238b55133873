#!/usr/bin/env python3
"""tests/tools/make_module_traces.py OUTDIR: PyTorch profiler traces with module ranges and
fwdbwd links, and the per-layer times stagepart must find in them, computed here on their own.

The traces have the structure torch.profiler(with_modules=True) writes for a training loop:

  * two ranks (rank0.json, rank1.json; rank 1 runs 2% slower), 4 steps (ProfilerStep#N), step 0
    3x slower (warm-up), steps 1-3 at 0.99x, 1.00x, 1.01x;
  * module ranges "nn.Module: Class_N" (cat python_function) on the main thread: Model_0 holds
    Embedding_0, Sequential_0 (a container: Block_0..Block_3, each with two Linear children and
    a residual add of its own), LayerNorm_0, Linear_8 (the head) and the loss (no module);
  * every forward op (cat cpu_op) launches its kernels (cuda_runtime + kernel, args.correlation);
    its autograd op runs on a second thread, linked by a fwdbwd flow ("s" at the forward op's
    start, "f" at the backward op's start), inside an "autograd::engine::evaluate_function" op
    that, for a Linear, launches the bias gradient's reduction after the op itself;
  * Block_2 is checkpointed: its forward runs under no_grad inside a CheckpointFunction op (in
    Sequential_0, outside Block_2), and CheckpointFunctionBackward recomputes it (module ranges
    inside the backward: recomputation) before the recomputed ops' own backward ops;
  * Block_1's first Linear backward runs two kernels on two streams that overlap (busy < sum);
    Block_3's adds an NCCL kernel (communication, never a layer's busy time);
  * Optimizer.step#SGD.step and Optimizer.zero_grad#SGD.zero_grad annotations with kernels.

OUTDIR/both.json is rank 0's trace with stagepart's "<layer>/fwd" and "<layer>/bwd" ranges added
around the same work: both ways of naming layers must give the same times.

OUTDIR/expected.json: for --layers auto, --layers 3 and the both.json cross-check, each layer's
fwd_ms, bwd_ms and recompute_ms: per step and rank, the union of its kernels' intervals (NCCL
left out), summed over the ranks, then the median over steps 1-3.
"""
import json
import os
import statistics
import sys

US = 1000
MS = 1000 * US

PARENT = {"Embedding_0": "Model_0", "Sequential_0": "Model_0", "LayerNorm_0": "Model_0",
          "Linear_8": "Model_0"}
for b in range(4):
    PARENT[f"Block_{b}"] = "Sequential_0"
    PARENT[f"Linear_{2 * b}"] = f"Block_{b}"
    PARENT[f"Linear_{2 * b + 1}"] = f"Block_{b}"

AUTO = ["Embedding_0", "Block_0", "Block_1", "Block_2", "Block_3", "LayerNorm_0", "Linear_8"]
DEPTH3 = ["Embedding_0"] + [f"Linear_{i}" for i in range(8)] + ["LayerNorm_0", "Linear_8"]


def chosen_of(module, chosen):
    while module is not None:
        if module in chosen:
            return module
        module = PARENT.get(module)
    return None


class Rank:
    def __init__(self, pid, speed, naming):
        self.pid, self.speed, self.naming = pid, speed, naming
        self.ev = []
        self.corr = 1000
        self.flow = 0
        self.free = {}      # stream -> ns it is free
        self.kernels = []   # (step, module, phase, nccl, device-key, start, end)
        self.host = 5_000_000 * MS
        self.step = 0

    def x(self, cat, name, tid, start, end, args=None):
        e = {"ph": "X", "cat": cat, "name": name, "pid": self.pid, "tid": tid,
             "ts": round(start / US, 3), "dur": round((end - start) / US, 3)}
        if args:
            e["args"] = args
        self.ev.append(e)

    def kernel(self, tid, at, stream, ms, module, phase, nccl=False, after=None):
        self.corr += 1
        self.x("cuda_runtime", "cudaLaunchKernel", tid, at, at + 4 * US,
               {"correlation": self.corr})
        dur = int(round(ms * MS * self.scale))
        start = max(at + 5 * US, self.free.get(stream, 0)) if after is None else after
        self.free[stream] = start + dur
        name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL" if nccl else f"gemm_{module}_{phase}"
        self.x("kernel", name, 0, start, start + dur,
               {"correlation": self.corr, "device": 0, "stream": stream})
        self.ev[-1]["tid"] = stream
        self.kernels.append((self.step, module, phase, nccl, self.pid, start, start + dur))
        return start, start + dur

    def op(self, tid, name, module, phase, kernels, link=None, fwd_link=False):
        """an op of 30 us host time launching kernels [(stream, ms)]; link: the flow id it ends
        (a backward op), fwd_link: start a new flow (a forward op); returns the flow id"""
        t0 = self.host
        fid = None
        if fwd_link:
            self.flow += 1
            fid = self.flow
            self.ev.append({"ph": "s", "id": fid, "pid": self.pid, "tid": tid,
                            "ts": round(t0 / US, 3), "cat": "fwdbwd", "name": "fwdbwd"})
        if link is not None:
            self.ev.append({"ph": "f", "id": link, "pid": self.pid, "tid": tid,
                            "ts": round(t0 / US, 3), "cat": "fwdbwd", "name": "fwdbwd",
                            "bp": "e"})
        at = t0 + 5 * US
        for k in kernels:
            stream, ms = k[0], k[1]
            nccl = len(k) > 2 and k[2] == "nccl"
            self.kernel(tid, at, stream, ms, module, phase, nccl)
            at += 6 * US
        self.host = at + 10 * US
        self.x("cpu_op", name, tid, t0, self.host)
        self.host += 2 * US
        return fid

    def rng(self, cat, name, tid, fn):
        t0 = self.host
        self.host += 2 * US
        r = fn()
        self.host += 2 * US
        self.x(cat, name, tid, t0, self.host)
        self.host += 1 * US  # the next op starts after this range ends, never at its end
        return r

    def module(self, name, tid, fn):
        def body():
            if self.naming and name in AUTO and tid == 1:
                return self.rng("user_annotation", f"{name}/fwd", tid, fn)
            return fn()
        return self.rng("python_function", f"nn.Module: {name}", tid, body)

    def bwd(self, name, layer, fn, module=None):
        """a backward op on the autograd thread, in evaluate_function, in '<layer>/bwd' when
        naming; for a Linear (module) the engine reduces the bias gradient to its shape after
        the op, in evaluate_function but outside the op (as autograd's validate_outputs does)"""
        def body():
            r = fn()
            if module and module.startswith("Linear"):
                self.kernel(2, self.host, 7, 0.05, module, "bwd")
                self.host += 8 * US
            return r

        def inner():
            return self.rng("cpu_op", f"autograd::engine::evaluate_function: {name}", 2, body)
        if self.naming and layer in AUTO:
            return self.rng("user_annotation", f"{layer}/bwd", 2, inner)
        return inner()


def forward_block(r, b, links, checkpointed, tid=1, phase="fwd"):
    def lin(i, ms):
        def f():
            fid = r.op(tid, "aten::addmm", f"Linear_{i}", phase, [(7, ms * (1 + 0.1 * b))],
                       fwd_link=not checkpointed or phase == "rc")
            links.append((fid, f"Linear_{i}", ms * (1 + 0.1 * b)))
        r.module(f"Linear_{i}", tid, f)

    def body():
        lin(2 * b, 1.0)
        lin(2 * b + 1, 0.8)
        fid = r.op(tid, "aten::add", f"Block_{b}", phase, [(7, 0.1)],
                   fwd_link=not checkpointed or phase == "rc")
        links.append((fid, f"Block_{b}", 0.1))
    r.module(f"Block_{b}", tid, body)


def backward_of(r, links, overlap=False, nccl=False):
    for fid, module, ms in reversed(links):
        if fid is None:
            continue
        kernels = [(7, 2 * ms)]
        if overlap and module == "Linear_2":
            kernels = [(7, 1.2), (8, 1.0)]
        if nccl and module == "Linear_6":
            kernels.append((9, 0.3, "nccl"))
        name = "AddmmBackward0" if module.startswith("Linear") else "AddBackward0"
        layer = chosen_of(module, AUTO)
        r.bwd(name, layer, lambda k=kernels, m=module, f=fid: r.op(2, name, m, "bwd", k, link=f),
              module)


def run_step(r, step, scale):
    r.step, r.scale = step, scale * r.speed
    t_step = r.host
    r.host += 10 * US
    links = {}

    def model():
        def emb():
            links["emb"] = r.op(1, "aten::embedding", "Embedding_0", "fwd", [(7, 0.2)],
                                fwd_link=True)
        r.module("Embedding_0", 1, emb)

        def seq():
            for b in range(4):
                lst = links.setdefault(b, [])
                if b == 2:  # checkpointed: no_grad forward inside CheckpointFunction
                    def ckpt():
                        forward_block(r, b, lst, True)
                    t0 = r.host
                    r.flow += 1
                    links["ckpt"] = r.flow
                    r.ev.append({"ph": "s", "id": r.flow, "pid": r.pid, "tid": 1,
                                 "ts": round(t0 / US, 3), "cat": "fwdbwd", "name": "fwdbwd"})
                    r.host += 3 * US
                    ckpt()
                    r.host += 3 * US
                    r.x("cpu_op", "CheckpointFunction", 1, t0, r.host)
                else:
                    forward_block(r, b, lst, False)
        r.module("Sequential_0", 1, seq)

        def ln():
            links["ln"] = r.op(1, "aten::layer_norm", "LayerNorm_0", "fwd", [(7, 0.1)],
                               fwd_link=True)
        r.module("LayerNorm_0", 1, ln)

        def head():
            links["head"] = r.op(1, "aten::addmm", "Linear_8", "fwd", [(7, 0.5)], fwd_link=True)
        r.module("Linear_8", 1, head)
        links["loss"] = r.op(1, "aten::cross_entropy_loss", "Model_0", "fwd", [(7, 0.05)],
                             fwd_link=True)
    r.module("Model_0", 1, model)

    # backward, autograd thread
    r.host += 20 * US
    r.bwd("NllLossBackward0", None,
          lambda: r.op(2, "NllLossBackward0", "Model_0", "bwd", [(7, 0.05)], link=links["loss"]))
    r.bwd("AddmmBackward0", "Linear_8",
          lambda: r.op(2, "AddmmBackward0", "Linear_8", "bwd", [(7, 1.0)], link=links["head"]),
          "Linear_8")
    r.bwd("NativeLayerNormBackward0", "LayerNorm_0",
          lambda: r.op(2, "NativeLayerNormBackward0", "LayerNorm_0", "bwd", [(7, 0.2)],
                       link=links["ln"]))
    for b in reversed(range(4)):
        if b == 2:
            def ckpt_bwd():
                t0 = r.host
                r.ev.append({"ph": "f", "id": links["ckpt"], "pid": r.pid, "tid": 2,
                             "ts": round(t0 / US, 3), "cat": "fwdbwd", "name": "fwdbwd",
                             "bp": "e"})
                r.host += 3 * US
                rc = []
                if r.naming:  # the helper's recompute is a forward inside the backward
                    r.rng("user_annotation", "Block_2/fwd", 2,
                          lambda: forward_block(r, 2, rc, True, tid=2, phase="rc"))
                else:
                    forward_block(r, 2, rc, True, tid=2, phase="rc")
                backward_of(r, rc)
                r.host += 3 * US
                r.x("cpu_op", "CheckpointFunctionBackward", 2, t0, r.host)
            r.bwd("CheckpointFunctionBackward", "Block_2", ckpt_bwd)
        else:
            backward_of(r, links[b], overlap=(b == 1), nccl=(b == 3))
    r.bwd("EmbeddingBackward0", "Embedding_0",
          lambda: r.op(2, "EmbeddingBackward0", "Embedding_0", "bwd", [(7, 0.3)],
                       link=links["emb"]))
    # optimizer, main thread
    r.host += 20 * US
    r.rng("user_annotation", "Optimizer.zero_grad#SGD.zero_grad", 1,
          lambda: r.op(1, "aten::zero_", None, "opt", [(7, 0.05)]))
    r.rng("user_annotation", "Optimizer.step#SGD.step", 1,
          lambda: r.op(1, "aten::_foreach_add_", None, "opt", [(7, 0.4)]))
    r.host += 10 * US
    r.x("user_annotation", f"ProfilerStep#{step}", 1, t_step, r.host)
    r.host = max(r.host, max(r.free.values())) + 100 * US


def trace(pid, speed, naming):
    r = Rank(pid, speed, naming)
    for step, scale in enumerate([3.0, 0.99, 1.00, 1.01]):
        run_step(r, step, scale)
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100"}],
           "traceEvents": r.ev}
    return doc, r.kernels


def union_ms(iv):
    total, end = 0, None
    for s, e in sorted(iv):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total / MS


def expected(kernels, chosen):
    """per layer: the median over steps 1-3 of the summed per-device union of its kernels"""
    sums = {}
    for step, module, phase, nccl, dev, s, e in kernels:
        if nccl or step < 1 or phase == "opt":
            continue
        layer = chosen_of(module, chosen)
        if layer is None:
            continue
        ph = {"fwd": "fwd_ms", "bwd": "bwd_ms", "rc": "recompute_ms"}[phase]
        sums.setdefault((layer, ph, step, dev), []).append((s, e))
    out = []
    for layer in chosen:
        row = {"name": layer}
        for ph in ("fwd_ms", "bwd_ms", "recompute_ms"):
            per_step = []
            for step in (1, 2, 3):
                per_step.append(sum(union_ms(iv) for (l, p, st, d), iv in sums.items()
                                    if l == layer and p == ph and st == step))
            row[ph] = statistics.median(per_step)
        out.append(row)
    return out


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    k_all = []
    for rank, speed in ((0, 1.0), (1, 1.02)):
        doc, k = trace(100 + rank, speed, False)
        k_all += k
        with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
            json.dump(doc, f)
    doc0, k0 = trace(100, 1.0, True)
    with open(os.path.join(out, "both.json"), "w") as f:
        json.dump(doc0, f)
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump({"auto": expected(k_all, AUTO), "depth3": expected(k_all, DEPTH3),
                   "both": expected(k0, AUTO)}, f, indent=1)


if __name__ == "__main__":
    main()
