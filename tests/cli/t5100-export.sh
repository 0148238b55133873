#!/bin/sh
# t5100-export: plans in each framework's form, refusals, and evaluate / import-plan.
. "$(dirname "$0")/lib.sh"
P=samples/profiles
"$STAGEPART" partition $P/llama3-8b.json -s 4 -o "$TMP/plan.json" >/dev/null
expect_code "megatron" 0 "$STAGEPART" export "$TMP/plan.json" --to megatron
expect_stdout_contains "layout" '--pipeline-model-parallel-layout "Et*8|t*9|t*9|t*6L"'
expect_stdout_contains "first/last form" "--decoder-first-pipeline-num-layers 8 --decoder-last-pipeline-num-layers 6"
expect_code "deepspeed" 0 "$STAGEPART" export "$TMP/plan.json" --to deepspeed
expect_stdout_contains "parts" "PARTS = [0, 9, 18, 27, 34]"
expect_code "deepspeed snippet is Python" 0 python3 -c 'import ast,sys; ast.parse(open(sys.argv[1]).read())' "$TMP/stdout"
expect_code "torchgpipe" 0 "$STAGEPART" export "$TMP/plan.json" --to torchgpipe
expect_stdout_contains "balance" "balance = [9, 9, 9, 7]"
expect_code "pippy with a prefix" 0 "$STAGEPART" export "$TMP/plan.json" --to pippy --module-prefix model.
expect_stdout_contains "split_spec" 'split_spec = {"model.layers.8": SplitPoint.BEGINNING, "model.layers.17": SplitPoint.BEGINNING, "model.layers.26": SplitPoint.BEGINNING}'
expect_code "pippy snippet is Python" 0 python3 -c 'import ast,sys; ast.parse(open(sys.argv[1]).read())' "$TMP/stdout"
expect_code "torch-stages" 0 "$STAGEPART" export "$TMP/plan.json" --to torch-stages --module-prefix model.
expect_stdout_contains "each stage's modules" 'stage_modules = [["model.embedding", "model.layers.0",'
expect_stdout_contains "the schedule's class" 'schedule_class = get_schedule_class('
expect_code "torch-stages snippet is Python" 0 python3 -c 'import ast,sys; ast.parse(open(sys.argv[1]).read())' "$TMP/stdout"
"$STAGEPART" partition $P/llama3-8b.json -s 4 --schedule zb-h1 -o "$TMP/zbh1.json" >/dev/null
expect_code "pippy: a schedule torch has no class for" 0 "$STAGEPART" export "$TMP/zbh1.json" --to pippy
expect_stdout_contains "says so and what runs it" "# torch.distributed.pipelining has no schedule class for zb-h1: export --to torch-schedule-csv"
expect_code "torchtitan json" 0 "$STAGEPART" export "$TMP/plan.json" --to torchtitan --json
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); v=d["value"]; assert d["format"]=="stagepart-export" and len(v)==4 and v[0][0]=="embedding" and v[3][-1]=="lm_head" and "loss" not in v[3]' "$TMP/stdout"; then pass "torchtitan: module lists, the loss left out"; else fail "torchtitan module lists"; fi
expect_code "export to a file" 0 "$STAGEPART" export "$TMP/plan.json" --to deepspeed -o "$TMP/parts.py"
expect_code "unknown framework" 2 "$STAGEPART" export "$TMP/plan.json" --to jax

# what a format cannot express
"$STAGEPART" partition $P/llama3-8b.json -s 4 --chunks 2 --solver uniform -o "$TMP/il.json" >/dev/null
expect_code "deepspeed has no interleaving" 2 "$STAGEPART" export "$TMP/il.json" --to deepspeed
expect_stderr_contains "chunks named" "this plan has 2 chunks per device"
expect_code "megatron interleaved layout" 0 "$STAGEPART" export "$TMP/il.json" --to megatron
expect_stdout_contains "chunk-major layout" '"Et*4|(t*4|)*6,t*4L"'
# the partitioner never cuts right before the loss: 35 layers, at most 34 stages, and the loss
# always shares the head's stage
expect_code "no stage of the loss alone" 3 "$STAGEPART" partition $P/llama3-8b.json -s 35
expect_stderr_contains "says why" "come right before the loss"
for s in 2 8 34; do
    "$STAGEPART" partition $P/llama3-8b.json -s $s --solver ilp -o "$TMP/ps.json" >/dev/null 2>&1 || "$STAGEPART" partition $P/llama3-8b.json -s $s -o "$TMP/ps.json" >/dev/null
    if python3 -c 'import json,sys; st=json.load(open(sys.argv[1]))["stages"][-1]; assert st["first_name"] != "loss" and st["last_name"] == "loss", st' "$TMP/ps.json"; then pass "-s $s: the loss on the head's stage"; else fail "-s $s: loss alone"; fi
