"""yaad.save / yaad.load: round trips, no pickling, and clear errors on bad files."""

import collections
import io
import os
import pickle
import zipfile
from typing import NamedTuple

import numpy as np
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import yaad
from tests.support.reliability import fuzz_settings
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
    '{"array": 0, "scalar": true}',  # a NumPy scalar entry that is not 0-d
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


# ---- round trips: every dtype, 0-d, empty and non-contiguous, bit for bit -------------

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
          np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128]
LAYOUTS = ["C", "F", "strided", "reversed", "transposed"]


@st.composite
def saved_arrays(draw):
    """An array of any dtype and shape (0-d and empty included), any bit pattern (NaN
    payloads, signed zeros, subnormals), in one of several memory layouts."""
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    shape = tuple(draw(st.lists(st.integers(0, 3), max_size=3)))
    layout = draw(st.sampled_from(LAYOUTS))
    full = shape + (2,) if layout == "strided" else shape
    n = int(np.prod(full, dtype=int))
    raw = draw(st.binary(min_size=n * dtype.itemsize, max_size=n * dtype.itemsize))
    a = np.frombuffer(raw, dtype=np.uint8 if dtype == np.bool_ else dtype).copy()
    a = (a % 2).astype(bool) if dtype == np.bool_ else a
    a = a.reshape(full)
    if layout == "F":
        a = np.asfortranarray(a)
    elif layout == "strided":
        a = a[..., 0]
    elif layout == "reversed":
        a = a[::-1] if a.ndim else a
    elif layout == "transposed":
        a = a.T
    return a


@st.composite
def saved_leaves(draw):
    """A NumPy array, a tensor (requiring grad or not) or a NumPy scalar."""
    a = draw(saved_arrays())
    kind = draw(st.sampled_from(["array", "tensor", "scalar"]))
    if kind == "scalar":
        return a.reshape(-1)[0] if a.size else np.zeros((), a.dtype)[()]
    if kind == "tensor":
        return yaad.tensor(a, requires_grad=a.dtype.kind in "fc" and draw(st.booleans()))
    return a


def assert_same_leaf(back, leaf, where="the object"):
    """Same type, shape, dtype, bytes and requires_grad."""
    assert type(back) is type(leaf), (where, type(back), type(leaf))
    if isinstance(leaf, yaad.Tensor):
        assert back.requires_grad == leaf.requires_grad, where
        back, leaf = back.data, leaf.data
    assert back.shape == leaf.shape and back.dtype == leaf.dtype, (where, back, leaf)
    assert np.asarray(back).tobytes() == np.asarray(leaf).tobytes(), (where, back, leaf)


def assert_same(back, obj, where="the object"):
    """``back`` equals ``obj``: containers by structure, arrays bit for bit."""
    if isinstance(obj, (yaad.Tensor, np.ndarray, np.generic)):
        assert_same_leaf(back, obj, where)
    elif isinstance(obj, dict):
        assert type(back) is type(obj) and list(back) == list(obj), where
        for k in obj:
            assert_same(back[k], obj[k], f"{where}[{k!r}]")
    elif isinstance(obj, (list, tuple)):
        assert type(back) is type(obj) and len(back) == len(obj), where
        for i, (b, o) in enumerate(zip(back, obj)):
            assert_same(b, o, f"{where}[{i}]")
    else:
        assert type(back) is type(obj) and (back == obj or back != back), (where, back, obj)


def round_trip(obj):
    buf = io.BytesIO()
    yaad.save(obj, buf)
    buf.seek(0)
    return yaad.load(buf)


@given(st.lists(saved_leaves(), min_size=1, max_size=4), st.booleans())
@fuzz_settings(200, 5000)
def test_round_trip_keeps_shape_dtype_bits_and_requires_grad(leaves, nested):
    obj = {"leaves": leaves, "pair": (leaves[0], [leaves[-1]])} if nested else leaves[0]
    note(repr(obj))
    assert_same(round_trip(obj), obj)


