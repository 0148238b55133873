"""tests/python/test_stagepart_torch.py: the PyTorch helper's logic with stand-in modules,
tensors and autograd engine (no torch needed): which modules it selects, the ranges it pushes and
pops in a forward and backward pass (backward ranges opened by the gradients of each layer's
outputs, whatever its inputs; the loss as a layer, in the model or in `with ann.loss():`; the
backward on its own thread), output bytes deduplicated by storage, parameter bytes, hook
removal."""
import os
import sys
import threading
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
    """What the helper uses of a tensor; grad() runs its hooks, as autograd does when the
    tensor's gradient is computed."""

    def __init__(self, storage, requires_grad=True, numel=16):
        self.storage, self.requires_grad, self.n = storage, requires_grad, numel
        self.hooks = []

    def untyped_storage(self):
        return self.storage

    def element_size(self):
        return 4

    def numel(self):
        return self.n

    def register_hook(self, hook):
        self.hooks.append(hook)

    def grad(self):
        for h in self.hooks:
            h(None)


class Engine:
    """The autograd engine's end-of-backward callbacks."""

    def __init__(self):
        self.callbacks = []

    def queue(self, fn):
        self.callbacks.append(fn)
        return True

    def backward(self, tensors):
        """Gradients arrive for these tensors in this order, then the pass ends."""
        for t in tensors:
            t.grad()
        callbacks, self.callbacks = self.callbacks, []
        for fn in callbacks:
            fn()


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

    def forward(self, output):
        for h in self.hooks["fwd_pre"]:
            h(self, ())
        for h in self.hooks["fwd"]:
            h(self, (), output)
        return output


