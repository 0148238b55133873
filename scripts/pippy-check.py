#!/usr/bin/env python3
"""scripts/pippy-check.py: stagepart's pippy export applied, unedited, to Hugging Face's GPT-2.

A plan is worth what a user can apply without editing it. This builds a GPT-2 small (random
weights, untied output layer), a stagepart profile whose layers are its modules by their fully
qualified names (the PyTorch helper's naming), partitions it, exports the plan --to pippy, and
runs the exported text as it is: `pipeline(model, mb_args=..., split_spec=...)` and the export's
own assertion on the stage count. It then checks that each stage's parameters are exactly those
of the plan's modules for that stage. torch.distributed.pipelining traces on the CPU: no GPU is
needed, only torch and transformers (scripts/gpu-check.sh runs it where they are).

usage: scripts/pippy-check.py STAGEPART OUTDIR [STAGES]
Prints PASS or FAIL lines and writes OUTDIR/pippy.json; exits 0 on PASS, 1 on FAIL, 77 when
torch or transformers is missing.
"""
import json
import os
import subprocess
import sys


def main():
    sp, out = sys.argv[1], sys.argv[2]
    stages = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    try:
        import torch
        from transformers import GPT2Config, GPT2LMHeadModel
    except ImportError as e:
        print(f"pippy check not run: {e}")
        return 77
    n_layer = 12
    cfg = GPT2Config(n_layer=n_layer, tie_word_embeddings=False, use_cache=False)
    model = GPT2LMHeadModel(cfg).eval()
    # the profile: the modules in call order, with uneven block times so the plan is not the
    # even split (what matters here is that every cut lands on a module boundary)
    names = ["transformer.wte", "transformer.wpe"]
    names += [f"transformer.h.{i}" for i in range(n_layer)] + ["transformer.ln_f", "lm_head"]
    kinds = ["embedding", "embedding"] + ["transformer"] * n_layer + ["norm", "head"]
    ms = [0.2, 0.1] + [10 + (i % 3) for i in range(n_layer)] + [0.3, 14.0]
    profile = {"format": "stagepart-profile", "version": 1, "model": "hf-gpt2",
               "micro_batch_size": 1,
               "layers": [{"name": n, "kind": k, "fwd_ms": t / 3, "bwd_ms": 2 * t / 3}
                          for n, k, t in zip(names, kinds, ms)]}
    os.makedirs(out, exist_ok=True)
    prof_path, plan_path = os.path.join(out, "pippy.profile.json"), os.path.join(out, "pippy.plan.json")
    json.dump(profile, open(prof_path, "w"))
    subprocess.run([sp, "partition", prof_path, "-s", str(stages), "-o", plan_path],
                   check=True, stdout=subprocess.DEVNULL)
    text = subprocess.run([sp, "export", plan_path, "--to", "pippy"], check=True,
                          capture_output=True, text=True).stdout
    plan = json.load(open(plan_path))
    want = [set(names[s["first_layer"]:s["last_layer"] + 1]) for s in plan["stages"]]

    result = {"stages": stages, "export": text, "num_stages": None, "stage_modules_match": None,
              "error": None}
    ok = True
    try:
        ids = torch.randint(0, cfg.vocab_size, (1, 64))
        scope = {"model": model, "example_micro_batch": ids}
        exec(compile(text, "stagepart export --to pippy", "exec"), scope)  # as a user would
        pipe = scope["pipe"]
        result["num_stages"] = pipe.num_stages
        got = []
        for i in range(pipe.num_stages):
            mods = set()
            for p, _ in pipe.get_stage_module(i).named_parameters():
                # the module a parameter belongs to: the longest profile name prefixing it
                # (traced names may use '_' for '.'; compare both spellings)
                flat = p.replace(".", "_")
                owner = [n for n in names if p.startswith(n + ".") or
                         flat.startswith(n.replace(".", "_") + "_")]
                mods.add(max(owner, key=len) if owner else p)
            got.append(mods)
        result["stage_modules"] = [sorted(m) for m in got]
        result["stage_modules_match"] = got == want
        ok = pipe.num_stages == stages and got == want
    except Exception as e:  # the export failed to run: that is the finding
        result["error"] = f"{type(e).__name__}: {e}"
        ok = False
    json.dump(result, open(os.path.join(out, "pippy.json"), "w"), indent=1)
    print(f"{'PASS' if ok else 'FAIL'} pippy export on Hugging Face GPT-2: "
          f"{result['num_stages']} stages (plan {stages}), modules per stage "
          f"{'as planned' if result['stage_modules_match'] else 'differ'}"
          f"{'; ' + result['error'] if result['error'] else ''}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