def test_round_trip_covers_every_dtype_and_the_edge_shapes():
    """The cases the property test is about, each once, named (14 dtypes x 4 shapes)."""
    for dtype in DTYPES:
        for a in (np.ones((), dtype), np.ones((0, 3), dtype), np.ones((3, 4), dtype)[:, ::2],
                  np.asfortranarray(np.ones((2, 3), dtype))):
            for leaf in (a, yaad.tensor(a), a.reshape(-1)[0] if a.size else a[()]):
                assert_same(round_trip(leaf), leaf)
            if a.dtype.kind in "fc":
                t = yaad.tensor(a, requires_grad=True)
                assert_same(round_trip(t), t)
    # (0-d arrays came back with shape (1,): np.ascontiguousarray makes at least 1-d)
    assert round_trip(np.array(2.5)).shape == () and round_trip(np.float32(2.5)).dtype == \
        np.float32


def test_other_libraries_arrays_are_refused_naming_them():
    import array_api_strict
    import jax.numpy as jnp
    import torch

    for x, name in ((torch.ones(2), "torch.Tensor"), (jnp.ones(2), "jax"),
                    (array_api_strict.ones(2), "array_api_strict")):
        with pytest.raises(TypeError, match=f"another library's array \\({name}"):
            yaad.save({"w": x}, io.BytesIO())
    t = yaad.tensor(array_api_strict.ones(2))
    with pytest.raises(TypeError, match="tensor on backend array_api_strict.*t.to\\('numpy'\\)"):
        yaad.save([t], io.BytesIO())


# ---- modules, optimizers and schedulers ---------------------------------------------------


class _Scalar(yaad.nn.Module):
    """A model with a 0-d parameter, a 0-d buffer and a layer."""

    def __init__(self, dtype):
        super().__init__()
        self.scale = yaad.nn.Parameter(np.array(1.5, dtype))
        self.register_buffer("count", np.array(3, np.int64))
        self.layer = yaad.nn.Linear(3, 2, dtype=dtype)

    def forward(self, x):
        return self.scale * self.layer(x)


OPTIMIZERS = [
    lambda ps: yaad.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
    lambda ps: yaad.optim.Adam(ps, lr=0.01, amsgrad=True),
    lambda ps: yaad.optim.AdamW(ps, lr=0.01),
    lambda ps: yaad.optim.RMSprop(ps, lr=0.01, momentum=0.5, centered=True),
    lambda ps: yaad.optim.Adagrad(ps, lr=0.1),
]
SCHEDULERS = [
    lambda o: yaad.optim.lr_scheduler.StepLR(o, step_size=2, gamma=0.5),
    lambda o: yaad.optim.lr_scheduler.ExponentialLR(o, gamma=0.9),
    lambda o: yaad.optim.lr_scheduler.CosineAnnealingLR(o, T_max=5, eta_min=1e-3),
]


@given(st.sampled_from([np.float32, np.float64, np.complex64, np.complex128]),
       st.integers(0, len(OPTIMIZERS) - 1), st.integers(0, len(SCHEDULERS) - 1),
       st.integers(1, 3))
@fuzz_settings(20, 500)
def test_model_optimizer_and_scheduler_resume_bit_for_bit(dtype, k_opt, k_sched, steps):
    x = np.linspace(-1, 1, 6).reshape(2, 3).astype(dtype)

    def train(model, opt, sched, n):
        for _ in range(n):
            opt.zero_grad()
            out = model(x)
            yaad.sum(out.real ** 2 + out.imag ** 2 if np.iscomplexobj(out.data) else
                     out ** 2).backward()
            opt.step()
            sched.step()

    model = _Scalar(dtype)
    opt = OPTIMIZERS[k_opt](model.parameters())
    sched = SCHEDULERS[k_sched](opt)
    train(model, opt, sched, steps)
    state = {"model": model.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict()}
    back = round_trip(state)
    assert_same(back, state)

    model2 = _Scalar(dtype)
    model2.load_state_dict(back["model"])
    opt2 = OPTIMIZERS[k_opt](model2.parameters())
    opt2.load_state_dict(back["opt"])
    sched2 = SCHEDULERS[k_sched](opt2)
    sched2.load_state_dict(back["sched"])
    assert_same(model2.state_dict(), model.state_dict())
    train(model, opt, sched, 2)
    train(model2, opt2, sched2, 2)
    assert_same(model2.state_dict(), model.state_dict())
    assert_same(opt2.state_dict(), opt.state_dict())
    assert sched2.get_last_lr() == sched.get_last_lr()
    assert model2.scale.requires_grad and model2.scale.shape == ()


