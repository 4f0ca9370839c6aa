"""PyTorch tensors in glyd tensor files, laid out as ``safetensors.torch``; and ``torch.save``
checkpoints as they are (``save_pt`` / ``load_pt``)."""

from . import tensors as _t

__all__ = ["save_file", "load_file", "save", "load", "save_pt", "load_pt"]


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


def save_pt(obj, f, base=None, *, pickle_protocol=2):
    """``torch.save(obj, f)``, coded by glyd: the checkpoint as PyTorch writes it (any object:
    model and optimizer state dicts, step counters), its tensor storages coded as tensors and
    the rest as it is. ``load_pt`` (or ``glyd unpack``) gives back the identical ``torch.save``
    bytes. ``base``: a previous checkpoint (a ``.pt`` path or its bytes) to code storages
    against; loading needs the same base. Returns the file's size."""
    import io
    import os

    import torch

    buf = io.BytesIO()
    torch.save(obj, buf, pickle_protocol=pickle_protocol)
    from . import _glyd

    return _glyd.pack_bytes(os.fspath(f), buf.getbuffer(), "checkpoint.pt", _base_bytes(base))


def load_pt(f, base=None, **kwargs):
    """``torch.load`` of a checkpoint written by ``save_pt`` (or ``glyd pack`` of a ``.pt``
    file); ``kwargs`` go to ``torch.load`` (``weights_only=True`` is its default: glyd never
    unpickles anything itself)."""
    import io
    import os

    import torch

    from . import _glyd

    data = _glyd.TensorFile(os.fspath(f)).unpack(_base_bytes(base))
    return torch.load(io.BytesIO(data), **kwargs)


def _base_bytes(base):
    import os

    if base is None or isinstance(base, (bytes, bytearray, memoryview)):
        return base
    with open(os.fspath(base), "rb") as fh:
        return fh.read()
