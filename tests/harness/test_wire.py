"""The wire format between the parent and the harness: a request's arrays travel packed in one
file (wire.PACKED); a response's arrays, read by the parent from untrusted hands, never do."""

import numpy as np
import pytest
import torch

from autograder.harness.wire import PACKED, Reader, Writer
from autograder.safe_files import UnsafeFile


def test_a_packed_request_round_trips_every_kind_of_array(tmp_path):
    values = {
        "x": np.arange(12, dtype=np.float32).reshape(3, 4),
        "ids": np.array([[3, 1, 2]], dtype=np.int64),
        "mask": np.tril(np.ones((3, 3), dtype=bool)),
        "scalar": np.float64(2.5),
        "empty": np.zeros((0, 5)),
        "t": torch.arange(6.0).reshape(2, 3),
        "plain": [1, 2.0, "three"],
    }
    writer = Writer(tmp_path / "req", packed=True)
    writer.write_json("request.json", writer.encode(values))
    assert sorted(p.name for p in (tmp_path / "req").iterdir()) == [PACKED, "request.json"]

    reader = Reader(tmp_path / "req", as_tensors=True, packed=True)
    back = reader.decode(reader.read_json("request.json"))
    for key in ("x", "ids", "mask", "empty"):
        assert back[key].dtype == values[key].dtype
        np.testing.assert_array_equal(back[key], values[key])
    assert back["scalar"] == 2.5 and isinstance(back["scalar"], np.floating)
    assert isinstance(back["t"], torch.Tensor)
    torch.testing.assert_close(back["t"], values["t"])
    assert back["plain"] == [1, 2.0, "three"]


def test_each_decode_of_a_packed_array_is_a_fresh_array(tmp_path):
    writer = Writer(tmp_path / "req", packed=True)
    writer.write_json("request.json", writer.encode({"x": np.ones(3)}))
    reader = Reader(tmp_path / "req", packed=True)
    data = reader.read_json("request.json")
    first = reader.decode(data)["x"]
    first[:] = 7.0  # a student's function writing into its input
    np.testing.assert_array_equal(reader.decode(data)["x"], np.ones(3))


def test_the_parent_never_reads_a_packed_file_a_response_names(tmp_path):
    """A response is the student's: "#0" there is an ordinary (missing) array name."""
    folder = tmp_path / "answers" / "lookup" / "000_00"
    writer = Writer(folder, packed=True)  # as if the sandbox had forged a packed response
    writer.write_json("response.json", {"value": writer.encode(np.ones(3))})
    reader = Reader(folder, root=tmp_path / "answers")
    with pytest.raises(UnsafeFile):
        reader.decode(reader.read_json("response.json"))
