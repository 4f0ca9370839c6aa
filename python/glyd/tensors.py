"""Tensor files, as ``safetensors`` reads and writes them, coded near the entropy floor.

``save_file`` takes a dict of NumPy arrays or PyTorch tensors; ``load_file`` and ``safe_open``
give them back bit-exact, one tensor decoded at a time. ``base=`` codes a checkpoint against
the previous one (the same tensors, a few steps of training apart): pass the same base to load
it. Files from ``glyd pack`` (a safetensors file packed by the CLI) open the same way.
"""

import json
import os

from . import _glyd
from ._frameworks import from_bytes, is_torch, to_parts

__all__ = ["save_file", "load_file", "safe_open", "save", "load"]


def _parts(tensors):
    if not isinstance(tensors, dict):
        raise TypeError(f"expected a dict of name to tensor, got {type(tensors).__name__}")
    return [to_parts(name, value) for name, value in tensors.items()]


def save_file(tensors, filename, metadata=None, base=None, *, gpu_layout=False):
    """Saves ``tensors`` (name → NumPy array or PyTorch tensor) at ``filename``; returns the
    file's size in bytes. ``metadata`` is a dict of strings kept in the header (as
    safetensors keeps it); ``base`` a dict of the previous checkpoint's tensors, against which
    matching ones are coded. ``gpu_layout`` picks the layout a GPU decodes. The file appears
    under its name only once complete."""
    if metadata is not None:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise TypeError("metadata must map str to str, as in safetensors")
        metadata = list(metadata.items())
    return _glyd.save_tensors(
        os.fspath(filename),
        _parts(tensors),
        metadata,
        None if base is None else _parts(base),
        gpu_layout,
    )


def load_file(filename, device="cpu", base=None, framework="pt"):
    """Every tensor of ``filename`` as a dict (PyTorch tensors on ``device``; NumPy arrays with
    ``framework="np"``). ``base``: the tensors it was saved against, if any."""
    with safe_open(filename, framework=framework, device=device, base=base) as f:
        return {k: f.get_tensor(k) for k in f.keys()}


class _Slice:
    """One tensor, indexed as a ``safetensors`` slice: only that tensor is decoded."""

    def __init__(self, handle, name, dtype, shape):
        self._handle, self._name, self._dtype, self._shape = handle, name, dtype, shape

    def get_shape(self):
        return list(self._shape)

    def get_dtype(self):
        return self._dtype

    def __getitem__(self, index):
        return self._handle.get_tensor(self._name)[index]


class safe_open:
    """Opens a tensor file for reading, as ``safetensors.safe_open`` does: ``keys()``,
    ``metadata()``, ``get_tensor(name)`` and ``get_slice(name)`` decode nothing but what they
    return. A context manager."""

    def __init__(self, filename, framework="pt", device="cpu", base=None):
        if framework not in ("pt", "torch", "np", "numpy"):
            raise ValueError(f"framework {framework!r}: use 'pt' or 'np'")
        self._file = _glyd.TensorFile(os.fspath(filename))
        self._framework = framework
        self._device = device
        self._base = None if base is None else _parts(base)
        self._info = {name: (dtype, shape) for name, dtype, shape in self._file.tensors()}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def keys(self):
        return list(self._info)

    def metadata(self):
        header = json.loads(self._file.header())
        return header.get("__metadata__")

    def get_tensor(self, name):
        if name not in self._info:
            raise KeyError(f"no tensor named {name!r}")
        dtype, shape = self._info[name]
        data = self._file.read(name, self._base)
        return from_bytes(self._framework, dtype, shape, data, self._device)

    def get_slice(self, name):
        if name not in self._info:
            raise KeyError(f"no tensor named {name!r}")
        dtype, shape = self._info[name]
        return _Slice(self, name, dtype, shape)


def save(tensors, metadata=None, base=None):
    """``save_file`` into bytes."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.glyd")
        save_file(tensors, path, metadata, base)
        with open(path, "rb") as f:
            return f.read()


def load(data, device="cpu", base=None, framework="pt"):
    """``load_file`` from bytes."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.glyd")
        with open(path, "wb") as f:
            f.write(data)
        return load_file(path, device, base, framework)


del is_torch