done
# a stage of nothing but the loss (a plan edited by hand) is no pipeline stage in any framework
"$STAGEPART" partition $P/llama3-8b.json -s 34 -o "$TMP/p34.json" >/dev/null
python3 - "$TMP/p34.json" "$TMP/p35.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
last = p["stages"][-1]
p["stages"][-1] = dict(last, last_layer=33, layers=1, last_name="lm_head")
p["stages"].append(dict(last, index=34, device=34, first_layer=34, layers=1, first_name="loss"))
p["stage_count"] = 35
json.dump(p, open(sys.argv[2], "w"))
PY
for t in megatron deepspeed torchgpipe pippy torchtitan torch-schedule-csv; do
    expect_code "$t: a loss-only stage refused" 2 "$STAGEPART" export "$TMP/p35.json" --to $t
    expect_stderr_contains "$t: the stage named" "stage 34 holds only layers of kind \"loss\" ('loss')"
done
cat >"$TMP/norm.json" <<'JSON'
{"format": "stagepart-profile", "version": 1, "model": "m", "micro_batch_size": 1, "layers": [
 {"name": "tok_embeddings", "kind": "embedding", "fwd_ms": 1, "bwd_ms": 2},
 {"name": "layers.0", "kind": "transformer", "fwd_ms": 1, "bwd_ms": 2},
 {"name": "layers.1", "kind": "transformer", "fwd_ms": 1, "bwd_ms": 2},
 {"name": "layers.2", "kind": "transformer", "fwd_ms": 1, "bwd_ms": 2},
 {"name": "layers.3", "kind": "transformer", "fwd_ms": 1, "bwd_ms": 2},
 {"name": "norm", "kind": "norm", "fwd_ms": 1, "bwd_ms": 2},
 {"name": "lm_head", "kind": "head", "fwd_ms": 1, "bwd_ms": 2},
 {"name": "loss", "kind": "loss", "fwd_ms": 1, "bwd_ms": 2}]}
JSON
expect_code "import a split inside L" 0 "$STAGEPART" import-plan "$TMP/norm.json" --parts 0,3,5,6,7 -o "$TMP/norm-plan.json"
expect_code "a cut inside L" 2 "$STAGEPART" export "$TMP/norm-plan.json" --to megatron
expect_stderr_contains "stage named" "stage 3 starts inside the output group (layers norm..loss)"
expect_code "torchgpipe counts modules" 0 "$STAGEPART" export "$TMP/norm-plan.json" --to torchgpipe
expect_stdout_contains "the loss rides with the head" "balance = [3, 2, 1, 1]"
parts=$(python3 -c 'print(",".join(str(i) for i in range(35)))')
expect_code "import one module a stage" 0 "$STAGEPART" import-plan $P/llama3-8b.json --parts "$parts" -o "$TMP/p34.json"
expect_code "deepspeed: one module a stage" 0 "$STAGEPART" export "$TMP/p34.json" --to deepspeed --json
if python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))["value"]; sys.exit(0 if v == list(range(35)) else 1)' "$TMP/stdout"; then pass "deepspeed parts count modules: 0..34"; else fail "deepspeed parts" "$(cat "$TMP/stdout")"; fi

