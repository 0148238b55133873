#!/usr/bin/env python3
"""tests/tools/make_traces.py OUTDIR: synthetic profiler traces with known answers.

Writes OUTDIR/trace.json (a PyTorch profiler / Kineto Chrome trace), OUTDIR/trace.json.gz (the
same, gzip), OUTDIR/report.sqlite (an Nsight Systems SQLite export) and OUTDIR/expected.json
(the per-layer times stagepart import must find). Both traces describe the same run, built from
the formats' documented fields only:

  * 4 training steps; step 0 runs 3x slower (warm-up), steps 1-3 at 0.99x, 1.00x, 1.01x, so the
    median over steps 1-3 is the nominal time;
  * forward ranges "<layer>/fwd" on the main thread, backward "<layer>/bwd" on a second
    (autograd) thread, launches 10 us into each range;
  * layers.1's backward runs two kernels on two streams that overlap by 0.2 ms (busy 2.0 ms,
    kernel sum 2.2 ms); the head's backward adds an NCCL kernel (reported apart, not in bwd_ms);
  * layers.2's backward holds a nested "layers.2/fwd": recomputation, 1.0 ms;
  * the embedding's forward copies 4 MB host to device;
  * one kernel per step under "stagepart/optimizer", one under a range that is no layer, and one
    launched from a thread with no ranges (unattributed);
  * in the Kineto trace one launch has no args.correlation and is joined by its ac2g flow.
"""
import gzip
import json
import os
import sqlite3
import sys

US = 1000  # ns per microsecond
MS = 1000 * US

LAYERS = [  # name, fwd kernels (stream, ms), bwd kernels, activation bytes
    ("embedding", [(7, 0.2)], [(7, 0.4)], 4096),
    ("layers.0", [(7, 1.0)], [(7, 2.0)], 8192),
    ("layers.1", [(7, 1.0)], [(7, 1.2), (8, 1.0)], 8192),  # the second overlaps the first
    ("layers.2", [(7, 1.0)], [(7, 2.0)], 8192),            # and recomputes its forward
    ("layers.3", [(7, 1.0)], [(7, 2.0)], 8192),
    ("head", [(7, 0.5)], [(7, 1.0), ("nccl", 0.3)], 1024),
]
STEP_SCALE = [3.0, 0.99, 1.00, 1.01]


class Run:
    def __init__(self):
        self.ranges = []    # (name, tid, start, end, payload or None)
        self.launches = []  # (tid, time, corr, name)
        self.gpu = []       # (kind, name, device, stream, start, end, corr, bytes)
        self.corr = 100
        self.gpu_free = {}  # stream -> time it is free

    def launch(self, tid, at, kind, name, stream, dur, nbytes=0, after=None):
        self.corr += 1
        self.launches.append((tid, at, self.corr, "cudaLaunchKernel" if kind == "kernel" else "cudaMemcpyAsync"))
        start = max(at + 5 * US, self.gpu_free.get(stream, 0))
        if after is not None:
            start = after
        end = start + dur
        self.gpu_free[stream] = end
        self.gpu.append((kind, name, 0, stream, start, end, self.corr, nbytes))
        return start, end


