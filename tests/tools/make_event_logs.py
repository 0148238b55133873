#!/usr/bin/env python3
"""Write small stagepart event logs (profiler/event_log.h) from the documented layout, as fuzz
seeds: an independent writer of the format, so the seeds do not come from the code they test.

    make_event_logs.py OUTDIR
"""
import os
import struct
import sys

T0 = 1_700_000_000_000_000_000
MS = 1_000_000


def rec(tag, body):
    return struct.pack("<BI", ord(tag), len(body)) + body


def log(records, version=1):
    return b"SPEVLOG\0" + struct.pack("<II", version, 4242) + b"".join(records)


def strings(*names):
    return [rec("S", struct.pack("<I", i) + n.encode()) for i, n in enumerate(names)]


def main(out):
    os.makedirs(out, exist_ok=True)
    names = ["stagepart/step", "L0/fwd", "L0/bwd", "gemm", "cupti", "130001", "GPU 0",
             "warning", "note"]
    r = strings(*names)
    r.append(rec("T", struct.pack("<III", 0, 100, 0x1234)))
    r.append(rec("T", struct.pack("<III", 1, 101, 0x5678)))
    r.append(rec("M", struct.pack("<II", 4, 5)))
    r.append(rec("M", struct.pack("<II", 7, 8)))
    r.append(rec("D", struct.pack("<II", 0, 6)))
    for step in range(2):
        o = T0 + step * 20 * MS
        r.append(rec("R", struct.pack("<QqqIIQB", 10 * step + 2, o + 1 * MS, o + 5 * MS, 0, 1,
                                      4096, 1)))
        r.append(rec("R", struct.pack("<QqqIIQB", 10 * step + 3, o + 6 * MS, o + 9 * MS, 1, 2,
                                      0, 0)))
        r.append(rec("R", struct.pack("<QqqIIQB", 10 * step + 1, o, o + 10 * MS, 0, 0, 0, 0)))
        for k, (rid, at) in enumerate(((10 * step + 2, 2), (10 * step + 3, 7))):
            corr = 100 * step + k
            if k == 0:  # the range folded into the API record
                r.append(rec("A", struct.pack("<qQIQ", o + at * MS, corr, 100, rid)))
            else:  # or said by an external-correlation record of its own
                r.append(rec("X", struct.pack("<QQ", corr, rid)))
                r.append(rec("A", struct.pack("<qQIQ", o + at * MS, corr, 100, 0)))
            r.append(rec("K", struct.pack("<BqqQQIII", 0, o + (at + 1) * MS, o + (at + 2) * MS,
                                          corr, 0, 0, 7, 3)))
        r.append(rec("A", struct.pack("<qQIQ", o + 3 * MS, 100 * step + 9, 0x1234, 0)))
        r.append(rec("K", struct.pack("<BqqQQIII", 1, o + 4 * MS, o + 5 * MS, 100 * step + 9,
                                      1 << 20, 0, 7, 3)))
    r.append(rec("L", struct.pack("<Q", 2)))
    r.append(rec("Z", b"a record of a later version"))
    seeds = {
        "two-steps.splog": log(r),
        "cut.splog": log(r)[:-7],
        "header-only.splog": log([]),
        "version2.splog": log(r[:3], version=2),
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main(sys.argv[1])
