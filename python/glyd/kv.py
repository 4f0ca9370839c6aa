"""KV-cache pages: a (tokens, heads, head_dim) block of BF16 or FP16 keys or values coded
losslessly on its own, so an engine can evict a page and bring back exactly that page."""

from . import _glyd
from ._frameworks import from_bytes, is_torch, to_parts

__all__ = ["encode_page", "decode_page", "encode_pages", "decode_pages", "page_shape"]


def encode_page(tensor, *, gpu_layout=False):
    """Codes one page: a 3-D (tokens, heads, head_dim) BF16/FP16 tensor or array → bytes."""
    if len(tensor.shape) != 3:
        raise ValueError(f"a KV page is (tokens, heads, head_dim), got shape {tuple(tensor.shape)}")
    _, dtype, shape, data = to_parts("page", tensor)
    return _glyd.kv_encode_page(data, *shape, dtype, gpu_layout)


def page_shape(blob):
    """(tokens, heads, head_dim, dtype name) of a coded page."""
    return _glyd.kv_page_shape(blob)


def decode_page(blob, out=None, framework="pt"):
    """Decodes a page into ``out`` (a contiguous tensor or array of its shape and dtype, filled
    in place and returned), or into a new one of ``framework`` (``"pt"`` or ``"np"``)."""
    tokens, heads, head_dim, dtype = _glyd.kv_page_shape(blob)
    if out is None:
        out = from_bytes(framework, dtype, [tokens, heads, head_dim], bytearray(tokens * heads * head_dim * 2))
    if tuple(out.shape) != (tokens, heads, head_dim):
        raise ValueError(f"out has shape {tuple(out.shape)}, the page {(tokens, heads, head_dim)}")
    if is_torch(out):
        if not out.is_contiguous() or out.device.type != "cpu":
            raise ValueError("out must be a contiguous CPU tensor")
        import torch

        target = out.view(-1).view(torch.uint8).numpy()
    else:
        if not out.flags.c_contiguous:
            raise ValueError("out must be C-contiguous")
        target = out.reshape(-1).view("uint8")
    _glyd.kv_decode_page_into(blob, target)
    return out


def encode_pages(tensors, *, gpu_layout=False):
    """``encode_page`` of each tensor in ``tensors``."""
    return [encode_page(t, gpu_layout=gpu_layout) for t in tensors]


def decode_pages(blobs, outs=None, framework="pt"):
    """``decode_page`` of each blob (into the matching ``outs`` when given)."""
    if outs is None:
        return [decode_page(b, framework=framework) for b in blobs]
    if len(outs) != len(blobs):
        raise ValueError(f"{len(blobs)} pages and {len(outs)} outputs")
    return [decode_page(b, o) for b, o in zip(blobs, outs)]
