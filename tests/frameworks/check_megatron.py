#!/usr/bin/env python3
"""tests/frameworks/check_megatron.py: Megatron Core's own PipelineParallelLayerLayout reads
stagepart's layouts, and stagepart reads layouts as it does.

Export: random profiles (an embedding, transformer layers, sometimes MTP layers, the head and the
loss) are partitioned at random stage counts, with virtual stages and with empty stages; every
layout `export --to megatron` writes is parsed and validated by Megatron (with the export's
--num-layers and --mtp-num-layers), and each (rank, virtual stage) gets from Megatron's
get_layer_id_list exactly the plan's transformer and MTP layer ids, the embedding and the loss
where the plan has them, and Megatron's standalone-MTP verdict matches the export's comment.

Import: layouts drawn at random (valid ones, mutated ones, random symbol strings): `import-plan
--megatron-layout` accepts exactly those Megatron accepts, and gives each rank the same layers.
"""
import json
import random
import re

import fwcheck
from megatron.core import parallel_state
from megatron.core.transformer.enums import LayerType
from megatron.core.transformer.pipeline_parallel_layer_layout import PipelineParallelLayerLayout

EXPORT_PLANS = 120
IMPORT_LAYOUTS = 400


def megatron_accepts(layout, ranks, num_layers, mtp_layers):
    """The Layout object when Megatron parses and validates the layout, else the reason."""
    try:
        lay = PipelineParallelLayerLayout(layout, ranks)
        lay.validate_layer_layout(num_layers=num_layers, mtp_num_layers=mtp_layers or None)
        return lay
    except (AssertionError, ValueError, KeyError, IndexError, NotImplementedError, OverflowError) as e:
        return f"{type(e).__name__}: {e}"


def megatron_stages(lay):
    """What Megatron builds on each (virtual stage, rank), chunk-major as plans list stages:
    (decoder ids, mtp ids, has embedding, has loss)."""
    ranks, vpp = lay.pipeline_model_parallel_size, lay.virtual_pipeline_model_parallel_size
    parallel_state.set_virtual_pipeline_model_parallel_world_size(vpp if vpp > 1 else None)
    out = []
    for vp in range(vpp):
        for pp in range(ranks):
            kw = {"vp_stage": vp, "pp_rank": pp}
            out.append((lay.get_layer_id_list(LayerType.decoder, **kw),
                        lay.get_layer_id_list(LayerType.mtp, **kw),
                        lay.get_num_layers_to_build(LayerType.embedding, **kw) == 1,
                        lay.get_num_layers_to_build(LayerType.loss, **kw) == 1))
    return out


def plan_stages(plan):
    """The same from a stagepart plan: layers of kind transformer and mtp by their ordinal among
    their kind; the embedding group before the first transformer layer, the loss group after the
    last transformer or MTP layer."""
    kinds = plan["layer_kinds"]
    ordinal, counts = [], {}
    for k in kinds:
        ordinal.append(counts.get(k, 0))
        counts[k] = counts.get(k, 0) + 1
    first_t = kinds.index("transformer")
    last_body = max(i for i, k in enumerate(kinds) if k in ("transformer", "mtp"))
    out = []
    for layers in fwcheck.stage_layers(plan):
        out.append(([ordinal[i] for i in layers if kinds[i] == "transformer"],
                    [ordinal[i] for i in layers if kinds[i] == "mtp"],
                    any(i < first_t for i in layers), any(i > last_body for i in layers)))
    return out


def random_profile(rng, tag, n_t=None, n_m=None):
    n_t = rng.randint(1, 12) if n_t is None else n_t
    n_m = (rng.choice([0, 0, 1, 2]) if n_m is None else n_m)
    layers = [("embedding", "embedding", rng.uniform(0.1, 2))]
    layers += [(f"layers.{i}", "transformer", rng.uniform(0.5, 3)) for i in range(n_t)]
    layers += [(f"mtp.{i}", "mtp", rng.uniform(0.5, 3)) for i in range(n_m)]
    layers += [("lm_head", "head", rng.uniform(0.2, 3)), ("loss", "loss", 0.05)]
    return fwcheck.write_profile(tag, layers), n_t, n_m


def check_export(rng, i):
    if i % 5 == 4:  # a profile with fewer places to cut than stages: empty stages
        prof, n_t, n_m = random_profile(rng, f"mg-export-{i}", n_t=rng.randint(1, 2), n_m=0)
        ranks, chunks = n_t + 2 + rng.randint(0, 1), 1
    else:
        prof, n_t, n_m = random_profile(rng, f"mg-export-{i}")
        ranks, chunks = rng.randint(1, 4), rng.choice([1, 1, 2, 3])
    args = ["-s", ranks, "-m", 4 * ranks]
    if chunks > 1:
        args += ["--chunks", chunks, "--schedule", "interleaved",
                 "--solver", rng.choice(["dp", "dp", "ilp", "uniform"]), "--time-limit", 2]
    if ranks * chunks > n_t + n_m + 1:  # fewer places to cut than stages
        args += ["--allow-empty-stages"]
    plan_path = fwcheck.path(f"mg-export-{i}.plan.json")
    p = fwcheck.stagepart("partition", prof, *args, "-o", plan_path, check=False)
    if p.returncode != 0:
        return "skip", p.stderr.strip()
    e = fwcheck.stagepart("export", plan_path, "--to", "megatron", check=False)
    if e.returncode != 0:
        return "refused", e.stderr.strip()
    m = re.search(r'--pipeline-model-parallel-size (\d+) --num-layers (\d+) '
                  r'--pipeline-model-parallel-layout "([^"]+)"(?: --mtp-num-layers (\d+))?', e.stdout)
    size, num_layers, layout = int(m.group(1)), int(m.group(2)), m.group(3)
    mtp = int(m.group(4) or 0)
    lay = megatron_accepts(layout, size, num_layers, mtp)
    if isinstance(lay, str):
        return "fail", f"Megatron rejects {layout!r} (P={size}): {lay}"
    with open(plan_path) as f:
        plan = json.load(f)
    if megatron_stages(lay) != plan_stages(plan):
        return "fail", f"{layout!r}: Megatron builds {megatron_stages(lay)}, the plan {plan_stages(plan)}"
    standalone = lay.validate_layer_layout(num_layers=num_layers, mtp_num_layers=mtp or None)
    if standalone != ("standalone MTP" in e.stdout):
        return "fail", f"{layout!r}: Megatron's standalone MTP is {standalone}, the export's comment disagrees"
    return "ok", layout


