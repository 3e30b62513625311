"""yaad.save / yaad.load: round trips, no pickling, and clear errors on bad files."""

import os
import pickle
import zipfile

import numpy as np
import pytest

import yaad
from yaad.serialization import SerializationError


def test_round_trip_nested(tmp_path):
    obj = {
        "weights": {"w": np.arange(6.0).reshape(2, 3), "z": np.array([1 + 2j], np.complex64)},
        "t": yaad.tensor(np.ones(2, np.float32), requires_grad=True),
        "plain": yaad.tensor(np.arange(3)),
        "numbers": [1, 2.5, 3 - 1j, True, None, "text", (4, 5)],
        7: np.array(True),
        "empty": {},
        "f": float("inf"),
    }
    path = tmp_path / "state.yaad"  # any suffix: used as given
    yaad.save(obj, path)
    assert os.listdir(tmp_path) == ["state.yaad"]
    back = yaad.load(path)
    assert list(back) == list(obj)
    np.testing.assert_array_equal(back["weights"]["w"], obj["weights"]["w"])
    assert back["weights"]["z"].dtype == np.complex64 and back["weights"]["z"][0] == 1 + 2j
    assert isinstance(back["t"], yaad.Tensor) and back["t"].requires_grad
    assert back["t"].dtype == np.float32
    assert isinstance(back["plain"], yaad.Tensor) and not back["plain"].requires_grad
    assert back["numbers"] == [1, 2.5, 3 - 1j, True, None, "text", (4, 5)]
    assert isinstance(back["numbers"][6], tuple) and isinstance(back["numbers"][0], int)
    assert back[7] == np.array(True) and back["empty"] == {} and back["f"] == float("inf")


def test_single_tensor_and_file_object(tmp_path):
    t = yaad.tensor(np.linspace(0, 1, 5))
    with open(tmp_path / "t.npz", "wb") as f:
        yaad.save(t, f)
    with open(tmp_path / "t.npz", "rb") as f:
        back = yaad.load(f)
    np.testing.assert_array_equal(back.data, t.data)
    assert np.load(tmp_path / "t.npz", allow_pickle=False)["a0"].shape == (5,)  # plain npz


def test_model_and_optimizer_state(tmp_path):
    model = yaad.nn.Sequential(yaad.nn.Linear(3, 4, dtype=complex), yaad.nn.Linear(4, 1,
                                                                                   dtype=complex))
    opt = yaad.optim.Adam(model.parameters(), lr=0.01)
    x = np.ones((2, 3))
    for _ in range(2):
        opt.zero_grad()
        out = model(x)
        (out.real ** 2).sum().backward()
        opt.step()
    yaad.save({"model": model.state_dict(), "opt": opt.state_dict()}, tmp_path / "ckpt")
    ckpt = yaad.load(tmp_path / "ckpt")
    model2 = yaad.nn.Sequential(yaad.nn.Linear(3, 4, dtype=complex),
                                yaad.nn.Linear(4, 1, dtype=complex))
    model2.load_state_dict(ckpt["model"])
    opt2 = yaad.optim.Adam(model2.parameters(), lr=1.0)
    opt2.load_state_dict(ckpt["opt"])
    assert opt2.param_groups[0]["betas"] == (0.9, 0.999)
    for m, o in ((model, opt), (model2, opt2)):
        o.zero_grad()
        (m(x).real ** 2).sum().backward()
        o.step()
    for a, b in zip(model.parameters(), model2.parameters()):
        np.testing.assert_array_equal(a.data, b.data)


def test_refuses_what_needs_pickling(tmp_path):
    with pytest.raises(TypeError, match="dtype object"):
        yaad.save({"bad": np.array([{}, 1], dtype=object)}, tmp_path / "x")
    with pytest.raises(TypeError, match="set"):
        yaad.save({"bad": {1, 2}}, tmp_path / "x")
    with pytest.raises(TypeError, match="keys must be str or int"):
        yaad.save({(1, 2): 3}, tmp_path / "x")
    assert not os.path.exists(tmp_path / "x")  # nothing half-written


