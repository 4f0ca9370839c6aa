"""What the Python tests share: the repository's example data, the shared corpus (required when
GLYD_REQUIRE_CORPUS is set, as in CI), the glyd CLI the Rust tests built, and model weights."""

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "data"
CORPUS = REPO.parent / "shared" / "corpus"


def _required(var):
    return os.environ.get(var) not in (None, "", "0")


@pytest.fixture(scope="session")
def corpus_files():
    """Every file of the shared corpus' loghub folder, or the example data when the corpus is
    absent (and not required)."""
    logs = CORPUS / "loghub"
    if logs.is_dir():
        return sorted(p for p in logs.iterdir() if p.is_file() and p.name != "LICENSE")
    if _required("GLYD_REQUIRE_CORPUS"):
        pytest.fail(f"{logs}: the shared corpus is required (GLYD_REQUIRE_CORPUS is set)")
    return sorted(p for p in EXAMPLES.iterdir() if p.suffix in (".log", ".csv"))


@pytest.fixture(scope="session")
def glyd_cli():
    """The glyd binary: $GLYD_BIN, else the one `cargo build` / `cargo test` left in target/."""
    for candidate in (os.environ.get("GLYD_BIN"), REPO / "target/debug/glyd", REPO / "target/release/glyd"):
        if candidate and Path(candidate).is_file():
            return str(candidate)
    pytest.fail("no glyd binary: run `cargo build -p glyd-cli` (or set GLYD_BIN)")


def run(cli, *args, input=None):
    return subprocess.run([cli, *map(str, args)], input=input, capture_output=True, check=True).stdout


@pytest.fixture(scope="session")
def models():
    """The real model weights benches/models.sh fetches (required when GLYD_REQUIRE_MODELS is
    set, as in CI)."""
    folder = Path(os.environ.get("GLYD_MODELS") or Path.home() / ".cache" / "glyd-models")
    found = sorted(folder.glob("minilm-*.safetensors"))
    if not found:
        if _required("GLYD_REQUIRE_MODELS"):
            pytest.fail(f"{folder}: no model weights (run bash benches/models.sh)")
        pytest.skip("no model weights: run bash benches/models.sh")
    return found