def export_cases():
    rng = random.Random(28)
    tally, layouts = {"ok": 0, "skip": 0, "refused": 0}, []
    for i in range(EXPORT_PLANS):
        what, detail = check_export(rng, i)
        if what == "fail":
            return f"plan {i}: {detail}"
        tally[what] += 1
        if what == "ok":
            layouts.append(detail)
    feats = {"virtual stages": any("|" in x for x in layouts) and tally["ok"] > 0,
             "MTP": any("m" in x for x in layouts), "empty stages": any("||" in x or x.startswith("|")
                                                                    or x.endswith("|") for x in layouts)}
    missing = [k for k, v in feats.items() if not v]
    if tally["ok"] < EXPORT_PLANS // 2 or missing:
        return f"too few layouts exercised: {tally}, missing {missing}"
    print(f"  {tally['ok']} layouts read by Megatron as planned ({tally['refused']} plans refused "
          f"by the export, {tally['skip']} not partitioned)")
    return None


PIECES = ["E", "t", "t", "t", "m", "L", "|", "|", "t*3", "t*0", "(tt|)*2", "(t|)*3", ",", " ", "()",
          "*", "*2", "x", "(", ")", "(|)*2", "tt", "|t", "E|", "|L", "t*12"]


def random_layout(rng, n_t, n_m, ranks):
    how = rng.random()
    if how < 0.6:  # a layout drawn from a random cut into P x V segments
        body = ["t"] * n_t + ["m"] * n_m
        segs = ranks * rng.randint(1, 8 // ranks)
        cuts = sorted(rng.choices(range(len(body) + 1), k=segs - 1))
        parts, last = [], 0
        for c in cuts + [len(body)]:
            parts.append("".join(body[last:c]))
            last = c
        parts[0], parts[-1] = "E" + parts[0], parts[-1] + "L"
        text = "|".join(parts)
        text = re.sub(r"t{4,}", lambda x: f"t*{len(x.group(0))}", text)
        if how < 0.25:  # then mutated
            pos = rng.randint(0, len(text))
            cut = rng.randint(0, 2)
            text = text[:pos] + rng.choice(PIECES) + text[pos + cut:]
        return text
    return "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 12)))


def import_cases():
    rng = random.Random(29)
    profiles = {}
    agree = accepted = 0
    for i in range(IMPORT_LAYOUTS):
        # from 2 transformer layers: often more segments (up to 8) than places to cut
        key = (rng.randint(2, 12), rng.choice([0, 0, 1, 2]))
        if key not in profiles:
            profiles[key] = random_profile(random.Random(key[0] * 10 + key[1]), f"mg-import-{key[0]}-{key[1]}",
                                           n_t=key[0], n_m=key[1])[0]
        n_t, n_m = key
        ranks = rng.randint(1, 4)
        layout = random_layout(rng, n_t, n_m, ranks)
        lay = megatron_accepts(layout, ranks, n_t, n_m)
        plan_path = fwcheck.path(f"mg-import-{i}.plan.json")
        p = fwcheck.stagepart("import-plan", profiles[key], "--megatron-layout", layout, "-s", ranks,
                              "-o", plan_path, check=False)
        if isinstance(lay, str):
            if p.returncode == 0:
                return f"{layout!r} P={ranks} ({n_t} t, {n_m} m): Megatron refuses ({lay}), stagepart accepts"
            if p.returncode != 2:
                return f"{layout!r}: stagepart exits {p.returncode}, not 2: {p.stderr.strip()}"
        else:
            if p.returncode != 0:
                return f"{layout!r} P={ranks} ({n_t} t, {n_m} m): Megatron accepts, stagepart refuses: {p.stderr.strip()}"
            with open(plan_path) as f:
                plan = json.load(f)
            if megatron_stages(lay) != plan_stages(plan):
                return f"{layout!r}: Megatron builds {megatron_stages(lay)}, the plan {plan_stages(plan)}"
            accepted += 1
        agree += 1
    if accepted < IMPORT_LAYOUTS // 5 or IMPORT_LAYOUTS - accepted < IMPORT_LAYOUTS // 5:
        return f"the draw is lopsided: {accepted} of {IMPORT_LAYOUTS} accepted"
    print(f"  {agree} layouts judged alike ({accepted} accepted by both, the rest refused by both)")
    return None


def main():
    report = fwcheck.Report("megatron")
    report.case(f"{EXPORT_PLANS} random plans exported and read by PipelineParallelLayerLayout", export_cases)
    report.case(f"{IMPORT_LAYOUTS} random layouts: import-plan accepts what Megatron accepts", import_cases)
    report.exit()


if __name__ == "__main__":
    main()
