"""NumPy arrays in glyd tensor files, laid out as ``safetensors.numpy`` (BF16 and FP8 need
``ml_dtypes``, as in JAX)."""

from . import tensors as _t

__all__ = ["save_file", "load_file", "save", "load"]


def save_file(tensors, filename, metadata=None, base=None, *, gpu_layout=False):
    """Saves a dict of ``numpy.ndarray`` (see ``glyd.tensors.save_file``)."""
    return _t.save_file(tensors, filename, metadata, base, gpu_layout=gpu_layout)


def load_file(filename, base=None):
    """Loads every tensor as ``numpy.ndarray``."""
    return _t.load_file(filename, "cpu", base, framework="np")


def save(tensors, metadata=None, base=None):
    return _t.save(tensors, metadata, base)


def load(data, base=None):
    return _t.load(data, "cpu", base, framework="np")
