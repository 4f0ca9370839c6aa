"""glyd.compress / decompress: every level on real data, every buffer type, bad input, and the
GIL released while coding."""

import array
import threading
import time

import numpy as np
import pytest

import glyd

LEVELS = ["fast", "lz", "max", "ultra", 1, 3, 19]


@pytest.mark.parametrize("level", LEVELS)
def test_round_trips_the_corpus_at_every_level(corpus_files, level):
    for path in corpus_files:
        data = path.read_bytes()
        frame = glyd.compress(data, level=level)
        assert glyd.decompressed_size(frame) == len(data)
        assert glyd.decompress(frame) == data, path


def test_empty_and_tiny_inputs():
    for data in (b"", b"a", b"ab" * 3):
        assert glyd.decompress(glyd.compress(data)) == data


@pytest.mark.parametrize(
    "wrap",
    [bytes, bytearray, memoryview, lambda b: np.frombuffer(b, dtype=np.uint8), lambda b: array.array("B", b)],
)
def test_takes_every_buffer_type(wrap):
    data = b"2024-01-01 INFO service started on port 8080\n" * 500
    frame = glyd.compress(wrap(data), threads=1)
    assert glyd.decompress(wrap(frame)) == data


def test_refuses_non_buffers_and_strided_views():
    with pytest.raises(TypeError, match="buffer protocol"):
        glyd.compress("text is not bytes")
    strided = np.arange(100, dtype=np.uint8)[::2]
    with pytest.raises(ValueError, match="contiguous"):
        glyd.compress(strided)


def test_bad_level_is_a_value_error():
    with pytest.raises(ValueError, match="unknown level"):
        glyd.compress(b"x", level="maximal")
    with pytest.raises(ValueError, match="unknown level"):
        glyd.compress(b"x", level=42)


def test_truncated_and_garbage_input_raise_corrupt_error(corpus_files):
    data = corpus_files[0].read_bytes()
    frame = glyd.compress(data)
    for cut in (0, 1, 8, len(frame) // 2, len(frame) - 1):
        with pytest.raises(glyd.CorruptError):
            glyd.decompress(frame[:cut])
    with pytest.raises(glyd.CorruptError, match="magic|not a glyd"):
        glyd.decompress(b"definitely not a glyd frame" * 4)
    flipped = bytearray(frame)
    flipped[len(flipped) // 2] ^= 0x40
    with pytest.raises(glyd.CorruptError):
        glyd.decompress(flipped)
    assert issubclass(glyd.CorruptError, glyd.GlydError)


def test_max_size_refuses_before_decoding():
    frame = glyd.compress(b"z" * 100_000)
    with pytest.raises(glyd.GlydError, match="max_size"):
        glyd.decompress(frame, max_size=1000)
    assert len(glyd.decompress(frame, max_size=100_000)) == 100_000


def test_the_gil_is_released_while_compressing(corpus_files):
    # While one thread compresses, another keeps running Python: with the GIL held for the
    # whole call it could not count at all until the call returned.
    data = b"".join(p.read_bytes() for p in corpus_files) * 2
    started, done = threading.Event(), threading.Event()
    counts = []

    def count():
        started.wait()
        n = 0
        while not done.is_set():
            n += 1
        counts.append(n)

    t = threading.Thread(target=count)
    t.start()
    started.set()
    begin = time.perf_counter()
    glyd.compress(data, level="ultra", threads=1)
    took = time.perf_counter() - begin
    done.set()
    t.join()
    assert took > 0.05, "the input is too small to tell"
    assert counts[0] > 10_000, f"the other thread counted only {counts[0]} in {took:.2f} s"