def test_a_tensor_saved_twice_loads_as_one_object_as_in_pytorch():
    # Tied weights ({'embed': w, 'out': w}, a list holding one array twice) came back as
    # separate copies: an update through one no longer reached the other. torch.load
    # keeps the identity; so does yaad.load now (and the file holds the data once).
    import torch

    w = yaad.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    a = np.arange(3, dtype=np.float32)
    tw = torch.arange(6.0).reshape(2, 3).requires_grad_()
    ta = torch.arange(3, dtype=torch.float32)
    got, want = io.BytesIO(), io.BytesIO()
    yaad.save({"embed": w, "out": w, "arrays": [a, (a, w)]}, got)
    torch.save({"embed": tw, "out": tw, "arrays": [ta, (ta, tw)]}, want)
    got.seek(0)
    want.seek(0)
    u, t = yaad.load(got), torch.load(want)
    for d in (u, t):
        assert d["embed"] is d["out"] is d["arrays"][1][1]
        assert d["arrays"][0] is d["arrays"][1][0]
        assert d["embed"].requires_grad
    assert u["embed"].dtype == np.float64 and u["arrays"][0].dtype == np.float32
    np.testing.assert_array_equal(u["embed"].data, t["embed"].detach().numpy())
    with np.load(io.BytesIO(got.getvalue())) as archive:
        assert len([k for k in archive.files if k != "__yaad__"]) == 2


# ---- types: Parameter, OrderedDict, namedtuple, as torch.save/torch.load keep them --------

Pair = collections.namedtuple("Pair", ["first", "second"])


class Point(NamedTuple):
    x: object
    y: object


def _spec(draw, depth):
    """A random structure, as a spec both libraries can build: leaves are tensors (plain or
    Parameter, requiring grad or not), containers dict, OrderedDict, list, tuple and two
    namedtuple classes (collections' and typing's)."""
    kinds = ["tensor", "parameter"] + (
        ["dict", "odict", "list", "tuple", "pair", "point"] if depth < 3 else [])
    kind = draw(st.sampled_from(kinds))
    if kind in ("tensor", "parameter"):
        shape = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
        dtype = draw(st.sampled_from(["float32", "float64"]))
        values = np.arange(int(np.prod(shape, dtype=int)), dtype=dtype).reshape(shape)
        return (kind, values, draw(st.booleans()))
    if kind in ("pair", "point"):
        return (kind, [_spec(draw, depth + 1) for _ in range(2)])
    n = draw(st.integers(0, 3))
    children = [_spec(draw, depth + 1) for _ in range(n)]
    if kind in ("dict", "odict"):
        keys = draw(st.permutations([f"k{i}" for i in range(n)]))
        return (kind, list(zip(keys, children)))
    return (kind, children)


def _build(spec, lib):
    """The object of ``spec`` in yaad (``lib == "yaad"``) or PyTorch."""
    import torch

    kind, *rest = spec
    if kind in ("tensor", "parameter"):
        values, rg = rest
        if lib == "yaad":
            return (yaad.nn.Parameter if kind == "parameter" else yaad.tensor)(
                values.copy(), requires_grad=rg)
        t = torch.tensor(values.copy())
        return torch.nn.Parameter(t, requires_grad=rg) if kind == "parameter" else \
            t.requires_grad_(rg)
    (children,) = rest
    if kind in ("dict", "odict"):
        made = [(k, _build(c, lib)) for k, c in children]
        return collections.OrderedDict(made) if kind == "odict" else dict(made)
    made = [_build(c, lib) for c in children]
    return {"list": list, "tuple": tuple, "pair": lambda m: Pair(*m),
            "point": lambda m: Point(*m)}[kind](made)


