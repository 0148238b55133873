#!/usr/bin/env python3
"""Write an LLM-like stagepart profile of N layers (for the benchmarks).

usage: gen_profile.py N OUT [SEED]
Layer 0 is a light embedding, the last layer a heavy LM head (2.4x a block), the blocks in
between vary by +-10 %. Bytes follow the same pattern. Standard library only.
"""
import json
import random
import sys


def main():
    n, out = int(sys.argv[1]), sys.argv[2]
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    layers = []
    for i in range(n):
        if i == 0:
            kind, t, params = "embedding", 0.3, 500_000_000
        elif i == n - 1:
            kind, t, params = "head", 2.4, 500_000_000
        else:
            kind, t, params = "transformer", rng.uniform(0.9, 1.1), 200_000_000
        layers.append({
            "name": f"layer{i}", "kind": kind,
            "fwd_ms": round(t / 3, 6), "bwd_ms": round(2 * t / 3, 6),
            "activation_bytes": 16_777_216, "saved_bytes": 300_000_000 if kind == "transformer" else 50_000_000,
            "param_bytes": 2 * params, "memory_bytes": 16 * params,
        })
    doc = {"format": "stagepart-profile", "version": 1, "model": f"llm-like-{n}",
           "micro_batch_size": 1, "source": "synthetic: bench/gen_profile.py", "layers": layers}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
