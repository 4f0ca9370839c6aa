"""glyd.open: binary and text file objects over frames, with the standard library and pandas."""

import io
import os
import shutil
import tarfile

import pandas as pd
import pytest

import glyd


def test_write_then_read_a_path(tmp_path, corpus_files):
    data = corpus_files[0].read_bytes()
    path = tmp_path / "a.glyd"
    with glyd.open(path, "wb", level="max") as f:
        for i in range(0, len(data), 777):
            f.write(data[i : i + 777])
    assert glyd.decompress(path.read_bytes()) == data
    with glyd.open(path) as f:
        assert f.read(10) == data[:10]
        assert f.read() == data[10:]
        assert f.read() == b""


def test_a_path_appears_only_when_complete(tmp_path):
    path = tmp_path / "late.glyd"
    f = glyd.open(path, "wb")
    f.write(b"partial " * 100_000)
    f.flush()
    assert not path.exists(), "a half-written frame must not be visible under its name"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".glyd-")]
    f.close()
    assert path.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".glyd-")]


def test_file_objects_in_and_out(corpus_files):
    data = corpus_files[-1].read_bytes()
    sink = io.BytesIO()
    with glyd.open(sink, "wb") as f:
        f.write(data)
    frame = sink.getvalue()
    assert glyd.decompress(frame) == data
    with glyd.open(io.BytesIO(frame)) as f:
        assert f.read() == data


def test_text_mode_lines(tmp_path):
    lines = [f"line {i}: héllo wörld\n" for i in range(1000)]
    path = tmp_path / "t.glyd"
    with glyd.open(path, "wt", encoding="utf-8") as f:
        f.writelines(lines)
    with glyd.open(path, "rt", encoding="utf-8") as f:
        assert list(f) == lines


def test_copyfileobj_both_ways(tmp_path, corpus_files):
    src = corpus_files[0]
    packed = tmp_path / "c.glyd"
    with open(src, "rb") as i, glyd.open(packed, "wb") as o:
        shutil.copyfileobj(i, o)
    out = tmp_path / "c.out"
    with glyd.open(packed) as i, open(out, "wb") as o:
        shutil.copyfileobj(i, o)
    assert out.read_bytes() == src.read_bytes()


def test_tarfile_streams_through(tmp_path, corpus_files):
    path = tmp_path / "files.tar.glyd"
    with glyd.open(path, "wb") as raw, tarfile.open(fileobj=raw, mode="w|") as tar:
        for p in corpus_files[:4]:
            tar.add(p, arcname=p.name)
    with glyd.open(path) as raw, tarfile.open(fileobj=raw, mode="r|") as tar:
        got = {m.name: tar.extractfile(m).read() for m in tar}
    assert got == {p.name: p.read_bytes() for p in corpus_files[:4]}


def test_pandas_reads_csv_from_a_frame(tmp_path):
    csv = b"id,name,score\n" + b"".join(f"{i},user{i},{i * 0.5}\n".encode() for i in range(5000))
    path = tmp_path / "t.csv.glyd"
    path.write_bytes(glyd.compress(csv))
    df = pd.read_csv(glyd.open(path))
    assert df.shape == (5000, 3)
    assert df["score"].sum() == sum(i * 0.5 for i in range(5000))


def test_closed_files_and_bad_modes(tmp_path):
    path = tmp_path / "x.glyd"
    with glyd.open(path, "wb") as f:
        f.write(b"abc")
    with pytest.raises(ValueError, match="closed"):
        f.write(b"more")
    r = glyd.open(path)
    r.close()
    with pytest.raises(ValueError, match="closed"):
        r.read()
    with pytest.raises(ValueError, match="mode"):
        glyd.open(path, "ab")
    with pytest.raises(FileNotFoundError, match="nowhere.glyd"):
        glyd.open(tmp_path / "nowhere.glyd")


def test_a_truncated_frame_read_as_a_file_raises(tmp_path, corpus_files):
    frame = glyd.compress(corpus_files[0].read_bytes())
    path = tmp_path / "cut.glyd"
    path.write_bytes(frame[: len(frame) // 2])
    with pytest.raises(glyd.CorruptError, match="cut.glyd"):
        with glyd.open(path) as f:
            f.read()
    os.remove(path)
