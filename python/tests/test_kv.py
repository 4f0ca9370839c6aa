"""KV-cache pages from Python: BF16 and FP16 pages, into new or given outputs, in batches."""

import numpy as np
import pytest
import torch

import glyd


def _page(dtype, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(16, 8, 64, generator=gen) * 0.5).to(dtype)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("gpu_layout", [False, True])
def test_pages_round_trip(dtype, gpu_layout):
    page = _page(dtype)
    blob = glyd.kv.encode_page(page, gpu_layout=gpu_layout)
    assert len(blob) < page.numel() * 2
    assert glyd.kv.page_shape(blob)[:3] == (16, 8, 64)
    assert torch.equal(glyd.kv.decode_page(blob), page)
    out = torch.empty_like(page)
    assert glyd.kv.decode_page(blob, out=out) is out
    assert torch.equal(out, page)


def test_numpy_fp16_pages_and_batches():
    pages = [np.random.default_rng(i).standard_normal((4, 2, 32)).astype(np.float16) for i in range(5)]
    blobs = glyd.kv.encode_pages(pages)
    for got, want in zip(glyd.kv.decode_pages(blobs, framework="np"), pages):
        assert np.array_equal(got, want)
    outs = [np.empty_like(p) for p in pages]
    glyd.kv.decode_pages(blobs, outs)
    assert all(np.array_equal(o, p) for o, p in zip(outs, pages))


def test_bad_pages_and_shapes():
    blob = bytearray(glyd.kv.encode_page(_page(torch.bfloat16)))
    blob[-1] ^= 0xFF
    with pytest.raises(glyd.CorruptError, match="KV page"):
        glyd.kv.decode_page(bytes(blob))
    with pytest.raises(glyd.CorruptError):
        glyd.kv.decode_page(b"short")
    with pytest.raises(ValueError, match="BF16 or F16"):
        glyd.kv.encode_page(torch.zeros(2, 2, 2))
    with pytest.raises(ValueError, match="tokens, heads, head_dim"):
        glyd.kv.encode_page(torch.zeros(2, 2, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="shape"):
        glyd.kv.decode_page(glyd.kv.encode_page(_page(torch.float16)), out=torch.empty(1, 1, 1, dtype=torch.float16))
