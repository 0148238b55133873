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
forward pre/post hooks, backward ranges by full-backward pre/post hooks, so they land on the
thread that runs them (PyTorch's autograd thread for the backward). The helper also records each
layer's output bytes (tensors deduplicated by storage) and parameter bytes: ann.sizes().

Only the standard library is imported here; torch is imported when a torch range backend is
used, so the logic is testable with stand-in modules (tests/python/).
"""
import ctypes
import fnmatch
import os

STEP_RANGE = "stagepart/step"
OPTIMIZER_RANGE = "stagepart/optimizer"


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
    chosen = []
    for name, module in model.named_modules():
        if not name or not any(fnmatch.fnmatchcase(name, p) for p in patterns):
            continue
        if any(name.startswith(c + ".") for c, _ in chosen):
            continue
        chosen.append((name, module))
    if not chosen:
        raise ValueError(f"no submodule matches {patterns!r}")
    return chosen


class Annotation:
    """The hooks annotate() installed; remove() takes them off."""

    def __init__(self, model, modules, ranges):
        self._ranges = _ranges(ranges)
        self._handles = []
        chosen = select(model, modules)
        self.layers = [name for name, _ in chosen]
        self._sizes = {name: {"activation_bytes": 0, "param_bytes": 0} for name in self.layers}
        for name, module in chosen:
            self._sizes[name]["param_bytes"] = sum(
                p.numel() * p.element_size() for p in module.parameters())
            self._hook(module, name)

    def _hook(self, module, name):
        push, pop = self._ranges.push, self._ranges.pop
        sizes = self._sizes[name]

        def fwd_pre(_module, _inputs):
            push(f"{name}/fwd")

        annotate = getattr(self._ranges, "annotate", None)

        def fwd_post(_module, _inputs, output):
            nbytes = output_bytes(output)
            if annotate:
                annotate(f"{name}/fwd", nbytes)  # before the pop: the range is still open
            pop()
            sizes["activation_bytes"] = max(sizes["activation_bytes"], nbytes)

        def bwd_pre(_module, _grad_output):
            push(f"{name}/bwd")

        def bwd_post(_module, _grad_input, _grad_output):
            pop()

        self._handles += [
            module.register_forward_pre_hook(fwd_pre),
            module.register_forward_hook(fwd_post),
            module.register_full_backward_pre_hook(bwd_pre),
            module.register_full_backward_hook(bwd_post),
        ]

    def step(self):
        return _Scope(self._ranges, STEP_RANGE)

    def optimizer(self):
        return _Scope(self._ranges, OPTIMIZER_RANGE)

    def sizes(self):
        """{layer: {"activation_bytes": largest output seen, "param_bytes": ...}}"""
        return {k: dict(v) for k, v in self._sizes.items()}

    def remove(self):
        for h in self._handles:
            h.remove()
        self._handles = []


class _Scope:
    def __init__(self, ranges, name):
        self._ranges, self._name = ranges, name

    def __enter__(self):
        self._ranges.push(self._name)
        return self

    def __exit__(self, *exc):
        self._ranges.pop()
        return False


def annotate(model, modules="layers.*", ranges="nvtx"):
    """Name the layers matching `modules` (an fnmatch pattern or a list of them) by stagepart's
    convention: "<name>/fwd" and "<name>/bwd" ranges around each layer's forward and backward.
    ranges: "nvtx" (torch.cuda.nvtx; for Nsight Systems and stagepart's collector),
    "record_function" (for torch.profiler / Kineto traces), or an object with push(name) and
    pop()."""
    return Annotation(model, modules, ranges)