def _shape_of(x):
    """The types, keys, requires_grad flags and values of a loaded object, the same for
    yaad's and PyTorch's (``torch.nn.Parameter`` and ``yaad.nn.Parameter`` both read
    "Parameter", tensors "Tensor")."""
    import torch

    if isinstance(x, (yaad.Tensor, torch.Tensor)):
        kind = "Parameter" if isinstance(x, (yaad.nn.Parameter, torch.nn.Parameter)) else "Tensor"
        values = x.detach().numpy() if isinstance(x, torch.Tensor) else x.data
        return (kind, bool(x.requires_grad), str(values.dtype), values.shape, values.tolist())
    if isinstance(x, dict):
        return (type(x).__name__, [(k, _shape_of(v)) for k, v in x.items()])
    return (type(x).__name__, [_shape_of(v) for v in x])


@st.composite
def typed_trees(draw):
    return _spec(draw, 0)


@given(typed_trees())
@fuzz_settings(60, 1000)
def test_round_trip_keeps_parameter_ordereddict_and_namedtuple_types_as_torch(spec):
    import torch

    note(repr(spec))
    ours = _build(spec, "yaad")
    buf = io.BytesIO()
    torch.save(_build(spec, "torch"), buf)
    buf.seek(0)
    with torch.serialization.safe_globals([Pair, Point]):
        theirs = torch.load(buf, weights_only=True)
    back = round_trip(ours)
    assert _shape_of(back) == _shape_of(theirs) == _shape_of(ours)
    assert_same(back, ours)


def test_namedtuple_types_and_their_limits():
    # A namedtuple class is found by module and qualified name among the modules already
    # imported; yaad.load imports nothing and calls no constructor (tuple.__new__).
    back = round_trip({"eig": yaad.linalg.EighResult(yaad.ones(2), 3), "p": Pair(1, (2, 3))})
    assert type(back["eig"]) is yaad.linalg.EighResult and back["eig"].eigenvectors == 3
    assert type(back["p"]) is Pair and back["p"].second == (2, 3)
    assert type(back["p"].second) is tuple

    local = collections.namedtuple("Local", ["a"])  # not found by its name: refused at save
    with pytest.raises(TypeError, match="define the class at module level"):
        round_trip(local(1))


@pytest.mark.parametrize("entry", [
    # an existing callable named as a namedtuple class: refused, never called
    {"module": "os", "name": "system", "fields": [], "items": []},
    {"module": "builtins", "name": "print", "fields": [], "items": []},
    # a module that is not imported: not imported by load
    {"module": "antigravity", "name": "Pair", "fields": ["a"], "items": [1]},
    # the class exists but its fields changed since the file was written
    {"module": __name__, "name": "Pair", "fields": ["first", "third"], "items": [1, 2]},
    {"module": __name__, "name": "Pair.__init__", "fields": [], "items": []},
])
def test_a_tampered_namedtuple_entry_runs_nothing(tmp_path, entry, monkeypatch):
    import json
    import sys

    called = []
    monkeypatch.setattr(os, "system", lambda *a: called.append(a))
    path = tmp_path / "namedtuple.npz"
    _with_header(path, json.dumps({"format": "yaad-npz", "version": 1,
                                   "tree": {"namedtuple": entry}}))
    loaded_before = set(sys.modules)
    with pytest.raises(SerializationError, match="no such class is loaded") as info:
        yaad.load(path)
    assert str(path) in str(info.value) and not called
    assert set(sys.modules) == loaded_before


def test_parameter_flag_in_a_tampered_header(tmp_path):
    path = tmp_path / "parameter.npz"
    _with_header(path, '{"format": "yaad-npz", "version": 1, '
                       '"tree": {"array": 0, "parameter": true}}', [np.arange(3.0)])
    with pytest.raises(SerializationError, match="header"):
        yaad.load(path)


