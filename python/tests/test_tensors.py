"""Tensor files: every dtype bit-exact through PyTorch and NumPy, safetensors' API (safe_open,
slices, metadata), checkpoints against a base, files from `glyd pack`, bad input."""

import numpy as np
import pytest
import safetensors.torch
import torch

import glyd
import glyd.numpy
import glyd.torch
from conftest import run

TORCH_DTYPES = [
    torch.bfloat16, torch.float16, torch.float32, torch.float64, torch.float8_e4m3fn,
    torch.float8_e5m2, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool,
]


def _random(dtype, shape, gen):
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=gen) * 0.02).to(dtype)
    if dtype == torch.bool:
        return torch.rand(shape, generator=gen) > 0.5
    info = torch.iinfo(dtype)
    return torch.randint(max(info.min, -1000), min(info.max, 1000), shape, generator=gen).to(dtype)


def _bits(t):
    return t.contiguous().view(-1).view(torch.uint8)


def test_every_torch_dtype_round_trips_bit_exact(tmp_path):
    gen = torch.Generator().manual_seed(7)
    tensors = {f"t.{d}".replace("torch.", ""): _random(d, (33, 17), gen) for d in TORCH_DTYPES}
    tensors["scalar"] = torch.tensor(3.5)
    tensors["empty"] = torch.zeros(0, 4)
    tensors["transposed"] = torch.randn(8, 5, generator=gen).t()  # not contiguous
    path = tmp_path / "all.glyd"
    glyd.torch.save_file(tensors, path)
    back = glyd.torch.load_file(path)
    assert list(back) == list(tensors)
    for name, t in tensors.items():
        assert back[name].dtype == t.dtype and back[name].shape == t.shape, name
        assert torch.equal(_bits(back[name]), _bits(t)), name
    # Loaded tensors are ordinary, writable tensors.
    back["t.float32"].add_(1)


def test_numpy_arrays_round_trip(tmp_path):
    rng = np.random.default_rng(3)
    arrays = {
        "f32": rng.standard_normal((64, 3)).astype(np.float32),
        "f16": rng.standard_normal(100).astype(np.float16),
        "f64": rng.standard_normal((2, 2, 2)),
        "i64": rng.integers(-5, 5, 50),
        "u16": rng.integers(0, 60000, 50).astype(np.uint16),
        "big_endian": np.arange(10, dtype=">i4"),
        "bool": rng.random(9) > 0.5,
    }
    path = tmp_path / "np.glyd"
    glyd.numpy.save_file(arrays, path, metadata={"format": "np"})
    back = glyd.numpy.load_file(path)
    for name, a in arrays.items():
        assert np.array_equal(back[name], a), name
        assert back[name].dtype == a.dtype.newbyteorder("="), name


def test_safe_open_slices_and_metadata(tmp_path):
    gen = torch.Generator().manual_seed(1)
    tensors = {"emb": torch.randn(100, 16, generator=gen).to(torch.bfloat16), "bias": torch.randn(16, generator=gen)}
    path = tmp_path / "s.glyd"
    glyd.torch.save_file(tensors, path, metadata={"step": "100"})
    with glyd.tensors.safe_open(path, framework="pt") as f:
        assert f.keys() == ["emb", "bias"]
        assert f.metadata() == {"step": "100"}
        s = f.get_slice("emb")
        assert s.get_shape() == [100, 16] and s.get_dtype() == "BF16"
        assert torch.equal(s[10:20, :4], tensors["emb"][10:20, :4])
        assert torch.equal(f.get_tensor("bias"), tensors["bias"])
        with pytest.raises(KeyError):
            f.get_tensor("nope")
    with glyd.tensors.safe_open(path, framework="np") as f:
        assert np.array_equal(f.get_tensor("bias"), tensors["bias"].numpy())


