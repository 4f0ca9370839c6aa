"""The training example runs and resumes bit-identically (it asserts so itself), in fp32 from
scratch and as a bf16 fine-tune."""

import subprocess
import sys

from conftest import REPO

EXAMPLE = REPO / "examples" / "python" / "train_checkpoints.py"


def _run(*args):
    out = subprocess.run([sys.executable, str(EXAMPLE), *args], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def test_the_training_example_resumes_bit_identically(tmp_path):
    out = _run("--epochs", "3", "--steps", "5", "--keyframe", "2", "--out", str(tmp_path / "a"))
    assert "bit-identical" in out
    assert "previous" in out and "none" in out


def test_bf16_checkpoints_against_the_previous_are_smaller(tmp_path):
    out = _run("--epochs", "2", "--steps", "10", "--dtype", "bf16", "--lr", "1e-4", "--out", str(tmp_path / "b"))
    rows = [line.split("|") for line in out.splitlines() if line.strip()[:1].isdigit()]
    alone, against = float(rows[0][1].split()[0]), float(rows[1][1].split()[0])
    assert against < alone, out
