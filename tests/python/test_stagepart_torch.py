"""tests/python/test_stagepart_torch.py: the PyTorch helper's logic with stand-in modules and
tensors (no torch needed): which modules it selects, the ranges it pushes and pops in a forward
and backward pass, output bytes deduplicated by storage, parameter bytes, hook removal."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "profiler", "python"))
import stagepart_torch  # noqa: E402


class Storage:
    def __init__(self, ptr, nbytes):
        self.ptr, self.n = ptr, nbytes

    def data_ptr(self):
        return self.ptr

    def nbytes(self):
        return self.n


class Tensor:
    def __init__(self, storage):
        self.storage = storage

    def untyped_storage(self):
        return self.storage

    def element_size(self):
        return 4


class Param:
    def __init__(self, n):
        self.n = n

    def numel(self):
        return self.n

    def element_size(self):
        return 2


class Handle:
    def __init__(self, hooks, hook):
        self.hooks, self.hook = hooks, hook

    def remove(self):
        self.hooks.remove(self.hook)


class Module:
    """What the helper uses of torch.nn.Module: named_modules, parameters and the four hooks."""

    def __init__(self, children=(), params=()):
        self.children = list(children)
        self.params = list(params)
        self.hooks = {"fwd_pre": [], "fwd": [], "bwd_pre": [], "bwd": []}

    def named_modules(self, prefix=""):
        yield prefix, self
        for name, child in self.children:
            yield from child.named_modules(f"{prefix}.{name}" if prefix else name)

    def parameters(self):
        for p in self.params:
            yield p
        for _, c in self.children:
            yield from c.parameters()

    def _reg(self, kind, hook):
        self.hooks[kind].append(hook)
        return Handle(self.hooks[kind], hook)

    def register_forward_pre_hook(self, h):
        return self._reg("fwd_pre", h)

    def register_forward_hook(self, h):
        return self._reg("fwd", h)

    def register_full_backward_pre_hook(self, h):
        return self._reg("bwd_pre", h)

    def register_full_backward_hook(self, h):
        return self._reg("bwd", h)

    def forward(self, output):
        for h in self.hooks["fwd_pre"]:
            h(self, ())
        for h in self.hooks["fwd"]:
            h(self, (), output)

    def backward(self):
        for h in self.hooks["bwd_pre"]:
            h(self, ())
        for h in self.hooks["bwd"]:
            h(self, (), ())


class Recorder:
    def __init__(self):
        self.events, self.depth, self.open = [], 0, []

    def push(self, name):
        self.events.append(("push", name))
        self.depth += 1
        self.open.append(name)

    def pop(self):
        self.events.append(("pop",))
        self.depth -= 1
        self.open.pop()


class AnnotatingRecorder(Recorder):
    """A backend with annotate(), as the NVTX one has for the live collector."""

    def annotate(self, name, nbytes):
        assert self.open and self.open[-1] == name, (name, self.open)  # before the pop
        self.events.append(("annotate", name, nbytes))


def model():
    blocks = [(str(i), Module([("attn", Module(params=[Param(10)]))], [Param(100)])) for i in range(3)]
    return Module([("embed", Module(params=[Param(7)])), ("layers", Module(blocks)),
                   ("head", Module(params=[Param(5)]))])


class TestHelper(unittest.TestCase):
    def test_selection_outermost_in_order(self):
        m = model()
        names = [n for n, _ in stagepart_torch.select(m, "layers.*")]
        self.assertEqual(names, ["layers.0", "layers.1", "layers.2"])  # not layers.0.attn
        names = [n for n, _ in stagepart_torch.select(m, ["embed", "layers.*", "head"])]
        self.assertEqual(names, ["embed", "layers.0", "layers.1", "layers.2", "head"])
        with self.assertRaises(ValueError):
            stagepart_torch.select(m, "nothing.*")

    def test_ranges_bytes_and_removal(self):
        m, rec = model(), Recorder()
        ann = stagepart_torch.annotate(m, ["embed", "layers.*"], ranges=rec)
        blocks = dict(m.named_modules())
        shared = Storage(1, 4096)
        with ann.step():
            blocks["embed"].forward(Tensor(Storage(9, 100)))
            for i in range(3):  # a tuple whose two views share one storage: counted once
                blocks[f"layers.{i}"].forward((Tensor(shared), Tensor(shared), {"aux": Tensor(Storage(2, 8))}))
            for i in reversed(range(3)):
                blocks[f"layers.{i}"].backward()
            blocks["embed"].backward()
            with ann.optimizer():
                pass
        pushes = [e[1] for e in rec.events if e[0] == "push"]
        self.assertEqual(pushes, ["stagepart/step", "embed/fwd", "layers.0/fwd", "layers.1/fwd",
                                  "layers.2/fwd", "layers.2/bwd", "layers.1/bwd", "layers.0/bwd",
                                  "embed/bwd", "stagepart/optimizer"])
        self.assertEqual(rec.depth, 0)
        sizes = ann.sizes()
        self.assertEqual(sizes["layers.1"], {"activation_bytes": 4104, "param_bytes": 220})
        self.assertEqual(sizes["embed"], {"activation_bytes": 100, "param_bytes": 14})
        ann.remove()
        n = len(rec.events)
        blocks["layers.0"].forward(Tensor(shared))
        self.assertEqual(len(rec.events), n)

    def test_output_bytes_reach_the_open_range(self):
        m, rec = model(), AnnotatingRecorder()
        stagepart_torch.annotate(m, "layers.*", ranges=rec)
        blocks = dict(m.named_modules())
        blocks["layers.0"].forward((Tensor(Storage(1, 64)), Tensor(Storage(1, 64))))
        blocks["layers.0"].backward()
        notes = [e for e in rec.events if e[0] == "annotate"]
        self.assertEqual(notes, [("annotate", "layers.0/fwd", 64)])  # forward only, deduplicated

    def test_collector_lookup(self):
        env = dict(os.environ)
        try:
            for k in ("NVTX_INJECTION64_PATH", "CUDA_INJECTION64_PATH", "STAGEPART_INJECT_DIR"):
                os.environ.pop(k, None)
            self.assertIsNone(stagepart_torch.collector_annotate())  # not under the collector
            os.environ["NVTX_INJECTION64_PATH"] = "/nonexistent/libstagepart-inject.so"
            os.environ["STAGEPART_INJECT_DIR"] = "/tmp"
            self.assertIsNone(stagepart_torch.collector_annotate())  # not loaded: no 2nd copy
        finally:
            os.environ.clear()
            os.environ.update(env)

    @unittest.skipUnless(os.environ.get("STAGEPART_INJECT_LIB"), "the CUDA build's collector")
    def test_real_collector_binding(self):
        import ctypes
        import tempfile

        lib = os.environ["STAGEPART_INJECT_LIB"]
        with tempfile.TemporaryDirectory() as d:
            os.environ.update(NVTX_INJECTION64_PATH=lib, STAGEPART_INJECT_DIR=d)
            ctypes.CDLL(lib)  # as NVTX would have loaded it
            fn = stagepart_torch.collector_annotate()
            self.assertIsNotNone(fn)
            self.assertEqual(fn("layers.0/fwd", 1 << 20), -1)  # no such range open: refused
            self.assertEqual(len([f for f in os.listdir(d) if f.endswith(".splog")]), 1)

    def test_bad_backend(self):
        with self.assertRaises(ValueError):
            stagepart_torch.annotate(model(), ranges="printf")


if __name__ == "__main__":
    unittest.main()