def test_checkpoints_against_a_base_are_smaller_and_need_it(tmp_path):
    gen = torch.Generator().manual_seed(5)
    base = {"w": (torch.randn(256, 256, generator=gen) * 0.02).to(torch.bfloat16)}
    step = {"w": (base["w"].float() + torch.randn(256, 256, generator=gen) * 1e-4).to(torch.bfloat16)}
    plain, against = tmp_path / "plain.glyd", tmp_path / "delta.glyd"
    glyd.torch.save_file(step, plain)
    glyd.torch.save_file(step, against, base=base)
    assert against.stat().st_size < plain.stat().st_size
    assert torch.equal(glyd.torch.load_file(against, base=base)["w"], step["w"])
    with pytest.raises(ValueError, match="base"):
        glyd.torch.load_file(against)


def test_a_packed_safetensors_model_loads_like_safetensors(tmp_path, models, glyd_cli):
    for model in models:
        packed = tmp_path / (model.name + ".glyd")
        run(glyd_cli, "pack", model, packed)
        want = safetensors.torch.load_file(model)
        got = glyd.torch.load_file(packed)
        assert list(got) == list(want)
        for k in want:
            assert torch.equal(_bits(got[k]), _bits(want[k])), (model.name, k)


def test_bad_tensor_files_and_arguments(tmp_path):
    path = tmp_path / "t.glyd"
    glyd.torch.save_file({"a": torch.ones(1000)}, path)
    data = path.read_bytes()
    cut = tmp_path / "cut.glyd"
    cut.write_bytes(data[:-9])
    with pytest.raises(glyd.CorruptError, match="cut.glyd"):
        glyd.torch.load_file(cut)
    flipped = bytearray(data)
    flipped[len(flipped) // 3] ^= 0xFF  # in the tensor's payload
    bad = tmp_path / "flip.glyd"
    bad.write_bytes(flipped)
    with pytest.raises(glyd.GlydError):
        glyd.torch.load_file(bad)
    with pytest.raises(TypeError, match="dict"):
        glyd.torch.save_file([torch.ones(1)], tmp_path / "x.glyd")
    with pytest.raises(ValueError, match="dtype"):
        glyd.torch.save_file({"c": torch.ones(2, dtype=torch.complex64)}, tmp_path / "x.glyd")
    with pytest.raises(TypeError, match="metadata"):
        glyd.torch.save_file({"a": torch.ones(1)}, tmp_path / "x.glyd", metadata={"n": 1})
    assert not (tmp_path / "x.glyd").exists()


def _trained(seed, steps, dtype=torch.bfloat16):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)).to(dtype)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        loss = model(torch.randn(8, 64, generator=gen, dtype=dtype)).float().pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"model": model.state_dict(), "optim": opt.state_dict(), "step": steps}


def _equal_state(a, b):
    if torch.is_tensor(a):
        return torch.is_tensor(b) and a.dtype == b.dtype and torch.equal(a.view(-1).view(torch.uint8), b.view(-1).view(torch.uint8))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal_state(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_equal_state(x, y) for x, y in zip(a, b))
    return a == b


def test_torch_save_checkpoints_round_trip_and_pack_against_a_base(tmp_path, glyd_cli):
    first, second = _trained(1, 3), _trained(1, 4)
    a, b, plain = tmp_path / "a.glyd", tmp_path / "b.glyd", tmp_path / "plain.glyd"
    glyd.torch.save_pt(first, a)
    assert _equal_state(glyd.torch.load_pt(a), first)
    # The base as a .pt file, as torch.save wrote it.
    base_pt = tmp_path / "first.pt"
    torch.save(first, base_pt)
    glyd.torch.save_pt(second, b, base=base_pt)
    glyd.torch.save_pt(second, plain)
    assert b.stat().st_size < plain.stat().st_size
    assert _equal_state(glyd.torch.load_pt(b, base=base_pt), second)
    with pytest.raises(ValueError, match="base"):
        glyd.torch.load_pt(b)
    # `glyd pack` of a .pt file and `glyd unpack` give the identical file back, which
    # glyd.torch.load_pt reads too.
    run(glyd_cli, "pack", base_pt, tmp_path / "cli.glyd")
    run(glyd_cli, "unpack", tmp_path / "cli.glyd", tmp_path / "back.pt")
    assert (tmp_path / "back.pt").read_bytes() == base_pt.read_bytes()
    assert _equal_state(glyd.torch.load_pt(tmp_path / "cli.glyd"), first)
