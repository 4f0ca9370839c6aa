"""Checkpoints of a training job with glyd: each epoch's weights and optimizer state saved with
``glyd.torch.save_file(..., base=previous)``, then training resumed from the last checkpoint
with bit-identical weights and optimizer state. Prints bytes and seconds per checkpoint beside
``torch.save`` and ``safetensors.torch.save_file`` of the same state.

    python examples/python/train_checkpoints.py [--epochs 6] [--steps 50] [--out DIR]

A checkpoint coded against the one before names it in its metadata (``glyd.base``); every
``--keyframe``-th is coded on its own, so resuming reads at most that many files.
"""

import argparse
import io
import json
import os
import tempfile
import time

import safetensors.torch
import torch

import glyd.torch


def make_model():
    return torch.nn.Sequential(
        torch.nn.Linear(256, 1024), torch.nn.GELU(),
        torch.nn.Linear(1024, 1024), torch.nn.GELU(),
        torch.nn.Linear(1024, 10),
    )


def state_tensors(model, opt):
    """Model and optimizer state as flat named tensors, and what is not a tensor as metadata."""
    tensors = {f"model.{k}": v for k, v in model.state_dict().items()}
    sd = opt.state_dict()
    for pid, state in sd["state"].items():
        for key, value in state.items():
            tensors[f"optim.{pid}.{key}"] = value if torch.is_tensor(value) else torch.tensor(value)
    meta = {"optim.param_groups": json.dumps(sd["param_groups"])}
    return {k: v.detach().clone() for k, v in tensors.items()}, meta


def restore(model, opt, tensors, meta):
    model.load_state_dict({k[6:]: v for k, v in tensors.items() if k.startswith("model.")})
    state = {}
    for name, value in tensors.items():
        if name.startswith("optim."):
            _, pid, key = name.split(".", 2)
            state.setdefault(int(pid), {})[key] = value
    opt.load_state_dict({"state": state, "param_groups": json.loads(meta["optim.param_groups"])})


def load_checkpoint(path):
    """A checkpoint's tensors and metadata, its chain of bases loaded first."""
    with glyd.tensors.safe_open(path, framework="pt") as f:
        meta = f.metadata() or {}
    base = None
    if "glyd.base" in meta:
        base, _ = load_checkpoint(os.path.join(os.path.dirname(path), meta["glyd.base"]))
    return glyd.torch.load_file(path, base=base), meta


def timed(f):
    start = time.perf_counter()
    f()
    return time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--steps", type=int, default=50, help="optimizer steps per epoch")
    ap.add_argument("--keyframe", type=int, default=4, help="every Nth checkpoint is coded alone")
    ap.add_argument("--out", help="checkpoint folder (default: a temporary one)")
    ap.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32",
                    help="parameter dtype: fp32 (from scratch), or bf16 (as a bf16 fine-tune runs)")
    ap.add_argument("--lr", type=float, default=1e-3)
    args = ap.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="glyd-ckpt-")
    os.makedirs(out, exist_ok=True)

    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    torch.manual_seed(0)
    model = make_model().to(dtype)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    x, y = torch.randn(4096, 256, dtype=dtype), torch.randint(0, 10, (4096,))

    def train(model, opt, steps, seed):
        gen = torch.Generator().manual_seed(seed)
        for _ in range(steps):
            idx = torch.randint(0, len(x), (128,), generator=gen)
            loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        return loss.item()

    print(f"{'epoch':>5} {'loss':>7} {'state MB':>9} | {'glyd MB':>8} {'s':>6} | {'torch.save MB':>13} {'s':>6} | {'safetensors MB':>14} {'s':>6} | base")
    previous, path = None, None
    totals = {"glyd": 0, "torch": 0, "st": 0}
    for epoch in range(args.epochs):
        loss = train(model, opt, args.steps, epoch)
        tensors, meta = state_tensors(model, opt)
        raw = sum(t.numel() * t.element_size() for t in tensors.values())
        against = previous if epoch % args.keyframe else None
        if against is not None:
            meta["glyd.base"] = os.path.basename(path)
        path = os.path.join(out, f"epoch{epoch:03}.glyd")
        g_s = timed(lambda: glyd.torch.save_file(tensors, path, metadata=meta, base=against))
        buf = io.BytesIO()
        t_s = timed(lambda: torch.save({"model": model.state_dict(), "optim": opt.state_dict()}, buf))
        st_path = os.path.join(out, "peer.safetensors")
        st_s = timed(lambda: safetensors.torch.save_file(tensors, st_path, metadata=meta))
        sizes = (os.path.getsize(path), buf.tell(), os.path.getsize(st_path))
        totals["glyd"] += sizes[0]
        totals["torch"] += sizes[1]
        totals["st"] += sizes[2]
        print(f"{epoch:>5} {loss:>7.4f} {raw / 1e6:>9.2f} | {sizes[0] / 1e6:>8.2f} {g_s:>6.3f} | "
              f"{sizes[1] / 1e6:>13.2f} {t_s:>6.3f} | {sizes[2] / 1e6:>14.2f} {st_s:>6.3f} | "
              f"{'previous' if against is not None else 'none'}")
        previous = tensors
    os.remove(st_path)
    print(f"all checkpoints: glyd {totals['glyd'] / 1e6:.2f} MB, torch.save {totals['torch'] / 1e6:.2f} MB "
          f"({totals['glyd'] / totals['torch']:.3f}x), safetensors {totals['st'] / 1e6:.2f} MB "
          f"({totals['glyd'] / totals['st']:.3f}x)")

    # Resume from the last checkpoint into a fresh model and optimizer: bit-identical state,
    # and the same next steps as the job that never stopped.
    tensors, meta = load_checkpoint(path)
    model2 = make_model().to(dtype)
    opt2 = torch.optim.AdamW(model2.parameters(), lr=args.lr)
    restore(model2, opt2, tensors, meta)
    now, _ = state_tensors(model, opt)
    resumed, _ = state_tensors(model2, opt2)
    assert now.keys() == resumed.keys()
    for k in now:
        assert torch.equal(now[k].view(-1).view(torch.uint8), resumed[k].view(-1).view(torch.uint8)), k
    a = train(model, opt, 5, 1000)
    b = train(model2, opt2, 5, 1000)
    assert a == b, (a, b)
    print(f"resumed from {os.path.basename(path)}: weights and optimizer state bit-identical; "
          f"5 more steps give the same loss ({a:.6f})")


if __name__ == "__main__":
    main()
