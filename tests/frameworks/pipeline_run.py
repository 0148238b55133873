"""tests/frameworks/pipeline_run.py: run a stagepart export with torch.distributed.pipelining,
one gloo process per pipeline rank on the CPU, as a user would: the `--to pippy` text is executed
unedited on the model (it builds the pipe and asserts its stage count), or the `--to torch-stages`
text (its check_split on the model, then a PipelineStage of a StageModule per stage), each rank
builds its stages, and the schedule runs training steps. Each rank writes its gradients, losses and step
times; `reference` computes the same step on the unpipelined model.

Stages sit on ranks as the schedule places them: `loop` (stage k on rank k mod P) or `v` (stages
r and 2P-1-r on rank r). The schedule is torch's class by name (get_schedule_class) or, given a
CSV file, torch's own CSV reader (_PipelineScheduleRuntime._load_csv)."""
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import models


def _rank_stages(rank, ranks, num_stages, style):
    if style == "v":
        return [rank, 2 * ranks - 1 - rank]
    return list(range(rank, num_stages, ranks))


def batch_for(job):
    torch.manual_seed(1234)
    _, _, _, vocab = models.build(job["model"])
    ids = torch.randint(0, vocab, (job["batch"], job["seq"]))
    return ids, ids.clone()


def _worker(rank, job):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.set_num_threads(job.get("threads", 1))
    ranks = job["ranks"]
    dist.init_process_group("gloo", init_method="file://" + job["rendezvous"], rank=rank,
                            world_size=ranks)
    try:
        from torch.distributed.pipelining import schedules
        model, _, _, _ = models.build(job["model"])
        ids, labels = batch_for(job)
        micro = job["micro_batches"]
        scope = {"model": model, "example_micro_batch": ids.chunk(micro)[0]}
        exec(compile(job["export"], "stagepart export", "exec"), scope)  # as a user would
        if "StageModule" in scope:  # --to torch-stages: the stages built by hand
            import copy
            from torch.distributed.pipelining import PipelineStage
            scope["check_split"](model, scope["example_micro_batch"])
            num_stages = len(scope["stage_modules"])
            mine = _rank_stages(rank, ranks, num_stages, job["style"])
            stages = [PipelineStage(scope["StageModule"](copy.deepcopy(model), i), i, num_stages,
                                    torch.device("cpu")) for i in mine]
            built = {i: s.submod.model for i, s in zip(mine, stages)}
            pipe = None
        else:
            pipe = scope["pipe"]
            num_stages = pipe.num_stages
            mine = _rank_stages(rank, ranks, num_stages, job["style"])
            built = {i: pipe.get_stage_module(i) for i in mine}
            stages = [pipe.build_stage(i, torch.device("cpu")) for i in mine]
        if job.get("csv"):
            sched = schedules._PipelineScheduleRuntime(stages, micro, loss_fn=models.loss_fn)
            sched._load_csv(job["csv"])
        else:
            cls = schedules.get_schedule_class(job["schedule"])
            named = scope.get("schedule_class")  # the pippy export names the plan's class
            if named is not None and named is not cls:
                raise RuntimeError(f"the export names {named.__name__}, the plan runs {cls.__name__}")
            multi = issubclass(cls, schedules.PipelineScheduleMulti)
            sched = cls(stages if multi else stages[0], micro, loss_fn=models.loss_fn)
        first, last = 0 in mine, num_stages - 1 in mine
        times, losses = [], []
        for _ in range(job.get("steps", 1)):
            for s in stages:
                s.submod.zero_grad(set_to_none=True)
            losses = []
            dist.barrier()
            t0 = time.perf_counter()
            args = (ids,) if first else ()
            kw = {"target": labels, "losses": losses} if last else {}
            sched.step(*args, **kw)
            dist.barrier()
            times.append(time.perf_counter() - t0)
        grads = {}
        for s in stages:
            inner = s.submod.model if pipe is None else s.submod  # StageModule wraps the model
            for name, p in inner.named_parameters():
                grads[name] = None if p.grad is None else p.grad.detach().clone()
        params = {i: sorted(n for n, _ in built[i].named_parameters()) for i in mine}
        torch.save({"grads": grads, "losses": [float(x.detach()) for x in losses], "times": times,
                    "num_stages": num_stages, "stage_params": params},
                   os.path.join(job["dir"], f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


def run(job):
    """job: model (models.build spec), export (pippy or torch-stages text), ranks, micro_batches, batch, seq,
    style (loop|v), schedule (torch name) or csv (path), dir, optional steps and threads.
    Returns the ranks' results, rank by rank."""
    os.makedirs(job["dir"], exist_ok=True)
    job = dict(job, rendezvous=os.path.join(job["dir"], "rendezvous"))
    if os.path.exists(job["rendezvous"]):
        os.remove(job["rendezvous"])
    mp.start_processes(_worker, args=(job,), nprocs=job["ranks"], start_method="spawn")
    return [torch.load(os.path.join(job["dir"], f"rank{r}.pt")) for r in range(job["ranks"])]


def reference(job):
    """The same step on the unpipelined model: the mean of the micro-batches' losses (what the
    schedules' scale_grads=True gives) and its gradients."""
    model, _, _, _ = models.build(job["model"])
    ids, labels = batch_for(job)
    micro = job["micro_batches"]
    loss = sum(models.loss_fn(model(x), y) for x, y in zip(ids.chunk(micro), labels.chunk(micro)))
    loss = loss / micro
    loss.backward()
    return float(loss.detach()), {n: p.grad.detach().clone() for n, p in model.named_parameters()}


def compare(results, ref, rtol=1e-5):
    """None when the pipelined step matches the reference (loss and every gradient within rtol,
    relative to the reference's norm), else what differs."""
    ref_loss, ref_grads = ref
    losses = [x for r in results for x in r["losses"]]
    if not losses:
        return "no rank reported a loss"
    loss = sum(losses) / len(losses)
    if abs(loss - ref_loss) > rtol * abs(ref_loss):
        return f"loss {loss:.8g}, unpipelined {ref_loss:.8g}"
    grads = {}
    for r in results:
        grads.update(r["grads"])
    if set(grads) != set(ref_grads):
        missing = sorted(set(ref_grads) - set(grads))[:3]
        extra = sorted(set(grads) - set(ref_grads))[:3]
        return f"parameters differ: missing {missing}, extra {extra}"
    worst, where = 0.0, None
    for n, g in grads.items():
        if g is None:
            return f"no gradient for {n}"
        denom = ref_grads[n].norm().item() or 1.0
        err = (g - ref_grads[n]).norm().item() / denom
        if err > worst:
            worst, where = err, n
    if worst > rtol:
        return f"gradient of {where} differs by {worst:.3g} (relative)"
    return None
