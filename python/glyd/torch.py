"""PyTorch tensors in glyd tensor files, laid out as ``safetensors.torch``."""

from . import tensors as _t

__all__ = ["save_file", "load_file", "save", "load"]


def save_file(tensors, filename, metadata=None, base=None, *, gpu_layout=False):
    """Saves a dict of ``torch.Tensor`` (see ``glyd.tensors.save_file``)."""
    return _t.save_file(tensors, filename, metadata, base, gpu_layout=gpu_layout)


def load_file(filename, device="cpu", base=None):
    """Loads every tensor as ``torch.Tensor`` on ``device``."""
    return _t.load_file(filename, device, base, framework="pt")


def save(tensors, metadata=None, base=None):
    return _t.save(tensors, metadata, base)


def load(data, device="cpu", base=None):
    return _t.load(data, device, base, framework="pt")