# Megatron's rules: both first/last counts > 0, E first and L last, on the profile too
expect_code "import E|t*32|L" 0 "$STAGEPART" import-plan $P/llama3-8b.json --megatron-layout 'E|t*32|L' -s 3 -o "$TMP/e-t-l.json"
expect_code "export it" 0 "$STAGEPART" export "$TMP/e-t-l.json" --to megatron
expect_stdout_contains "the layout round-trips" '"E|t*32|L"'
if grep -q "first-pipeline-num-layers 0\|last-pipeline-num-layers 0" "$TMP/stdout"; then fail "never a first/last count of 0" "$(cat "$TMP/stdout")"; else pass "never a first/last count of 0"; fi
"$STAGEPART" partition $P/equal-64.json -s 4 -o "$TMP/equal.json" >/dev/null
expect_code "no embedding: export refused" 2 "$STAGEPART" export "$TMP/equal.json" --to megatron
expect_stderr_contains "export: reason named" "a Megatron layout begins with the embedding (E), and the profile's first layer 'block.0'"
expect_code "no embedding: import refused the same way" 2 "$STAGEPART" evaluate $P/equal-64.json --megatron-layout '(t*16|)*3,t*16'
expect_stderr_contains "import: same reason" "a Megatron layout begins with the embedding (E), and the profile's first layer 'block.0'"
expect_code "a layout without E" 2 "$STAGEPART" evaluate $P/llama3-8b.json --megatron-layout 't*8|t*8|t*8|t*8L'
expect_stderr_contains "no E: named" "t before E (segment 0)"
expect_code "a layout without L" 2 "$STAGEPART" evaluate $P/llama3-8b.json --megatron-layout 'Et*8|t*8|t*8|t*8'
expect_stderr_contains "no L: named" "no L"
expect_code "(...)*0 is nothing" 0 "$STAGEPART" evaluate $P/llama3-8b.json --megatron-layout 'Et*8|t*8|(t*4|)*0,t*8|t*8L'
expect_code "a space is no layer" 2 "$STAGEPART" evaluate $P/llama3-8b.json --megatron-layout 'Et*8| t*8|t*8|t*8L'
expect_stderr_contains "space named" "unknown symbol ' '"

# multi-token prediction: a profile layer of kind "mtp" is an m, after the decoder, before L
cat >"$TMP/mtp.json" <<'JSON'
{"format": "stagepart-profile", "version": 1, "model": "m", "micro_batch_size": 1, "layers": [
 {"name": "embedding", "kind": "embedding", "fwd_ms": 1, "bwd_ms": 2},
 {"name": "layers.0", "kind": "transformer", "fwd_ms": 1, "bwd_ms": 2},
 {"name": "layers.1", "kind": "transformer", "fwd_ms": 1, "bwd_ms": 2},
 {"name": "layers.2", "kind": "transformer", "fwd_ms": 1, "bwd_ms": 2},
 {"name": "layers.3", "kind": "transformer", "fwd_ms": 1, "bwd_ms": 2},
 {"name": "mtp.0", "kind": "mtp", "fwd_ms": 1, "bwd_ms": 2},
 {"name": "mtp.1", "kind": "mtp", "fwd_ms": 1, "bwd_ms": 2},
 {"name": "lm_head", "kind": "head", "fwd_ms": 1, "bwd_ms": 2},
 {"name": "loss", "kind": "loss", "fwd_ms": 1, "bwd_ms": 2}]}
JSON
expect_code "mtp: import Ett|ttmmL" 0 "$STAGEPART" import-plan "$TMP/mtp.json" --megatron-layout 'Ett|ttmmL' -o "$TMP/mtp-plan.json"
expect_code "mtp: export" 0 "$STAGEPART" export "$TMP/mtp-plan.json" --to megatron
expect_stdout_contains "mtp: the layout and the count" '--pipeline-model-parallel-layout "Ett|ttmmL" --mtp-num-layers 2'
expect_code "mtp: standalone" 0 "$STAGEPART" import-plan "$TMP/mtp.json" --megatron-layout 'Ett|tt|mm|L' -o "$TMP/mtp-standalone.json"
expect_code "mtp: standalone export" 0 "$STAGEPART" export "$TMP/mtp-standalone.json" --to megatron
expect_stdout_contains "mtp: standalone said" "# standalone MTP: the MTP layers run on rank 2"
expect_stdout_contains "mtp: standalone layout" '"Ett|tt|mm|L"'
expect_code "mtp: interleaved, last virtual stage" 0 "$STAGEPART" evaluate "$TMP/mtp.json" --megatron-layout 'Ett|t|t|mmL' -s 2
expect_code "mtp: t after m" 2 "$STAGEPART" evaluate "$TMP/mtp.json" --megatron-layout 'Ettm|ttmL'
expect_stderr_contains "mtp: m before the last t named" "m in segment 0 after 2 t"
expect_code "mtp: m split over stages" 2 "$STAGEPART" evaluate "$TMP/mtp.json" --megatron-layout 'Ett|ttm|mL'
expect_stderr_contains "mtp: one virtual stage named" "m in segments 1 and 2"
expect_code "mtp: not the rank's last virtual stage" 2 "$STAGEPART" evaluate "$TMP/mtp.json" --megatron-layout 'Ettttmm|L' -s 1
expect_stderr_contains "mtp: last virtual stage named" "in the last virtual stage of their rank (chunk 1)"
expect_code "mtp: a missing m" 2 "$STAGEPART" evaluate "$TMP/mtp.json" --megatron-layout 'Ett|ttmL'
expect_stderr_contains "mtp: count named" "after all 4 t and 2 m"

