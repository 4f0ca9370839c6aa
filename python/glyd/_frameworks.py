"""Tensors of NumPy and PyTorch as the native module takes them: (safetensors dtype name,
shape, a buffer of their bytes) and back, without copies where the framework allows."""

_TORCH = None


def _torch_dtypes():
    global _TORCH
    if _TORCH is None:
        import torch

        names = {
            "BOOL": "bool", "U8": "uint8", "I8": "int8", "I16": "int16", "I32": "int32",
            "I64": "int64", "F16": "float16", "BF16": "bfloat16", "F32": "float32",
            "F64": "float64", "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2",
            "U16": "uint16", "U32": "uint32", "U64": "uint64",
        }
        to = {k: getattr(torch, v) for k, v in names.items() if hasattr(torch, v)}
        _TORCH = (to, {v: k for k, v in to.items()})
    return _TORCH


def _numpy_dtypes():
    import numpy as np

    to = {
        "BOOL": np.dtype(np.bool_), "U8": np.dtype(np.uint8), "I8": np.dtype(np.int8),
        "U16": np.dtype(np.uint16), "I16": np.dtype(np.int16), "U32": np.dtype(np.uint32),
        "I32": np.dtype(np.int32), "U64": np.dtype(np.uint64), "I64": np.dtype(np.int64),
        "F16": np.dtype(np.float16), "F32": np.dtype(np.float32), "F64": np.dtype(np.float64),
    }
    try:  # bf16 and fp8 in NumPy come from ml_dtypes (as JAX has them)
        import ml_dtypes

        to["BF16"] = np.dtype(ml_dtypes.bfloat16)
        to["F8_E4M3"] = np.dtype(ml_dtypes.float8_e4m3fn)
        to["F8_E5M2"] = np.dtype(ml_dtypes.float8_e5m2)
    except ImportError:
        pass
    return to, {v: k for k, v in to.items()}


def is_torch(value):
    mod = type(value).__module__
    return mod.startswith("torch")


def to_parts(name, value):
    """(name, dtype name, shape, byte buffer) of a NumPy array or a PyTorch tensor."""
    if is_torch(value):
        _, names = _torch_dtypes()
        if value.dtype not in names:
            raise ValueError(f"tensor {name!r}: dtype {value.dtype} has no safetensors name")
        t = value.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        t = t.contiguous().reshape(-1)
        shape = list(value.shape)
        return name, names[t.dtype], shape, t.view(_torch_byte()).numpy()
    import numpy as np

    if not isinstance(value, np.ndarray):
        raise TypeError(
            f"tensor {name!r}: expected a torch.Tensor or numpy.ndarray, got {type(value).__name__}"
        )
    _, names = _numpy_dtypes()
    dt = value.dtype.newbyteorder("=") if value.dtype.byteorder == ">" else value.dtype
    if dt not in names:
        raise ValueError(f"tensor {name!r}: dtype {value.dtype} has no safetensors name")
    a = np.ascontiguousarray(value, dtype=dt.newbyteorder("<"))
    return name, names[dt], list(value.shape), a.reshape(-1).view(np.uint8)


def _torch_byte():
    import torch

    return torch.uint8


def from_bytes(framework, dtype, shape, data, device="cpu"):
    """A tensor of ``framework`` (``"pt"`` or ``"np"``) over ``data`` (a bytearray it takes)."""
    if framework in ("pt", "torch"):
        import torch

        to, _ = _torch_dtypes()
        if dtype not in to:
            raise ValueError(f"dtype {dtype} is not in this PyTorch")
        if len(data) == 0:
            t = torch.empty(shape, dtype=to[dtype])
        else:
            t = torch.frombuffer(data, dtype=to[dtype]).reshape(shape)
        return t if str(device) == "cpu" else t.to(device)
    if framework in ("np", "numpy"):
        import numpy as np

        to, _ = _numpy_dtypes()
        if dtype not in to:
            raise ValueError(
                f"dtype {dtype} has no NumPy type (install ml_dtypes for BF16 and F8, or use framework='pt')"
            )
        return np.frombuffer(data, dtype=to[dtype]).reshape(shape)
    raise ValueError(f"framework {framework!r}: use 'pt' or 'np'")