def build():
    run = Run()
    host = 1_000_000 * MS  # absolute clock, as profilers record it
    for step, scale in enumerate(STEP_SCALE):
        step_start = host
        host += 50 * US
        for name, fwd, _, nbytes in LAYERS:  # forward, main thread
            dur = sum(ms for _, ms in fwd) * MS * scale
            r0 = host
            t = r0 + 10 * US
            for stream, ms in fwd:
                run.launch(1, t, "kernel", f"{name}_fwd_kernel", stream, int(ms * MS * scale))
                t += 5 * US
            if name == "embedding":
                run.launch(1, t, "memcpy", "Memcpy HtoD (Pageable -> Device)", 7, int(0.1 * MS * scale), 4_000_000)
            host = max(run.gpu_free.values()) + 20 * US
            run.ranges.append((f"{name}/fwd", 1, r0, host, nbytes))
        for name, _, bwd, _ in reversed(LAYERS):  # backward, autograd thread
            r0 = host
            t = r0 + 10 * US
            if name == "layers.2":  # recomputation first, inside the backward range
                rc0 = t
                run.launch(2, t + 1 * US, "kernel", "layers.2_recompute", 7, int(1.0 * MS * scale))
                t = max(run.gpu_free.values()) + 5 * US
                run.ranges.append(("layers.2/fwd", 2, rc0, t, None))
                t += 5 * US
            first_start = None
            for stream, ms in bwd:
                if stream == "nccl":
                    run.launch(2, t, "kernel", "ncclDevKernel_AllReduce_Sum_f32", 9, int(ms * MS * scale))
                elif first_start is None:
                    first_start, _ = run.launch(2, t, "kernel", f"{name}_bwd_kernel", stream, int(ms * MS * scale))
                else:  # starts 1.0 ms (scaled) into the first: 0.2 ms overlap
                    run.launch(2, t, "kernel", f"{name}_bwd_kernel2", stream, int(ms * MS * scale),
                               after=first_start + int(1.0 * MS * scale))
                t += 5 * US
            host = max(run.gpu_free.values()) + 20 * US
            run.ranges.append((f"{name}/bwd", 2, r0, host, None))
        r0 = host  # optimizer, then a range that is no layer
        run.launch(1, r0 + 10 * US, "kernel", "adam_kernel", 7, int(0.3 * MS))
        host = max(run.gpu_free.values()) + 20 * US
        run.ranges.append(("stagepart/optimizer", 1, r0, host, None))
        r0 = host
        run.launch(1, r0 + 10 * US, "kernel", "logging_kernel", 7, int(0.05 * MS))
        host = max(run.gpu_free.values()) + 20 * US
        run.ranges.append(("log_metrics", 1, r0, host, None))
        run.launch(3, host, "kernel", "stray_kernel", 7, int(0.05 * MS))  # thread without ranges
        host = max(run.gpu_free.values()) + 50 * US
        run.ranges.append((f"STEP#{step}", 1, step_start, host, None))
    return run


def expected(run):
    layers = []
    for name, fwd, bwd, nbytes in LAYERS:
        f = sum(ms for _, ms in fwd)
        b = sum(ms for s, ms in bwd if s != "nccl")
        if name == "layers.1":
            b = 2.0  # 1.2 + 1.0 overlapping by 0.2
        e = {"name": name, "fwd_ms": f, "bwd_ms": b}
        if name == "layers.2":
            e["recompute_ms"] = 1.0
        e["nbytes"] = nbytes
        layers.append(e)
    return {"steps_total": 4, "steps_used": 3, "layers": layers,
            "unattributed_kernels_per_step": 1, "nccl_ms_head": 0.3}


def kineto(run, path, prefix="", shift=0):
    """A torch.profiler trace; prefix and shift make another rank's: its layers renamed, its
    times shifted, its correlation ids, flows and device 0 the same numbers as the first's."""
    ev = []
    for name, tid, s, e, _ in run.ranges:
        n = name.replace("STEP#", "ProfilerStep#")
        if "/" in n and not n.startswith("stagepart/"):
            n = prefix + n
        ev.append({"ph": "X", "cat": "user_annotation", "name": n, "pid": 100, "tid": tid,
                   "ts": (s + shift) / US, "dur": (e - s) / US, "args": {}})
    flow_corr = run.launches[3][2]  # one launch joined by its flow instead of args
    for tid, t, corr, name in run.launches:
        args = {} if corr == flow_corr else {"correlation": corr}
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 100, "tid": tid,
                   "ts": (t + shift) / US, "dur": 3.0, "args": args})
        if corr == flow_corr:
            ev.append({"ph": "s", "cat": "ac2g", "name": "ac2g", "id": corr, "pid": 100, "tid": tid,
                       "ts": (t + shift) / US})
    for kind, name, dev, stream, s, e, corr, nbytes in run.gpu:
        cat = {"kernel": "kernel", "memcpy": "gpu_memcpy"}[kind]
        args = {"device": dev, "stream": stream}
        if corr != flow_corr:
            args["correlation"] = corr
        else:
            ev.append({"ph": "f", "bp": "e", "cat": "ac2g", "name": "ac2g", "id": corr, "pid": dev,
                       "tid": stream, "ts": (s + shift) / US})
        if nbytes:
            args["bytes"] = nbytes
        ev.append({"ph": "X", "cat": cat, "name": name, "pid": dev, "tid": stream,
                   "ts": (s + shift) / US, "dur": (e - s) / US, "args": args})
        ev.append({"ph": "X", "cat": "gpu_user_annotation", "name": "ignored", "pid": dev,
                   "tid": stream, "ts": (s + shift) / US, "dur": 1.0})
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "Synthetic GPU"}],
           "traceEvents": ev}
    with open(path, "w") as f:
        json.dump(doc, f)
    if not prefix:
        with gzip.open(path + ".gz", "wt") as f:
            json.dump(doc, f)