# the MTP sample: partitioned, exported with m and --mtp-num-layers, evaluated from a recipe layout
"$STAGEPART" partition $P/llama3-8b-mtp.json -s 4 -o "$TMP/mtp4.json" >/dev/null
expect_code "mtp sample: export" 0 "$STAGEPART" export "$TMP/mtp4.json" --to megatron
expect_stdout_contains "mtp sample: m on the last rank" '"Et*9|t*9|t*10|t*4mL" --mtp-num-layers 1'
expect_code "mtp sample: a standalone-MTP recipe layout" 0 "$STAGEPART" evaluate $P/llama3-8b-mtp.json --megatron-layout 'Et*11|t*11|t*10|mL'

# V-shape plans: torch's schedule named, Megatron's loop layout refused
"$STAGEPART" partition $P/llama3-8b.json -s 4 --schedule zbv -o "$TMP/zbv.json" >/dev/null
expect_code "torchtitan: a zbv plan" 0 "$STAGEPART" export "$TMP/zbv.json" --to torchtitan
expect_stdout_contains "torchtitan: schedule named" 'pipeline_parallel_schedule = "ZBVZeroBubble"'
expect_code "pippy: a zbv plan" 0 "$STAGEPART" export "$TMP/zbv.json" --to pippy
expect_stdout_contains "pippy: V placement said" "V-shape: stage k on rank k for k < P, else 2P-1-k"
expect_stdout_contains "pippy: torch's schedule class named" 'schedule_class = get_schedule_class("ZBVZeroBubble")  # ScheduleZBVZeroBubble'
expect_code "megatron refuses a V-shape plan" 2 "$STAGEPART" export "$TMP/zbv.json" --to megatron
expect_stderr_contains "megatron: reason named" "Megatron-LM's layout puts virtual stage k on rank k mod P"
"$STAGEPART" partition $P/llama3-8b.json -s 4 --chunks 2 --solver uniform -m 8 -o "$TMP/interleaved.json" >/dev/null
expect_code "megatron: interleaved layout" 0 "$STAGEPART" export "$TMP/interleaved.json" --to megatron
expect_stdout_contains "megatron: chunk-major layout" '"Et*4|(t*4|)*6,t*4L"'
expect_code "torchtitan: interleaved schedule named" 0 "$STAGEPART" export "$TMP/interleaved.json" --to torchtitan
expect_stdout_contains "torchtitan: Interleaved1F1B" 'pipeline_parallel_schedule = "Interleaved1F1B"'

# torchtitan's module names by kind, and its own first/last_stage_less_layers where its even
# split (a separate transcription of generate_llm_fqn_per_model_part below) makes the same parts
titan_check() {
    python3 - "$1" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
parts = eval(re.search(r"module_fqns_per_model_part = (.*)", text).group(1))
def generate(S, L, iw, ow):  # torchtitan's generate_llm_fqn_per_model_part, default names
    if S == 1:
        return [["tok_embeddings"] + [f"layers.{i}" for i in range(L)] + ["norm", "lm_head"]]
    eff = L + iw + ow
    if S > eff:
        raise ValueError
    per, extra = eff // S, eff % S
    if per == 0 or iw > per or ow > per:
        raise ValueError
    out, cur = [], 0
    for s in range(S):
        n = per + (1 if s < extra else 0)
        mods = []
        if s == 0:
            mods += ["tok_embeddings"]
            n -= iw
        elif s == S - 1:
            n -= ow
        for _ in range(n):
            if cur < L:
                mods.append(f"layers.{cur}")
                cur += 1
        if s == S - 1:
            mods += ["norm", "lm_head"]
        out.append(mods)
    return out
L = sum(m.startswith("layers.") for p in parts for m in p)
m1 = re.search(r"first_stage_less_layers = (\d+)", text)
m2 = re.search(r"last_stage_less_layers = (\d+)", text)
fits = []
for iw in range(L + 2):
    for ow in range(L + 2):
        try:
            if generate(len(parts), L, iw, ow) == parts:
                fits.append((iw, ow))
        except ValueError:
            pass
if m1:
    assert generate(len(parts), L, int(m1.group(1)), int(m2.group(1))) == parts, (m1.group(1), m2.group(1), parts)
    assert (int(m1.group(1)), int(m2.group(1))) == min(fits)
else:
    assert not fits, fits
print("fits" if m1 else "none")
PY
}
n_fit=0
for s in 2 3 4 5 8; do
    for solver in dp uniform; do
        "$STAGEPART" partition $P/llama3-8b.json -s $s --solver $solver -o "$TMP/t$s.json" >/dev/null
        "$STAGEPART" export "$TMP/t$s.json" --to torchtitan --module-names torchtitan >"$TMP/titan.txt" || fail "torchtitan names, -s $s $solver"
        if r=$(titan_check "$TMP/titan.txt" 2>&1); then pass "torchtitan -s $s $solver: less_layers given exactly when its even split fits ($r)"; else fail "torchtitan -s $s $solver" "$r"; fi
        [ "$r" = fits ] && n_fit=$((n_fit + 1))
    done
