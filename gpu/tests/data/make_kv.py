#!/usr/bin/env python3
"""Makes gpu/tests/data/minilm-kv.safetensors: the keys and values of every attention layer
of all-MiniLM-L6-v2 (6 layers, 12 heads × 32 dims) over the first 192 tokens of a real log
from ../shared/corpus, as bf16 tensors `layer.{i}.key` / `layer.{i}.value` of shape
[192, 12, 32] (tokens × heads × head_dim, the layout of a KV-cache page). Run once; the
output is committed. Needs torch and transformers (pip install torch transformers) and the
model folder that benches/models.sh unpacks.

    python3 gpu/tests/data/make_kv.py [MODEL_DIR] [TEXT_FILE]
"""
import os
import sys

import torch
from safetensors.torch import save_file
from transformers import AutoModel, AutoTokenizer

here = os.path.dirname(os.path.abspath(__file__))
model_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser("~/.cache/glyd-models/minilm")
text_file = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "../../../../shared/corpus/loghub/OpenSSH_2k.log")
tokens = 192

tok = AutoTokenizer.from_pretrained(model_dir)
model = AutoModel.from_pretrained(model_dir, dtype=torch.float32).eval()
text = open(text_file, encoding="utf-8", errors="replace").read()[:20000]
ids = tok(text, return_tensors="pt", truncation=True, max_length=tokens)
assert ids["input_ids"].shape[1] == tokens, ids["input_ids"].shape

captured = {}
heads, head_dim = model.config.num_attention_heads, model.config.hidden_size // model.config.num_attention_heads


def hook(name):
    def f(_module, _inputs, output):
        captured[name] = output[0].reshape(tokens, heads, head_dim).to(torch.bfloat16).contiguous()
    return f


for i, layer in enumerate(model.encoder.layer):
    layer.attention.self.key.register_forward_hook(hook(f"layer.{i}.key"))
    layer.attention.self.value.register_forward_hook(hook(f"layer.{i}.value"))
with torch.no_grad():
    model(**ids)
out = os.path.join(here, "minilm-kv.safetensors")
save_file({k: captured[k] for k in sorted(captured)}, out,
          metadata={"model": "all-MiniLM-L6-v2", "text": os.path.basename(text_file), "tokens": str(tokens)})
print(out, sum(t.numel() for t in captured.values()), "values")