def nsys(run, path, processes=None):
    """An Nsight Systems export. processes: [(pid, layer prefix, time shift, device)], each
    running the same run with the same correlation ids (every process numbers its own), as
    `nsys profile` of several ranks records them; default one process, pid 0x100000."""
    if os.path.exists(path):
        os.remove(path)
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
            rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,
            endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, uint64Value INTEGER,
            int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER,
            floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
            eventClass INTEGER, globalTid INTEGER, correlationId INTEGER, nameId INTEGER,
            returnValue INTEGER, callchainId INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
            deviceId INTEGER, contextId INTEGER, streamId INTEGER, correlationId INTEGER,
            globalPid INTEGER, demangledName INTEGER, shortName INTEGER, mangledName INTEGER,
            gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER, blockZ INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL,
            deviceId INTEGER, contextId INTEGER, streamId INTEGER, correlationId INTEGER,
            globalPid INTEGER, bytes INTEGER, copyKind INTEGER);
        CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT, busLocation TEXT, totalMemory INTEGER);
        CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
    """)
    strings = {}

    def sid(s):
        if s not in strings:
            strings[s] = len(strings) + 1
            db.execute("INSERT INTO StringIds VALUES (?, ?)", (strings[s], s))
        return strings[s]

    several = processes is not None
    for pid, prefix, shift, device in processes or [(0x100000, "", 0, 0)]:
        gpid = pid << 24  # Nsight's serialized GlobalId: the process in bits 24-47
        gtid = {tid: gpid | tid for tid in (1, 2, 3)}
        for i, (name, tid, s, e, payload) in enumerate(run.ranges):
            n = name.replace("STEP#", "stagepart/step ")
            if n.startswith("stagepart/step"):
                n = "stagepart/step"
            elif "/" in n and not n.startswith("stagepart/") and n != "log_metrics":
                n = prefix + n
            # half the names as text, half through StringIds (textId), as nsys writes both
            text, text_id = (n, None) if i % 2 else (None, sid(n))
            db.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, textId, uint64Value) "
                       "VALUES (?, ?, 59, ?, ?, ?, ?)", (s + shift, e + shift, text, gtid[tid], text_id, payload))
        db.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (0, NULL, 34, 'a mark', ?)",
                   (gtid[1],))
        for tid, t, corr, name in run.launches:
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, globalTid, correlationId, nameId) "
                       "VALUES (?, ?, ?, ?, ?)", (t + shift, t + shift + 3 * US, gtid[tid], corr, sid(name + "_v7000")))
        for kind, name, dev, stream, s, e, corr, nbytes in run.gpu:
            g = gpid if several else None  # the one-process fixture leaves globalPid empty
            if kind == "kernel":
                db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, streamId, correlationId, "
                           "globalPid, demangledName, shortName) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                           (s + shift, e + shift, dev + device, stream, corr, g, sid(name), sid(name[:10])))
            else:
                db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, streamId, correlationId, "
                           "globalPid, bytes, copyKind) VALUES (?, ?, ?, ?, ?, ?, ?, 1)",
                           (s + shift, e + shift, dev + device, stream, corr, g, nbytes))
    db.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, 'Synthetic GPU', '0000:00:00.0', 0)")
    db.execute("INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION', '3.11.1')")
    db.commit()
    db.close()


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    run = build()
    kineto(run, os.path.join(out, "trace.json"))
    # rank 1's trace of the same run, 2 us later, its ids and device 0 the same numbers
    kineto(run, os.path.join(out, "trace-rank1.json"), "rank1.", 2 * US)
    nsys(run, os.path.join(out, "report.sqlite"))
    # two ranks at the same time, 2 us apart (less than a launch takes to start), each on its own GPU, their ids colliding
    nsys(run, os.path.join(out, "report-2proc.sqlite"),
         [(0x1234, "", 0, 0), (0x1235, "rank1.", 2 * US, 1)])
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected(run), f, indent=1)


if __name__ == "__main__":
    main()
