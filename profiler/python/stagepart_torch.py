"""stagepart_torch: name a PyTorch model's layers the way stagepart's profiler reads them.

    import stagepart_torch
    ann = stagepart_torch.annotate(model, modules="layers.*")      # NVTX ranges by default
    for batch in data:
        with ann.step():                                           # "stagepart/step"
            loss = model(batch).sum()                              # "<layer>/fwd" per layer
            loss.backward()                                        # "<layer>/bwd" per layer
            with ann.optimizer():                                  # "stagepart/optimizer"
                opt.step()

Run it under stagepart's own collector (`stagepart profile --attach -- python train.py`; each
layer's output bytes reach the profile through the collector's sp_annotate_u64), or record it
with Nsight Systems (`nsys profile -t cuda,nvtx python train.py`, then `nsys export --type
sqlite`) or, with ranges="record_function", with torch.profiler, and make the profile with
`stagepart import nsys|kineto` (docs/profiling.md). Forward ranges are pushed by
forward pre/post hooks. A layer's backward range opens when the gradient of its output arrives
(a hook on each output tensor, so it works whatever the layer's inputs: an embedding's take no
gradient) and lasts until the next layer's opens or the backward ends (a callback the autograd
engine runs then), all on the thread that runs the backward. The loss is a layer of its own,
"loss": the work after the last annotated module inside the model's forward (Hugging Face style)
and its backward, from the loss's gradient to the last module's; or, for a loss the caller
computes, what runs inside `with ann.loss():`. The helper also records each layer's output bytes
(tensors deduplicated by storage) and parameter bytes: ann.sizes().

Only the standard library is imported here; torch is imported when a torch range backend is
used, so the logic is testable with stand-in modules (tests/python/).
"""
import ctypes
import fnmatch
import os
import threading

STEP_RANGE = "stagepart/step"
OPTIMIZER_RANGE = "stagepart/optimizer"
LOSS_LAYER = "loss"


def collector_annotate():
    """sp_annotate_u64 of stagepart's live collector (libstagepart-inject.so) when this process
    runs under `stagepart profile --attach` and NVTX has loaded it, else None. torch.cuda.nvtx
    ranges carry no payload, so output bytes reach the collector this way."""
    path = os.environ.get("NVTX_INJECTION64_PATH") or os.environ.get("CUDA_INJECTION64_PATH")
    if not path or not os.environ.get("STAGEPART_INJECT_DIR"):
        return None
    try:  # RTLD_NOLOAD: the library NVTX loaded, never a second copy
        lib = ctypes.CDLL(path, mode=os.RTLD_NOW | getattr(os, "RTLD_NOLOAD", 0))
        fn = lib.sp_annotate_u64
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_char_p, ctypes.c_uint64]
    fn.restype = ctypes.c_int
    return lambda name, nbytes: fn(name.encode(), nbytes)


class _Nvtx:
    """torch.cuda.nvtx push/pop (NVTX v3 under the hood)."""

    def __init__(self):
        import torch  # noqa: F401  (imported when used)

        self._nvtx = torch.cuda.nvtx
        self._annotate = False  # looked up at the first layer: NVTX loads the collector then

    def push(self, name):
        self._nvtx.range_push(name)

    def pop(self):
        self._nvtx.range_pop()

    def annotate(self, name, nbytes):
        """Give the open range `name` its output bytes (the collector's payload)."""
        if self._annotate is False:
            self._annotate = collector_annotate()
        if self._annotate:
            self._annotate(name, nbytes)


class _RecordFunction:
    """torch.profiler.record_function ranges (what Kineto traces show as user_annotation)."""

    def __init__(self):
        import torch

        self._rf = torch.profiler.record_function
        self._open = []

    def push(self, name):
        r = self._rf(name)
        r.__enter__()
        self._open.append(r)

    def pop(self):
        if self._open:
            self._open.pop().__exit__(None, None, None)