# ---- tensors and views of them, saved together, keep sharing memory (as torch's storage) ---
#
# {'a': t, 'b': t[1:]} was stored as two arrays: after load an in-place change of one no
# longer showed in the other, where torch.load keeps the sharing through the storage. The
# bytes the views reach are stored once now, each view as dtype, shape, strides and offset.

_VIEW_DTYPES = ["float64", "float32", "float16", "int64", "int32", "uint8", "int8", "bool",
                "complex128", "complex64"]
# name -> (the view in yaad/NumPy indexing, the same in torch), for a base of shape (3, 4, 5)
_VIEW_OPS = {
    "rows": (lambda t: t[1:], lambda t: t[1:]),
    "strided": (lambda t: t[:, ::2, 1::3], lambda t: t[:, ::2, 1::3]),
    "element (0-d)": (lambda t: t[2, 1, 3], lambda t: t[2, 1, 3]),
    "transposed": (lambda t: yaad.transpose(t, (2, 0, 1)), lambda t: t.permute(2, 0, 1)),
    "matrix transpose": (lambda t: t[0].T, lambda t: t[0].T),
    "diagonal": (lambda t: yaad.diagonal(t[1]), lambda t: torch_diagonal(t[1])),
    "reshaped": (lambda t: t.reshape(12, 5), lambda t: t.reshape(12, 5)),
    "row of the last plane": (lambda t: t[-1, -1], lambda t: t[-1, -1]),
}


def torch_diagonal(t):
    import torch

    return torch.diagonal(t)


@fuzz_settings(normal=30, long=300)
@given(dtype=st.sampled_from(_VIEW_DTYPES),
       views=st.lists(st.sampled_from(sorted(_VIEW_OPS)), min_size=1, max_size=4, unique=True),
       base_first=st.booleans(), change=st.integers(0, 4))
def test_views_saved_together_keep_sharing_memory_as_in_pytorch(dtype, views, base_first,
                                                                  change):
    import torch

    values = (np.arange(60) % 7).reshape(3, 4, 5).astype(dtype)
    base, tbase = yaad.tensor(values.copy()), torch.from_numpy(values.copy())
    ours = [_VIEW_OPS[v][0](base) for v in views]
    theirs = [_VIEW_OPS[v][1](tbase) for v in views]
    ours, theirs = ([base, *ours], [tbase, *theirs]) if base_first else (
        [*ours, base], [*theirs, tbase])
    got, want = io.BytesIO(), io.BytesIO()
    yaad.save({"all": ours}, got)
    torch.save({"all": theirs}, want)
    got.seek(0)
    want.seek(0)
    u, t = yaad.load(got)["all"], torch.load(want)["all"]
    for a, b in zip(u, t):
        assert isinstance(a, yaad.Tensor) and a.shape == tuple(b.shape)
        assert a.dtype == values.dtype
        np.testing.assert_array_equal(a.data, b.numpy())
    # an in-place change of one shows in every other, as in PyTorch
    i = change % len(u)
    mark = np.ones((), dtype)
    u[i][...] = yaad.tensor(mark)
    t[i][...] = torch.from_numpy(mark.copy())
    for a, b in zip(u, t):
        np.testing.assert_array_equal(a.data, b.numpy())
    # the memory is stored once
    with np.load(io.BytesIO(got.getvalue())) as archive:
        assert len([k for k in archive.files if k != "__yaad__"]) == 1


