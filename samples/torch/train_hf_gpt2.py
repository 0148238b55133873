"""samples/torch/train_hf_gpt2.py: a Hugging Face GPT-2 small trained a few steps, annotated by
stagepart's PyTorch helper: the real program the GPU check profiles (scripts/gpu-check.sh).

    # stagepart's collector (CUPTI + NVTX, injected)
    stagepart profile --attach --warmup-steps 3 -o profile.json -- \\
        python samples/torch/train_hf_gpt2.py --steps 10

    # the same program under the PyTorch profiler, for comparison
    python samples/torch/train_hf_gpt2.py --steps 10 --kineto trace.json
    stagepart import kineto trace.json --warmup-steps 3 -o kineto.json

The model is built from GPT2Config (no weights are downloaded), its output layer untied from the
embedding (a pipeline puts them on different stages), in bf16 autocast with AdamW. The layers
are its modules by their names (transformer.wte, transformer.wpe, transformer.h.N,
transformer.ln_f, lm_head); the loss, which the model computes after lm_head, is the helper's
"loss" layer. Prints the median step time after the first three steps ("median step X ms"),
which the GPU check's overhead rounds compare traced and untraced. Needs torch with CUDA and
transformers; not run in CI.
"""
import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "profiler", "python"))
import stagepart_torch  # noqa: E402

LAYERS = ["transformer.wte", "transformer.wpe", "transformer.h.*", "transformer.ln_f", "lm_head"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--kineto", metavar="TRACE", help="record with torch.profiler instead of NVTX")
    args = ap.parse_args()
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(n_positions=max(1024, args.seq), tie_word_embeddings=False, use_cache=False)
    model = GPT2LMHeadModel(cfg).cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ann = stagepart_torch.annotate(model, LAYERS,
                                   ranges="record_function" if args.kineto else "nvtx")
    tokens = torch.randint(0, cfg.vocab_size, (args.batch, args.seq), device="cuda")

    def step():
        with ann.step():
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(input_ids=tokens, labels=tokens).loss  # the helper's "loss" layer
            loss.backward()
            with ann.optimizer():
                opt.step()
                opt.zero_grad(set_to_none=True)

    times = []

    def timed_steps():
        for _ in range(args.steps):
            t0 = time.perf_counter()
            step()
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) * 1e3)

    if args.kineto:
        acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=acts) as prof:
            timed_steps()
        prof.export_chrome_trace(args.kineto)
    else:
        timed_steps()
    measured = times[3:] if len(times) > 3 else times
    print(f"median step {statistics.median(measured):.4f} ms over {len(measured)} steps "
          f"(batch {args.batch} x {args.seq})")


if __name__ == "__main__":
    main()