done
[ $n_fit -ge 3 ] && pass "the first/last form given for $n_fit of 10 plans" || fail "too few plans of the even shape ($n_fit)"
expect_code "torchtitan names" 0 "$STAGEPART" export "$TMP/t4.json" --to torchtitan --module-names torchtitan --json
if python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))["value"]; assert v[0][0]=="tok_embeddings" and v[-1][-2:]==["norm","lm_head"] and "layers.31" in v[-1]' "$TMP/stdout"; then pass "tok_embeddings first, norm and lm_head last (the profile has no norm layer)"; else fail "torchtitan names"; fi
expect_code "pippy with torchtitan names" 0 "$STAGEPART" export "$TMP/t4.json" --to pippy --module-names torchtitan
expect_stdout_contains "split at layers.N" '"layers.'
expect_code "a kind torchtitan has no module for" 2 "$STAGEPART" export "$TMP/mtp4.json" --to torchtitan --module-names torchtitan
expect_stderr_contains "the layer named" "kind \"mtp\"): torchtitan's models have a module for kinds embedding, transformer, norm and head only"
expect_code "--module-names checked" 2 "$STAGEPART" export "$TMP/t4.json" --to torchtitan --module-names hf

# evaluate and import-plan
expect_code "evaluate a megatron layout" 0 "$STAGEPART" evaluate $P/llama3-8b.json --megatron-layout "Et*8|t*8|t*8|t*8L"
expect_stdout_contains "the comparison" "your split: efficiency 73%, bottleneck stage 3; optimal: 81%, +12% throughput"
expect_code "evaluate a balance list" 0 "$STAGEPART" evaluate $P/llama3-8b.json --balance 9,9,9,7
expect_stdout_contains "already optimal" "+0% throughput"
expect_code "evaluate parts as json" 0 "$STAGEPART" evaluate $P/llama3-8b.json --parts 0,9,17,25,34 --json
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert abs(d["throughput_gain"]-0.1157)<0.001' "$TMP/stdout"; then pass "evaluation json"; else fail "evaluation json" "$(cat "$TMP/stdout")"; fi
expect_code "import-plan" 0 "$STAGEPART" import-plan $P/llama3-8b.json --megatron-layout "(Et*7|)*1,t*9|t*8|t*8L" -o "$TMP/imported.json"
expect_code "the imported plan exports back" 0 "$STAGEPART" export "$TMP/imported.json" --to megatron
expect_stdout_contains "round trip" '"Et*7|t*9|t*8|t*8L"'
expect_code "import-plan needs -o" 2 "$STAGEPART" import-plan $P/llama3-8b.json --balance 9,9,9,7
expect_code "wrong t count" 2 "$STAGEPART" evaluate $P/llama3-8b.json --megatron-layout "Et*8|t*8|t*8|t*7L"
expect_stderr_contains "count named" "after all 32 t (segment 3 has it after 31)"
# empty segments: t5150-empty-stages
expect_code "balance that does not add up" 2 "$STAGEPART" evaluate $P/llama3-8b.json --balance 9,9,9
expect_code "two splits" 2 "$STAGEPART" evaluate $P/llama3-8b.json --balance 9,9,9,7 --parts 0,34
expect_code "bad symbol" 2 "$STAGEPART" evaluate $P/llama3-8b.json --megatron-layout "Ex*8|t*24L"
expect_stderr_contains "symbol named" "unknown symbol 'x'"
# the V-shape schedules: 2P segments on P devices, against the exact V-shape plan
expect_code "evaluate a zbv split" 0 "$STAGEPART" evaluate $P/llama3-8b.json --balance 5,4,4,4,4,4,5,4 --schedule zbv
expect_stdout_contains "zbv: 4 devices" "4 stages (interleaved), zbv, 16 micro-batches"
expect_stdout_contains "zbv: the V-shape optimum" "optimal: 93%, +2% throughput"
expect_code "a zbv split needs 2P segments" 2 "$STAGEPART" evaluate $P/llama3-8b.json --balance 5,4,4,4,4,4,5,4 --schedule zbv -s 8
expect_stderr_contains "zbv: reason named" "the split needs 2 x 8 segments, got 8"
expect_code "dualpipev needs M >= 2P" 2 "$STAGEPART" evaluate $P/llama3-8b.json --balance 5,4,4,4,4,4,5,4 --schedule dualpipev -m 4
expect_code "interleaved-zb with virtual stages" 0 "$STAGEPART" evaluate $P/llama3-8b.json --balance 5,4,4,4,4,4,5,4 -s 4 --schedule interleaved-zb -m 8
expect_code "interleaved-zb without" 2 "$STAGEPART" evaluate $P/llama3-8b.json --balance 9,9,9,7 --schedule interleaved-zb
expect_stderr_contains "interleaved-zb: reason named" "needs virtual stages"
# --framework megatron: the cuts keep to Megatron's groups, so every plan exports. A profile
# whose output group (ln_f, lm_head) is heavy: the plain optimum cuts inside it, and the export
# refuses; with the framework it cannot
python3 - "$TMP/heavy-out.json" <<'PY'
import json, sys
L = [("embedding", "embedding", 2)] + [(f"layers.{i}", "transformer", 3) for i in range(6)] + \
    [("ln_f", "norm", 5), ("lm_head", "head", 9), ("loss", "loss", 0.1)]