def _ranges(kind):
    if kind == "nvtx":
        return _Nvtx()
    if kind == "record_function":
        return _RecordFunction()
    if hasattr(kind, "push") and hasattr(kind, "pop"):
        return kind
    raise ValueError("ranges must be 'nvtx', 'record_function' or an object with push/pop")


def _tensors(value):
    """Every tensor in an output: tensors, tuples, lists, dicts, nested."""
    if hasattr(value, "untyped_storage") and hasattr(value, "element_size"):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _tensors(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v)


def output_bytes(value):
    """Bytes of the tensors in value, each storage counted once (views share storage)."""
    seen, total = set(), 0
    for t in _tensors(value):
        storage = t.untyped_storage()
        key = storage.data_ptr()
        if key in seen:
            continue
        seen.add(key)
        total += storage.nbytes()
    return total


def select(model, modules):
    """(name, module) of the submodules whose qualified name matches the pattern (fnmatch), the
    outermost of nested matches only, in registration order."""
    patterns = [modules] if isinstance(modules, str) else list(modules)
    chosen, matched, names = [], set(), []
    for name, module in model.named_modules():
        if not name:
            continue
        names.append(name)
        hits = [p for p in patterns if fnmatch.fnmatchcase(name, p)]
        matched.update(hits)
        if not hits or any(name.startswith(c + ".") for c, _ in chosen):
            continue
        chosen.append((name, module))
    missed = [p for p in patterns if p not in matched]
    if missed:  # a pattern that matches nothing is a typo or another model, never ignored
        tops = sorted({n.split(".")[0] for n in names})[:8]
        raise ValueError(f"no submodule matches {missed[0]!r} (the model's top-level modules: "
                         f"{', '.join(tops)}; patterns match qualified names such as "
                         f"{names[min(2, len(names) - 1)]!r})" if names else
                         f"no submodule matches {missed[0]!r}: the model has no submodules")
    return chosen


def _requires_grad(t):
    return bool(getattr(t, "requires_grad", False)) and hasattr(t, "register_hook")


def _scalar(t):
    numel = getattr(t, "numel", None)
    return numel is not None and numel() == 1


def _queue_at_backward_end(fn):
    """Run fn when the current backward pass ends (the autograd engine's final callbacks run on
    the thread that ran the backward); False when there is no engine to ask."""
    try:
        import torch

        torch.autograd.Variable._execution_engine.queue_callback(fn)
        return True
    except Exception:  # noqa: BLE001  (no torch, or not inside a backward pass)
        return False


