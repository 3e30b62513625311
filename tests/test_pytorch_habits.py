"""What a PyTorch user types: PyTorch's keywords refused with yaad's (NumPy's) spelling,
``to(dtype)``/``to(device=)`` and ``vmap(in_dims=)`` accepted, and ``functional_call`` /
``stack_module_state`` for per-example gradients of modules, against torch.func.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch
import torch.func

import yaad
from yaad.nn import Linear, Sequential, Tanh, functional_call, stack_module_state


def _functions_with_an_axis() -> list[str]:
    """Every public function of the yaad namespace that takes ``axis=``: ops and plain
    functions."""
    names = []
    for name in dir(yaad):
        f = getattr(yaad, name)
        if name.startswith("_") or not callable(f) or isinstance(f, type):
            continue
        try:
            own = inspect.signature(f).parameters  # (a wrapper's, where it has one)
            if any(p.kind == p.VAR_POSITIONAL for p in own.values()) and isinstance(
                    getattr(f, "op", None), yaad.Op):
                own = inspect.signature(f.op.forward).parameters
        except (TypeError, ValueError):
            continue
        if "axis" in own:
            names.append(name)
    return names


FUNCTIONS_WITH_AN_AXIS = _functions_with_an_axis()


def test_the_functions_with_an_axis_are_found():
    assert len(FUNCTIONS_WITH_AN_AXIS) >= 45, FUNCTIONS_WITH_AN_AXIS
    assert {"sum", "mean", "max", "cumsum", "argmax", "std", "concatenate", "stack", "sort",
            "median", "linspace"} <= set(FUNCTIONS_WITH_AN_AXIS)


@pytest.mark.parametrize("name", FUNCTIONS_WITH_AN_AXIS)
def test_dim_is_refused_with_numpys_name(name):
    x = yaad.tensor(np.random.default_rng(0).uniform(0.5, 1.5, (2, 3)), requires_grad=True)
    with pytest.raises(TypeError) as info:
        getattr(yaad, name)(x, dim=0)
    message = str(info.value)
    f = getattr(yaad, name)
    # (the function's own name: amax is max, concat is concatenate)
    name = f.op.name if isinstance(getattr(f, "op", None), yaad.Op) else f.__name__
    assert message.startswith(f"{name}: unexpected keyword argument 'dim': yaad takes "
                              "NumPy's axis= where PyTorch has dim="), message
    assert "_" + name not in message  # (never the private function behind it)


def test_keepdim_and_the_method_spelling_are_refused_too():
    x = yaad.tensor(np.ones((2, 3)), requires_grad=True)
    with pytest.raises(TypeError, match=r"^mean: unexpected keyword argument 'keepdim': "
                                        r"yaad takes NumPy's keepdims="):
        x.mean(axis=1, keepdim=True)
    with pytest.raises(TypeError, match=r"^sum: .*axis= where PyTorch has dim="):
        x.sum(dim=0)
    assert yaad.sum(x, axis=0, keepdims=True).shape == torch.ones(2, 3).sum(
        dim=0, keepdim=True).shape


@pytest.mark.parametrize("dtype", [np.float32, "float32", torch.float32, np.dtype("float32")])
def test_to_a_dtype_casts_as_pytorch_does(dtype):
    x0 = np.array([0.5, 1.5, -2.0])
    x = yaad.tensor(x0, requires_grad=True)
    y = x.to(dtype)
    assert y.dtype == np.float32 and y.grad_fn is not None
    (y * y).sum().backward()
    t = torch.tensor(x0, requires_grad=True)
    (t.to(torch.float32) ** 2).sum().backward()
    assert x.grad.dtype == np.float64
    np.testing.assert_allclose(x.grad, t.grad.numpy(), rtol=1e-6)


def test_to_takes_pytorchs_keywords():
    x = yaad.tensor(np.ones(2), requires_grad=True)
    assert x.to(device="cpu") is x and x.to("cpu", np.float32).dtype == np.float32
    assert x.to(dtype=np.complex128).dtype == np.complex128
    assert x.to(np.float64) is x
    with pytest.raises(TypeError, match="give the backend once"):
        x.to("cpu", device="cpu")
    with pytest.raises(TypeError, match="two dtypes"):
        x.to(np.float32, dtype=np.float64)


def test_vmap_takes_torch_funcs_in_dims_and_out_dims():
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((4, 3)), rng.standard_normal(3)

    def f(x, y):
        return x * y.sum()

    got = yaad.func.vmap(f, in_dims=(0, None), out_dims=1)(a, b)
    want = torch.func.vmap(f, in_dims=(0, None), out_dims=1)(torch.tensor(a), torch.tensor(b))
    assert got.shape == tuple(want.shape) == (3, 4)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-15)
    with pytest.raises(TypeError, match="not both"):
        yaad.func.vmap(f, in_axes=(0, None), in_dims=(0, None))


# ---- functional_call and stack_module_state ----------------------------------------------

def _pair(seed=0):
    """The same MLP in yaad and in PyTorch."""
    model = Sequential(Linear(3, 5), Tanh(), Linear(5, 2))
    rng = np.random.default_rng(seed)
    for p in model.parameters():
        p.data = rng.standard_normal(p.shape)
    reference = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Tanh(),
                                    torch.nn.Linear(5, 2)).double()
    with torch.no_grad():
        for (_, p), (_, q) in zip(model.named_parameters(), reference.named_parameters()):
            q.copy_(torch.tensor(p.data))
    return model, reference


def test_per_example_gradients_of_a_module_as_torch_func():
    model, reference = _pair()
    rng = np.random.default_rng(2)
    X, Y = rng.standard_normal((7, 3)), rng.standard_normal((7, 2))

    def loss(params, x, y):
        return ((functional_call(model, params, (x,)) - y) ** 2).sum()

    params = {k: v.detach() for k, v in model.named_parameters()}
    got = yaad.func.vmap(yaad.func.grad(loss), in_axes=(None, 0, 0))(params, X, Y)

    def torch_loss(params, x, y):
        return ((torch.func.functional_call(reference, params, (x,)) - y) ** 2).sum()

    tparams = {k: v.detach() for k, v in reference.named_parameters()}
    want = torch.func.vmap(torch.func.grad(torch_loss), in_dims=(None, 0, 0))(
        tparams, torch.tensor(X), torch.tensor(Y))
    assert set(got) == set(want) == {"0.weight", "0.bias", "2.weight", "2.bias"}
    for name in want:
        assert got[name].shape == tuple(want[name].shape) and got[name].dtype == np.float64
        np.testing.assert_allclose(got[name], want[name].numpy(), rtol=1e-12, atol=1e-14)
    # the module's own parameters are back, untouched
    for (_, p), (_, q) in zip(model.named_parameters(), reference.named_parameters()):
        assert isinstance(p, yaad.nn.Parameter)
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())


def test_an_ensemble_by_stack_module_state_as_torch_func():
    models, references = zip(*(_pair(seed) for seed in range(3)))
    params, buffers = stack_module_state(list(models))
    assert params["0.weight"].shape == (3, 5, 3) and params["0.weight"].requires_grad
    x = np.random.default_rng(3).standard_normal((4, 3))

    def run(p, b, x):
        return functional_call(models[0], (p, b), (x,))

    got = yaad.func.vmap(run, in_axes=(0, 0, None))(params, buffers, x)
    tparams, tbuffers = torch.func.stack_module_state(list(references))
    want = torch.func.vmap(lambda p, b, x: torch.func.functional_call(references[0], (p, b),
                                                                      (x,)),
                           in_dims=(0, 0, None))(tparams, tbuffers, torch.tensor(x))
    assert got.shape == tuple(want.shape) == (3, 4, 2)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-13)
    got.sum().backward()  # the stacked parameters are leaves
    want.sum().backward()
    np.testing.assert_allclose(params["2.bias"].grad, tparams["2.bias"].grad.numpy(),
                               rtol=1e-13)


def test_functional_call_ties_weights_refuses_unknown_names_and_restores_on_error():
    layer, other = Linear(2, 2, bias=False), Linear(2, 2, bias=False)
    other.weight = layer.weight  # one parameter under two names
    model = Sequential(layer, other)
    w = yaad.tensor(np.eye(2) * 2.0, requires_grad=True)
    x = np.array([1.0, -1.0])
    out = functional_call(model, {"0.weight": w}, x)
    np.testing.assert_allclose(out.detach().numpy(), 4 * x)  # both layers used w
    untied = functional_call(model, {"0.weight": w}, x, tie_weights=False)
    np.testing.assert_allclose(untied.detach().numpy(),
                               layer.weight.data @ (2 * x))
    with pytest.raises(ValueError, match=r"\['0.wieght'\] are not parameters or buffers"):
        functional_call(model, {"0.wieght": w}, x)
    with pytest.raises(ValueError, match="missing"):
        functional_call(Linear(2, 2), {"weight": w}, x, strict=True)
    original = layer.weight
    with pytest.raises(ValueError):
        functional_call(model, {"0.weight": yaad.tensor(np.ones((3, 3)))}, x)
    assert layer.weight is original


# ---- the false friends of docs/pytorch-map.md: yaad's spelling of PyTorch's meaning ----

A = np.arange(1.0, 7.0).reshape(2, 3) ** 1.5
V = np.array([3.0, 1.0, 4.0, 1.5, 5.0, 9.0, 2.0])


def _v(x):
    return x.detach().numpy() if isinstance(x, (yaad.Tensor, torch.Tensor)) else np.asarray(x)


FALSE_FRIENDS = {  # name: (PyTorch's program, yaad's same-name program, yaad's way)
    "transpose": (lambda: torch.tensor(A).transpose(0, 1), lambda: yaad.tensor(A).transpose(0, 1),
                  lambda: yaad.tensor(A).swapaxes(0, 1)),
    "repeat": (lambda: torch.tensor(A).repeat(2, 1), lambda: yaad.tensor(A).repeat(2, 1),
               lambda: yaad.tile(yaad.tensor(A), (2, 1))),
    "split": (lambda: torch.split(torch.tensor(V), 2), lambda: yaad.split(yaad.tensor(V[:6]), 2),
              lambda: yaad.split(yaad.tensor(V), range(2, len(V), 2))),
    "chunk": (lambda: torch.chunk(torch.tensor(V), 2), None,
              lambda: yaad.array_split(yaad.tensor(V), 2)),
    "std": (lambda: torch.std(torch.tensor(A)), lambda: yaad.std(yaad.tensor(A)),
            lambda: yaad.std(yaad.tensor(A), ddof=1)),
    "var": (lambda: torch.var(torch.tensor(A)), lambda: yaad.var(yaad.tensor(A)),
            lambda: yaad.var(yaad.tensor(A), ddof=1)),
    "median": (lambda: torch.median(torch.tensor(V[:6])), lambda: yaad.median(yaad.tensor(V[:6])),
               lambda: yaad.sort(yaad.tensor(V[:6]))[(6 - 1) // 2]),
    "max along": (lambda: tuple(torch.max(torch.tensor(A), 1)), lambda: yaad.max(yaad.tensor(A), 1),
                  lambda: (yaad.max(yaad.tensor(A), axis=1), yaad.argmax(yaad.tensor(A), axis=1))),
    "max of two": (lambda: torch.max(torch.tensor(A), torch.tensor(A[::-1].copy())), None,
                   lambda: yaad.maximum(yaad.tensor(A), yaad.tensor(A[::-1].copy()))),
    "sort": (lambda: tuple(torch.tensor(V).sort()), lambda: yaad.tensor(V).sort(),
             lambda: (yaad.sort(yaad.tensor(V)), yaad.argsort(yaad.tensor(V)))),
    "size": (lambda: tuple(torch.tensor(A).size()), lambda: yaad.tensor(A).size,
             lambda: yaad.tensor(A).shape),
    "flatten": (lambda: torch.ones(2, 3, 4, dtype=torch.float64).flatten(1), None,
                lambda: yaad.ones((2, 3, 4)).reshape(2, -1)),
    "dtype": (lambda: torch.tensor([1.0]), lambda: yaad.tensor([1.0]),
              lambda: yaad.tensor([1.0], dtype=np.float32)),
}


def _same_value(a, b):
    if isinstance(a, (tuple, list)) or isinstance(b, (tuple, list)):
        if not (isinstance(a, (tuple, list)) and isinstance(b, (tuple, list))
                and len(a) == len(b)):
            return False
        return all(_same_value(x, y) for x, y in zip(a, b))
    x, y = _v(a), _v(b)
    return x.shape == y.shape and x.dtype.itemsize == y.dtype.itemsize and np.allclose(x, y)


@pytest.mark.parametrize("name", FALSE_FRIENDS)
def test_each_false_friend_differs_and_its_yaad_spelling_matches(name):
    torch_program, same_name, yaad_way = FALSE_FRIENDS[name]
    want = torch_program()
    if same_name is not None:  # (None: the same name raises in yaad)
        assert not _same_value(same_name(), want), f"{name}: not a false friend"
    assert _same_value(yaad_way(), want), name