class Recorder:
    """NVTX-like: a stack of ranges per thread; a pop closes the calling thread's innermost."""

    def __init__(self):
        self.events, self.stacks = [], {}

    @property
    def open(self):
        return self.stacks.setdefault(threading.get_ident(), [])

    @property
    def depth(self):
        return sum(len(v) for v in self.stacks.values())

    def push(self, name):
        self.events.append(("push", name))
        self.open.append(name)

    def pop(self):
        assert self.open, "a pop with no range open on this thread"
        self.events.append(("pop", self.open.pop()))


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
        # one pattern of several matching nothing is an error naming it, not ignored
        with self.assertRaisesRegex(ValueError, "no submodule matches 'layer.*'.*embed, head, layers"):
            stagepart_torch.select(m, ["embed", "layer.*"])

    def forward(self, m, shared, loss_value):
        """embed, the three blocks, then the model returns loss_value (HF style)"""
        blocks = dict(m.named_modules())
        outs = [blocks["embed"].forward(Tensor(Storage(9, 100)))]
        for i in range(3):  # a tuple whose two views share one storage: counted once
            outs.append(blocks[f"layers.{i}"].forward(
                (Tensor(shared), Tensor(shared), {"aux": Tensor(Storage(2, 8), requires_grad=False)})))
        m.forward(loss_value)
        return outs

    def test_ranges_bytes_and_removal(self):
        m, rec, engine = model(), Recorder(), Engine()
        ann = stagepart_torch.Annotation(m, ["embed", "layers.*"], rec, at_backward_end=engine.queue)
        shared = Storage(1, 4096)
        loss = Tensor(Storage(5, 4), numel=1)
        with ann.step():
            outs = self.forward(m, shared, {"loss": loss, "logits": Tensor(Storage(6, 64))})
            # the backward: the loss's gradient first, then each layer's outputs, last to first;
            # the embedding's inputs take no gradient, its output does
            engine.backward([loss, outs[3][0], outs[3][1], outs[2][0], outs[1][0], outs[0]])
            with ann.optimizer():
                pass
        self.assertEqual(rec.events, [
            ("push", "stagepart/step"),
            ("push", "embed/fwd"), ("pop", "embed/fwd"),
            ("push", "layers.0/fwd"), ("pop", "layers.0/fwd"),
            ("push", "layers.1/fwd"), ("pop", "layers.1/fwd"),
            ("push", "layers.2/fwd"), ("pop", "layers.2/fwd"),
            ("push", "loss/fwd"), ("pop", "loss/fwd"),  # after the last layer, in the model
            ("push", "loss/bwd"), ("pop", "loss/bwd"),
            ("push", "layers.2/bwd"), ("pop", "layers.2/bwd"),  # two outputs: opened once
            ("push", "layers.1/bwd"), ("pop", "layers.1/bwd"),
            ("push", "layers.0/bwd"), ("pop", "layers.0/bwd"),
            ("push", "embed/bwd"), ("pop", "embed/bwd"),  # closed when the pass ends
            ("push", "stagepart/optimizer"), ("pop", "stagepart/optimizer"),
            ("pop", "stagepart/step")])
        self.assertEqual(rec.depth, 0)
        sizes = ann.sizes()
        self.assertEqual(sizes["layers.1"], {"activation_bytes": 4104, "param_bytes": 220})
        self.assertEqual(sizes["embed"], {"activation_bytes": 100, "param_bytes": 14})
        doc = ann.modules()  # what `import --modules` reads: the same numbers, with classes
        self.assertEqual((doc["format"], doc["version"]), ("stagepart-modules", 1))
        by_path = {e["path"]: e for e in doc["modules"]}
        self.assertEqual(by_path["layers.1"], {"path": "layers.1", "class": "Module",
                                               "param_bytes": 220, "activation_bytes": 4104,
                                               "contains_attention": False})
        ann.remove()
        n = len(rec.events)
        dict(m.named_modules())["layers.0"].forward(Tensor(shared))
        self.assertEqual(len(rec.events), n)

    def test_backward_on_its_own_thread(self):
        """PyTorch runs the backward on its autograd thread: the ranges open and close there"""
        m, rec, engine = model(), Recorder(), Engine()
        stagepart_torch.Annotation(m, "layers.*", rec, at_backward_end=engine.queue)
        loss = Tensor(Storage(5, 4), numel=1)
        outs = self.forward(m, Storage(1, 64), loss)
        t = threading.Thread(target=engine.backward, args=([loss, outs[3][0], outs[2][0], outs[1][0]],))
        t.start()
        t.join()
        self.assertEqual(rec.depth, 0)
        self.assertEqual([e[1] for e in rec.events if e[0] == "push"][-4:],
                         ["loss/bwd", "layers.2/bwd", "layers.1/bwd", "layers.0/bwd"])

    def test_loss_outside_the_model(self):
        """the model returns logits; the caller computes the loss under `with ann.loss():`"""
        m, rec, engine = model(), Recorder(), Engine()

        class Capture:  # stands in for the torch function mode that sees the loss made
            last = None

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

        captured = Capture()
        ann = stagepart_torch.Annotation(m, "layers.*", rec, at_backward_end=engine.queue,
                                         loss_capture=lambda: captured)
        outs = self.forward(m, Storage(1, 64), Tensor(Storage(6, 64)))  # logits: no loss here
        loss = Tensor(Storage(7, 4), numel=1)
        with ann.loss():
            captured.last = loss
        engine.backward([loss, outs[3][0], outs[2][0], outs[1][0]])
        pushes = [e[1] for e in rec.events if e[0] == "push"]
        self.assertEqual(pushes.count("loss/fwd"), 2)  # the model's (empty) end, and the caller's
        self.assertEqual(pushes[-4:], ["loss/bwd", "layers.2/bwd", "layers.1/bwd", "layers.0/bwd"])
        self.assertEqual(rec.depth, 0)

    def test_no_loss_layer(self):
        m, rec = model(), Recorder()
        stagepart_torch.Annotation(m, "layers.*", rec, loss=None, at_backward_end=Engine().queue)
        self.forward(m, Storage(1, 64), Tensor(Storage(5, 4), numel=1))
        self.assertNotIn(("push", "loss/fwd"), rec.events)
        with self.assertRaises(ValueError):
            stagepart_torch.Annotation(m, "layers.*", rec, loss="maybe")

    def test_output_bytes_reach_the_open_range(self):
        m, rec = model(), AnnotatingRecorder()
        stagepart_torch.annotate(m, "layers.*", ranges=rec)
        blocks = dict(m.named_modules())
        blocks["layers.0"].forward((Tensor(Storage(1, 64)), Tensor(Storage(1, 64))))
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