def _loss_capture():
    """A torch function mode that remembers the last scalar tensor made inside it that takes a
    gradient: the loss a `with ann.loss():` block computes."""
    import torch

    class Capture(torch.overrides.TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.last = None

        def __torch_function__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for t in _tensors(out):
                if _requires_grad(t) and _scalar(t):
                    self.last = t
            return out

    return Capture()


class Annotation:
    """The hooks annotate() installed; remove() takes them off."""

    def __init__(self, model, modules, ranges, loss="auto", at_backward_end=None,
                 loss_capture=None):
        self._ranges = _ranges(ranges)
        self._handles = []
        self._local = threading.local()  # each thread's ranges this helper opened
        self._at_backward_end = at_backward_end or _queue_at_backward_end
        self._loss_capture = loss_capture or _loss_capture
        chosen = select(model, modules)
        self.layers = [name for name, _ in chosen]
        self._sizes = {name: {"activation_bytes": 0, "param_bytes": 0} for name in self.layers}
        self._classes = {name: type(module).__name__ for name, module in chosen}
        self._attention = {name: _has_attention(module) for name, module in chosen}
        for name, module in chosen:
            self._sizes[name]["param_bytes"] = _param_bytes(module)
            self._hook(module, name, last=name == self.layers[-1] and loss == "auto")
        if loss == "auto":
            self._handles.append(model.register_forward_hook(self._model_done))
        elif loss is not None:
            raise ValueError("loss must be 'auto' or None")

    # ---- this thread's ranges

    def _stack(self):
        if not hasattr(self._local, "stack"):
            self._local.stack = []
        return self._local.stack

    def _push(self, name):
        self._ranges.push(name)
        self._stack().append(name)

    def _pop_if(self, name):
        """Close the innermost range this helper opened on this thread if it is `name`."""
        stack = self._stack()
        if stack and stack[-1] == name:
            stack.pop()
            self._ranges.pop()
            return True
        return False

    def _open_backward(self, layer):
        """The gradient of `layer`'s output arrived: its backward starts, the previous one's
        (the layer after it, or the loss) is over."""
        stack, name = self._stack(), f"{layer}/bwd"
        if stack and stack[-1] == name:
            return
        if stack and stack[-1].endswith("/bwd"):
            self._pop_if(stack[-1])
        elif not any(r.endswith("/bwd") for r in stack):
            self._at_backward_end(self._close_backward)  # the first of this pass
        self._push(name)

    def _close_backward(self):
        stack = self._stack()
        if stack and stack[-1].endswith("/bwd"):
            self._pop_if(stack[-1])

    def _hook_gradients(self, value, layer):
        for t in _tensors(value):
            if _requires_grad(t):
                t.register_hook(lambda _grad, layer=layer: self._open_backward(layer))

    # ---- module hooks

    def _hook(self, module, name, last):
        sizes = self._sizes[name]
        annotate = getattr(self._ranges, "annotate", None)

        def fwd_pre(_module, _inputs):
            self._pop_if(f"{LOSS_LAYER}/fwd")  # a loss range left open by an earlier pass
            self._push(f"{name}/fwd")

        def fwd_post(_module, _inputs, output):
            nbytes = output_bytes(output)
            if annotate:
                annotate(f"{name}/fwd", nbytes)  # before the pop: the range is still open
            self._pop_if(f"{name}/fwd")
            sizes["activation_bytes"] = max(sizes["activation_bytes"], nbytes)
            self._hook_gradients(output, name)
            if last:  # what the model does after its last layer is its loss
                self._push(f"{LOSS_LAYER}/fwd")

        self._handles += [
            module.register_forward_pre_hook(fwd_pre),
            module.register_forward_hook(fwd_post),
        ]

    def _model_done(self, _model, _inputs, output):
        """The model's forward returned: the loss range closes, and a scalar output that takes a
        gradient (a Hugging Face model's loss) opens the loss's backward when its gradient
        comes."""
        self._pop_if(f"{LOSS_LAYER}/fwd")
        for t in _tensors(output):
            if _requires_grad(t) and _scalar(t):
                t.register_hook(lambda _grad: self._open_backward(LOSS_LAYER))

    def step(self):
        return _Scope(self._ranges, STEP_RANGE)

    def optimizer(self):
        return _Scope(self._ranges, OPTIMIZER_RANGE)

    def loss(self):
        """`with ann.loss(): loss = criterion(output, target)`: the loss computed outside the
        model is the "loss" layer's forward, and its backward runs from the loss's gradient to
        the model's last layer's."""
        return _LossScope(self)

    def sizes(self):
        """{layer: {"activation_bytes": largest output seen, "param_bytes": ...}}"""
        return {k: dict(v) for k, v in self._sizes.items()}

    def modules(self):
        """The module map of the annotated layers (paths are the layer names), for
        `stagepart import kineto|nsys TRACE --modules FILE`: parameter and output bytes and a
        kind from each class reach the profile."""
        return _document([{"path": name, "class": self._classes[name],
                           "param_bytes": v["param_bytes"],
                           "activation_bytes": v["activation_bytes"],
                           "contains_attention": self._attention[name]}
                          for name, v in self._sizes.items()])

    def write_modules(self, path):
        """modules() written to path as JSON (after the profiled steps: output bytes are the
        largest seen)."""
        _write_json(path, self.modules())

    def remove(self):
        for h in self._handles:
            h.remove()
        self._handles = []


class _LossScope:
    def __init__(self, ann):
        self._ann, self._capture = ann, None

    def __enter__(self):
        self._ann._push(f"{LOSS_LAYER}/fwd")
        self._capture = self._ann._loss_capture()
        self._capture.__enter__()
        return self

    def __exit__(self, *exc):
        self._capture.__exit__(*exc)
        self._ann._pop_if(f"{LOSS_LAYER}/fwd")
        t = self._capture.last
        if t is not None:
            t.register_hook(lambda _grad: self._ann._open_backward(LOSS_LAYER))
        return False


class _Scope:
    def __init__(self, ranges, name):
        self._ranges, self._name = ranges, name

    def __enter__(self):
        self._ranges.push(self._name)
        return self

    def __exit__(self, *exc):
        self._ranges.pop()
        return False


MODULES_FORMAT = "stagepart-modules"


def _param_bytes(module):
    return sum(p.numel() * p.element_size() for p in module.parameters())


def _has_attention(module):
    """Whether a module below this one has a class name saying attention (as the importer's
    structure rule reads class names)."""
    return any(("attention" in type(m).__name__.lower() or "attn" in type(m).__name__.lower())
               for name, m in module.named_modules() if name)


def _document(entries):
    return {"format": MODULES_FORMAT, "version": 1, "modules": entries}


def describe(model, *args, **kwargs):
    """The module map of a model traced with no annotation: runs model(*args, **kwargs) once
    (without gradients) and, for every submodule, records its path in the model
    ("model.layers.3"), the instance name torch.profiler's with_stack=True ranges give it
    ("Qwen2DecoderLayer_3": its class and how many modules of that class were first called before
    it, the profiler's own numbering), its parameter bytes, its largest output's bytes and whether
    an attention module is inside it. `stagepart import kineto TRACE --modules FILE` then names the
    layers by their paths, which torch resolves. Call it with the batch the trace ran, before or
    after the profiled steps: the numbering follows first calls, so a model whose calls depend on
    the data must be described on the same data."""
    import torch

    names = {id(m): name for name, m in model.named_modules()}
    first, seen, counts, handles = [], {}, {}, []

    def pre(module, _inputs):
        key = id(module)
        if key not in seen:
            cls = type(module).__name__
            seen[key] = {"path": names.get(key, ""), "instance": f"{cls}_{counts.get(cls, 0)}",
                         "class": cls, "param_bytes": _param_bytes(module),
                         "activation_bytes": 0,
                         "contains_attention": _has_attention(module)}
            counts[cls] = counts.get(cls, 0) + 1
            first.append(key)

    def post(module, _inputs, output):
        entry = seen.get(id(module))
        if entry is not None:
            entry["activation_bytes"] = max(entry["activation_bytes"], output_bytes(output))

    for _, m in model.named_modules():
        handles += [m.register_forward_pre_hook(pre), m.register_forward_hook(post)]
    try:
        with torch.no_grad():
            model(*args, **kwargs)
    finally:
        for h in handles:
            h.remove()
    return _document([seen[k] for k in first if id(model) != k])


def write_modules(path, model, *args, **kwargs):
    """describe(model, *args, **kwargs) written to path as JSON."""
    _write_json(path, describe(model, *args, **kwargs))


def _write_json(path, doc):
    import json

    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def annotate(model, modules="layers.*", ranges="nvtx", loss="auto"):
    """Name the layers matching `modules` (an fnmatch pattern or a list of them) by stagepart's
    convention: "<name>/fwd" and "<name>/bwd" ranges around each layer's forward and backward.
    ranges: "nvtx" (torch.cuda.nvtx; for Nsight Systems and stagepart's collector),
    "record_function" (for torch.profiler / Kineto traces), or an object with push(name) and
    pop(). loss: "auto" makes the work after the last layer inside the model's forward, and the
    backward of a scalar the model returns, the layer "loss"; None leaves the model's end alone
    (`with ann.loss():` marks a loss computed outside the model either way)."""
    return Annotation(model, modules, ranges, loss)