def test_array_views_negative_strides_and_flags_keep_sharing():
    # NumPy views (negative steps too: torch has none), tensors requiring grad and
    # Parameters, one stored array; and a version counter shared, so that a value saved
    # for backward and changed through the other side is refused at backward
    a = np.arange(12.0).reshape(3, 4)
    w = yaad.nn.Parameter(np.arange(5.0))
    obj = {"a": a, "rev": a[::-1, ::-2], "col": a[:, 1], "w": w, "w_view": w.data[1:],
           "t": yaad.tensor(np.ones(4)), "other": np.zeros(2)}
    obj["t_rev"] = obj["t"][::-1]
    f = io.BytesIO()
    yaad.save(obj, f)
    f.seek(0)
    back = yaad.load(f)
    assert isinstance(back["w"], yaad.nn.Parameter) and back["w"].requires_grad
    back["a"][2, 3] = -1.0
    assert back["rev"][0, 0] == -1.0 and back["col"].shape == (3,)
    back["w_view"][0] = 9.0
    assert back["w"].data[1] == 9.0
    np.testing.assert_array_equal(back["other"], np.zeros(2))
    x = yaad.tensor(np.ones(4), requires_grad=True)
    y = yaad.sum(x * back["t_rev"])
    back["t"][0] = 5.0  # (in place, through the base: t_rev[3] was saved for backward)
    assert back["t_rev"][3] == 5.0
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.backward()


@pytest.mark.parametrize("view", [
    '{"view": 0, "dtype": "<f8", "shape": [2], "strides": [8], "offset": 8}',  # past the end
    '{"view": 0, "dtype": "<f8", "shape": [1], "strides": [8], "offset": -8}',  # before it
    '{"view": 0, "dtype": "<f8", "shape": [2], "strides": [-8], "offset": 0}',  # backwards
    '{"view": 0, "dtype": "<f8", "shape": [2], "strides": [1000000], "offset": 0}',
    '{"view": 0, "dtype": "|O", "shape": [1], "strides": [8], "offset": 0}',  # objects
    '{"view": 0, "dtype": "<f8", "shape": [1.5], "strides": [8], "offset": 0}',
    '{"view": 0, "dtype": "<f8", "shape": [-1], "strides": [8], "offset": 0}',
    '{"view": 0, "dtype": 5, "shape": [1], "strides": [8], "offset": 0}',
    '{"view": 1, "dtype": "<f8", "shape": [1], "strides": [8], "offset": 0}',  # no entry
])
def test_a_tampered_view_reaches_no_other_memory(tmp_path, view):
    path = tmp_path / "tampered_view.npz"
    _with_header(path, f'{{"format": "yaad-npz", "version": 2, "tree": {view}}}',
                 [np.zeros(16, np.uint8)])
    with pytest.raises(SerializationError) as info:
        yaad.load(path)
    assert str(path) in str(info.value)
    # the same entry inside its bounds loads (a view of the stored bytes)
    good = '{"view": 0, "dtype": "<f8", "shape": [2], "strides": [8], "offset": 0}'
    _with_header(path, f'{{"format": "yaad-npz", "version": 2, "tree": {good}}}',
                 [np.zeros(16, np.uint8)])
    np.testing.assert_array_equal(yaad.load(path), np.zeros(2))


def test_two_equal_views_of_one_tensor_load_as_two_objects_as_in_pytorch():
    # t[1:] taken twice is two tensors sharing memory; yaad.load made them one object (the
    # entries were equal), so their .grad and requires_grad became one. torch.load keeps
    # two; the same view saved twice (one object) still loads as one.
    import torch

    t, tt = yaad.tensor(np.arange(6.0)), torch.arange(6.0)
    one = t[1:]
    got, want = io.BytesIO(), io.BytesIO()
    yaad.save({"a": t[1:], "b": t[1:], "c": one, "d": one, "t": t}, got)
    tone = tt[1:]
    torch.save({"a": tt[1:], "b": tt[1:], "c": tone, "d": tone, "t": tt}, want)
    got.seek(0)
    want.seek(0)
    u, w = yaad.load(got), torch.load(want)
    for x, y in (("a", "b"), ("c", "d"), ("a", "c")):
        assert (u[x] is u[y]) == (w[x] is w[y]), (x, y)
        assert np.shares_memory(u[x].data, u[y].data)
    u["a"][0] = yaad.tensor(-1.0)
    assert u["b"].data[0] == -1.0 and u["t"].data[1] == -1.0