def test_bad_files_raise_clear_errors(tmp_path):
    good = tmp_path / "good.npz"
    yaad.save({"w": np.arange(1000.0)}, good)
    raw = good.read_bytes()

    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(raw[: len(raw) // 2])
    tampered = tmp_path / "tampered.npz"
    data = bytearray(raw)
    data[len(raw) // 3] ^= 0xFF  # inside the array's bytes: the CRC no longer matches
    tampered.write_bytes(bytes(data))
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    pickled = tmp_path / "evil.pkl"
    pickled.write_bytes(pickle.dumps({"w": np.ones(2)}))
    foreign = tmp_path / "foreign.npz"
    np.savez(foreign, w=np.ones(2))
    single = tmp_path / "single.npy"
    np.save(single, np.ones(2))

    for path in (truncated, tampered, text, pickled, foreign, single):
        with pytest.raises(SerializationError) as info:
            yaad.load(path)
        assert str(path) in str(info.value), str(info.value)
        assert isinstance(info.value, ValueError)
    with pytest.raises(SerializationError, match="not one written by yaad.save"):
        yaad.load(foreign)
    with pytest.raises(FileNotFoundError, match="missing"):
        yaad.load(tmp_path / "missing.npz")


def test_corrupt_header(tmp_path):
    path = tmp_path / "bad_header.npz"
    with zipfile.ZipFile(path, "w") as z:
        with z.open("__yaad__.npy", "w") as f:
            np.lib.format.write_array(f, np.array('{"format": "yaad-npz", "tree": {"array": 3}'))
    with pytest.raises(SerializationError, match="header"):
        yaad.load(path)
    with zipfile.ZipFile(path, "w") as z:
        with z.open("__yaad__.npy", "w") as f:
            np.lib.format.write_array(f, np.array('{"format": "yaad-npz", "tree": {"array": 3}}'))
    with pytest.raises(SerializationError, match="missing array"):
        yaad.load(path)


def _with_header(path, header: str, arrays=()):
    """A zip written as yaad.save would, but with the given header text."""
    with zipfile.ZipFile(path, "w") as z:
        with z.open("__yaad__.npy", "w") as f:
            np.lib.format.write_array(f, np.array(header))
        for i, a in enumerate(arrays):
            with z.open(f"a{i}.npy", "w") as f:
                np.lib.format.write_array(f, a)


@pytest.mark.parametrize("tree", [
    '{"complex": [1]}',  # wrong arity: ValueError from unpacking
    '{"complex": ["a", "b"]}',  # wrong types: TypeError from complex()
    '{"dict": [[[1, 2], 3]]}',  # a list as a key: TypeError (unhashable)
    '{"dict": [["k"]]}',  # a pair without a value: ValueError
    '{"list": 5}',  # not iterable: TypeError
    '{"array": 0, "tensor": true}',  # requires_grad on an int array: TypeError
    '{"array": 0, "tensor": "yes"}',  # a flag that is not a bool
    '{"list": [' * 100000 + ']}' * 100000,  # nesting past the recursion limit
    '[1, 2]',  # a header that is not an object
])
def test_tampered_header_raises_serialization_error_naming_the_file(tmp_path, tree):
    path = tmp_path / "tampered_header.npz"
    header = tree if tree.startswith("[") else '{"format": "yaad-npz", "version": 1, ' \
        f'"tree": {tree}}}'
    _with_header(path, header, [np.arange(3)])
    with pytest.raises(SerializationError) as info:
        yaad.load(path)
    assert str(path) in str(info.value)
    assert "header" in str(info.value)


def test_tensor_refuses_object_arrays_at_the_door():
    for data in (np.array([1.0, None], dtype=object), [1.0, None], [{}, 1]):
        with pytest.raises(TypeError, match="dtype object"):
            yaad.tensor(data)
        with pytest.raises(TypeError, match="dtype object"):
            yaad.Tensor(np.array(data, dtype=object))
    with pytest.raises(TypeError, match="dtype object"):
        yaad.as_tensor(np.array([1.0, None], dtype=object))
    with pytest.raises(TypeError, match="dtype object"):
        yaad.from_numpy(np.array([{}, 1], dtype=object))