layers = [{"name": n, "kind": k, "fwd_ms": t / 3, "bwd_ms": 2 * t / 3, "activation_bytes": 1 << 20,
           "saved_bytes": 1 << 20, "param_bytes": 1 << 20} for n, k, t in L]
json.dump({"format": "stagepart-profile", "version": 1, "model": "heavy-out", "micro_batch_size": 1,
           "layers": layers}, open(sys.argv[1], "w"))
PY
"$STAGEPART" partition "$TMP/heavy-out.json" -s 4 -o "$TMP/plain4.json" >/dev/null
expect_code "the plain optimum cuts inside L" 2 "$STAGEPART" export "$TMP/plain4.json" --to megatron
expect_stderr_contains "named" "starts inside the output group (layers ln_f..loss)"
expect_code "--framework megatron" 0 "$STAGEPART" partition "$TMP/heavy-out.json" -s 4 --framework megatron -o "$TMP/meg4.json"
expect_stdout_contains "the table says so" "optimal among the cuts of a layout for megatron"
expect_code "it exports" 0 "$STAGEPART" export "$TMP/meg4.json" --to megatron
expect_stdout_contains "a layout" '--pipeline-model-parallel-layout "Ett|tt|tt|L"'
if grep -q '"framework":[[:space:]]*"megatron"' "$TMP/meg4.json"; then pass "the plan records it"; else fail "the plan records it"; fi
expect_code "check keeps to it" 0 "$STAGEPART" check --plan "$TMP/meg4.json" --profile "$TMP/heavy-out.json" --max-imbalance 3
expect_stdout_contains "its fresh plan is the framework's" "PASS  staleness          a new plan would be 0.0% faster"
for s in 2 3 5 6 7; do
    "$STAGEPART" partition "$TMP/heavy-out.json" -s $s --framework megatron -o "$TMP/m.json" >/dev/null &&
        "$STAGEPART" export "$TMP/m.json" --to megatron >/dev/null 2>&1 || fail "-s $s exports"
done
pass "2 to 7 stages export"
expect_code "a profile without transformer kinds" 2 "$STAGEPART" partition $P/resnet50.json -s 4 --framework megatron
expect_stderr_contains "says why" "--framework megatron: Megatron layouts count transformer layers"
expect_code "an unknown framework" 2 "$STAGEPART" partition $P/llama3-8b.json -s 4 --framework deepspeed
test_done
