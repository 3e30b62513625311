"""Every differentiable op in ``yaad.registry``: HIPS autograd's protocol, against finite
differences and against JAX.

Each op's row in ``tests/op_cases/`` gives, by ``second=`` (``SECOND`` here: op name ->
:class:`~tests.op_cases.Second`), inputs for its second derivatives (real, and complex
where the op is defined there; an elementwise row draws them from its domains). Each case is
checked:

- entry by entry, gradient and forward mode against finite differences (``gradcheck``);
- by HIPS autograd's protocol (``yaad.testing.check_grads``, modes fwd and rev, order 2):
  JVP and VJP along random directions against finite differences, then jvp and vjp of
  the JVP (as a function of point and tangent) and of the VJP (as a function of point and
  cotangent, so each VJP is differentiated with respect to its cotangent);
- against JAX: the same six quantities (jvp, vjp, jvp of jvp, vjp of jvp, jvp of vjp,
  vjp of vjp) along the same directions, JAX's VJPs conjugated to yaad's convention
  (``conj(vjp_jax(conj(u)))``, docs/complex.md). The row's ``jax=`` names JAX's function
  where its name differs; ``no_jax=`` says why JAX lacks it, and ``jax_real_only=``,
  ``jax_skip=``, ``jax_only_in=`` say (with reasons) which cases or inputs JAX cannot
  differentiate. JAX's values are stored in ``data/jax_second_order.npz``
  (``JAX_REFERENCES``: `make fuzz` recomputes and checks them; a new or changed case is
  computed by JAX on the spot).

The op names come from a fresh interpreter (``import yaad`` and read the registry), so an
op added anywhere in the library shows up here, and one without a case (or without a JAX
twin or a reason) fails: give its row ``second=``. An op without a VJP rule must say why
in its row (``no_rule=``; ``NO_GRADIENT`` for an elementwise op).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import yaad
from tests.op_cases import CASES, RULE_TERMS, fixed, no_rule_table, second_order_table
from tests.support.reliability import long_only
from yaad import func as F
from yaad.core.op import registry
from yaad.testing import GradcheckError, check_grads, gradcheck


def _builtin_ops() -> dict[str, bool]:
    """The library's ops, each with whether it has a VJP rule."""
    # A fresh process: ops that tests declare for themselves are not the library's.
    code = ("import json, yaad; from yaad.core.op import registry; print(json.dumps({"
            "n: any(v is not None for v in s.vjps) for n, s in registry.items()}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


ALL_BUILTIN = _builtin_ops()
BUILTIN = sorted(n for n, differentiable in ALL_BUILTIN.items()
                 if differentiable and n not in RULE_TERMS)


def test_rule_terms_are_ops_of_the_library():
    assert set(RULE_TERMS) <= set(ALL_BUILTIN)


# Every op's second-order entry (its cases and JAX's twin), from its row in tests/op_cases/.
SECOND = second_order_table()

# The library's ops without a VJP rule, and why none is due (the rows' no_rule=). Any other
# op without one fails test_every_op_without_a_rule_is_listed.
NOT_DIFFERENTIABLE = no_rule_table()


def build(name, fn):
    """The cases of op ``name`` with ``fn`` in the op's place (yaad's op or its JAX twin):
    the same inputs for every ``fn`` (drawn from the rng reseeded for the op)."""
    fixed.reseed(name)
    return SECOND[name].cases(fn)


def _all_cases(names=None):
    """The cases of the ops ``names`` (default: the library's) as test parameters."""
    params = []
    for name in BUILTIN if names is None else names:
        if name not in SECOND or name not in registry:
            continue
        for k, (f, inputs, opts) in enumerate(build(name, registry[name].fn)):
            kind = "complex" if any(np.iscomplexobj(x) for x in inputs) else "real"
            params.append(pytest.param(name, k, f, inputs, opts, id=f"{name}-{k}-{kind}"))
    return params


CASE_PARAMS = _all_cases()


# ---- JAX's twin of each op -----------------------------------------------------------------


def jax_twin(name):
    """JAX's function for op ``name`` (its row's ``jax=``, else found by the op's name), or
    None."""
    import jax.numpy as jnp
    import jax.scipy.linalg as jsl
    import jax.scipy.special as jsp

    twin = SECOND[name].jax if name in SECOND else None
    if isinstance(twin, str):  # a dotted name: "jax.nn.relu"
        module, _, attr = twin.rpartition(".")
        return getattr(importlib.import_module(module), attr)
    if twin is not None:
        return twin
    if name.startswith("linalg."):
        short = name.removeprefix("linalg.")
        return getattr(jnp.linalg, short, None) or getattr(jsl, short, None)
    if name.startswith("fft."):
        return getattr(jnp.fft, name.removeprefix("fft."), None)
    return getattr(jnp, name, None) or getattr(jsp, name, None)


def _as_list(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


def _cotangent(out, leaves):
    """``leaves`` with the structure of ``out`` (a tuple, a namedtuple, a list or one leaf)."""
    if not isinstance(out, (tuple, list)):
        return leaves[0]
    return type(out)._make(leaves) if hasattr(out, "_make") else type(out)(leaves)


def _yaad_jvp(f, xs, ts):
    return _as_list(F.jvp(f, tuple(xs), tuple(ts))[1])


def _yaad_vjp(f, xs, us):
    out, pullback = F.vjp(f, *xs)
    return list(pullback(_cotangent(out, us)))


def _jax_jvp(f, xs, ts):
    import jax

    return _as_list(jax.jvp(f, tuple(xs), tuple(ts))[1])


def _jax_vjp(f, xs, us):
    import jax
    import jax.numpy as jnp

    # yaad's VJP is conj(JAX's VJP of the conjugate cotangent)
    out, pullback = jax.vjp(f, *xs)
    return [jnp.conj(g) for g in pullback(_cotangent(out, [jnp.conj(u) for u in us]))]


PROBES = ("jvp", "vjp", "jvp of jvp", "vjp of jvp", "jvp of vjp", "vjp of vjp")


def probes(jvp, vjp, f, xs, d, what=PROBES):
    """The derivatives HIPS's order-2 check looks at (those named in ``what``), along the
    directions ``d``."""
    n = len(xs)

    def f_jvp(*a):
        return tuple(jvp(f, a[:n], a[n:]))

    def f_vjp(*a):
        return tuple(vjp(f, a[:n], a[n:]))

    rules = {
        "jvp": lambda: jvp(f, xs, d["v"]), "vjp": lambda: vjp(f, xs, d["u"]),
        "jvp of jvp": lambda: jvp(f_jvp, xs + d["v"], d["dx"] + d["dv"]),
        "vjp of jvp": lambda: vjp(f_jvp, xs + d["v"], d["c_jvp"]),
        "jvp of vjp": lambda: jvp(f_vjp, xs + d["u"], d["dx"] + d["du"]),
        "vjp of vjp": lambda: vjp(f_vjp, xs + d["u"], d["c_vjp"]),
    }
    return {w: rules[w]() for w in what}


def _only(f, inputs, keep):
    """``f`` as a function of the inputs at positions ``keep`` (the others held at their
    values in ``inputs``), and those inputs."""
    def g(*xs):
        args = list(inputs)
        for i, x in zip(keep, xs):
            args[i] = x
        return f(*args)

    return g, tuple(inputs[i] for i in keep)


def _random_like(r, x):
    x = np.asarray(x)
    out = r.standard_normal(x.shape)
    return out + 1j * r.standard_normal(x.shape) if x.dtype.kind == "c" else out


def directions(f, xs, seed=0):
    r = np.random.default_rng(seed)
    outs = [np.asarray(o.data if isinstance(o, yaad.Tensor) else o)
            for o in _as_list(f(*[yaad.tensor(x) for x in xs]))]
    return {"v": [_random_like(r, x) for x in xs], "u": [_random_like(r, o) for o in outs],
            "dx": [_random_like(r, x) for x in xs], "dv": [_random_like(r, x) for x in xs],
            "du": [_random_like(r, o) for o in outs],
            "c_jvp": [_random_like(r, o) for o in outs],
            "c_vjp": [_random_like(r, x) for x in xs]}


def _jax_cases(case_params=None):
    """The cases of ``case_params`` (default: every case) that JAX runs."""
    params = []
    for p in CASE_PARAMS if case_params is None else case_params:
        name, k, _, inputs, _ = p.values
        complex_case = any(np.iscomplexobj(x) for x in inputs)
        s = SECOND[name]
        if s.no_jax or k in s.jax_skip or (complex_case and s.jax_real_only):
            continue
        params.append(pytest.param(name, k, id=p.id))
    return params


JAX_PARAMS = _jax_cases()


@pytest.mark.parametrize("name", BUILTIN)
def test_every_op_has_a_case(name):
    assert name in SECOND, (
        f"op '{name}' is in yaad.registry but has no second-order cases: give its row in "
        f"tests/op_cases/ (elementwise.py for an elementwise op, else the module of its "
        f"family) second= with inputs for it (real, and complex where it is defined) so "
        f"its second derivatives and forward mode are checked")
    kinds = {any(np.iscomplexobj(x) for x in inputs) for _, inputs, _ in build(
        name, registry[name].fn)}
    assert kinds, f"op '{name}' has no second-order cases: its row's second= gives none"


@pytest.mark.parametrize("name", BUILTIN)
def test_every_op_has_a_jax_twin_or_a_reason(name):
    assert (name in SECOND and SECOND[name].no_jax) or jax_twin(name) is not None, (
        f"op '{name}' has no JAX twin: in its row of tests/op_cases/ name JAX's function "
        f"with jax=, or say why JAX lacks it with no_jax= (an elementwise Row's fields; "
        f"Second(cases, jax=...) in a case's second=)")


def test_every_op_without_a_rule_is_listed():
    without = {n for n, differentiable in ALL_BUILTIN.items() if not differentiable}
    assert without - set(NOT_DIFFERENTIABLE) == set(), (
        "ops without a VJP rule and without a reason (NOT_DIFFERENTIABLE: no_rule= in their "
        "rows of tests/op_cases/, NO_GRADIENT for an elementwise op): give them rules (and "
        "second-order cases), or say why none is due")
    assert set(NOT_DIFFERENTIABLE) - without == set(), (
        "no_rule= (NOT_DIFFERENTIABLE) names ops that are differentiable or gone: remove it")


def test_builtin_ops_are_found():
    # The fresh interpreter sees the same library ops as this one.
    assert {"sin", "matmul", "sum", "getitem", "alias"} <= set(BUILTIN)
    assert set(BUILTIN) <= set(registry)


@pytest.mark.parametrize("name, k, f, inputs, opts", CASE_PARAMS)
def test_forward_mode(name, k, f, inputs, opts):
    opts = {key: v for key, v in opts.items() if key != "order"}
    assert gradcheck(f, inputs, check_forward_ad=True, **opts)


def _off_by(f, off):
    """``f`` with every derivative multiplied by ``1 + off`` (the values unchanged)."""
    def g(*xs):
        out = f(*xs)
        outs = [o + off * (o - o.detach()) if isinstance(o, yaad.Tensor) else o
                for o in _as_list(out)]
        return _cotangent(out, outs)

    return g


@pytest.mark.parametrize("name, k, f, inputs, opts", CASE_PARAMS)
def test_default_tolerance_catches_a_rule_off_by_2e_4(name, k, f, inputs, opts):
    # gradcheck's default tolerance resolves a relative error of 2e-4 at every case (with
    # the right rules the cases pass test_forward_mode); where the derivative is 0 at every
    # input (the row's zero: nothing for a factor to change), it is 0
    if k in SECOND[name].zero:
        out, pullback = F.vjp(f, *inputs)
        grads = pullback(_cotangent(out, [np.ones_like(o) for o in _as_list(out)]))
        assert all(not np.any(g) for g in _as_list(grads))
        return
    with pytest.raises(GradcheckError, match="gradient differs"):
        gradcheck(_off_by(f, 2e-4), inputs)


@pytest.mark.parametrize("name, k, f, inputs, opts", CASE_PARAMS)
def test_hips_protocol(name, k, f, inputs, opts):
    assert check_grads(f, inputs, modes=("fwd", "rev"), **{"order": 2, **opts})


# JAX's values for every JAX case, computed by JAX and stored: JAX evaluated op by op
# compiles each primitive for each shape and dtype, minutes of CPU for all cases, so CI
# reads them from this file. A case that is new or changed (its fingerprint: inputs,
# directions, probes) is computed by JAX on the spot; `make fuzz` recomputes them all and
# checks the file. Rewrite it with `python tests/ops/test_registry_second_order.py`.
JAX_REFERENCES = Path(__file__).parents[1] / "data" / "jax_second_order.npz"


def _jax_setup(name, k):
    """Case ``k`` of op ``name`` for the comparison: yaad's function, JAX's, the inputs,
    the directions, the probes, and the fingerprint of all but the functions."""
    f, inputs, opts = build(name, registry[name].fn)[k]
    f_jax = build(name, jax_twin(name))[k][0]
    only_in = SECOND[name].jax_only_in
    if only_in:
        f, _ = _only(f, inputs, only_in[0])
        f_jax, inputs = _only(f_jax, inputs, only_in[0])
    d = directions(f, inputs)
    what = PROBES[:2] if opts.get("order", 2) == 1 else PROBES
    h = hashlib.sha256(repr(what).encode())
    for a in list(inputs) + [a for key in sorted(d) for a in d[key]]:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype}{a.shape}".encode() + a.tobytes())
    return f, f_jax, inputs, d, what, h.hexdigest()[:16]


def _jax_values(f_jax, inputs, d, what):
    """JAX's probes, computed now."""
    import jax
    import jax.numpy as jnp

    # Op by op (each primitive compiled once, for all cases) rather than jitted: an XLA
    # compilation per case and transform would cost more.
    with jax.enable_x64(True), jax.disable_jit():
        got = probes(_jax_jvp, _jax_vjp, f_jax, [jnp.asarray(x) for x in inputs],
                     {key: [jnp.asarray(a) for a in v] for key, v in d.items()}, what)
    return {w: [np.asarray(a) for a in v] for w, v in got.items()}


_stored_cache: dict = {}


def _stored_jax_values() -> dict:
    """``{(case id, fingerprint): {probe: [arrays]}}`` from JAX_REFERENCES (one flat
    float64 array of all values, complex ones as pairs, and an index in JSON)."""
    if not _stored_cache and JAX_REFERENCES.exists():
        with np.load(JAX_REFERENCES) as data:
            flat, index = data["values"], json.loads(str(data["index"]))
        for case, fingerprint, what, dtype, shape, start in index["arrays"]:
            dtype = np.dtype(dtype)
            size = int(np.prod(shape)) * (2 if dtype.kind == "c" else 1)
            a = flat[start:start + size].view(dtype).reshape(shape)
            entry = _stored_cache.setdefault((case, fingerprint), {})
            entry.setdefault(what, []).append(a)
    return _stored_cache


def _assert_close(got, expected, message):
    for what in got:
        assert len(got[what]) == len(expected[what]), f"{message}: {what}"
        for j, (a, b) in enumerate(zip(got[what], expected[what])):
            a = np.asarray(a.data if isinstance(a, yaad.Tensor) else a)
            scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10 * scale,
                                       err_msg=f"{message}: {what}, output {j}")


@pytest.mark.parametrize("name, k", JAX_PARAMS)
def test_against_jax(name, k, request):
    f, f_jax, inputs, d, what, fingerprint = _jax_setup(name, k)
    ours = probes(_yaad_jvp, _yaad_vjp, f, list(inputs), d, what)
    case = request.node.callspec.id
    theirs = _stored_jax_values().get((case, fingerprint))
    if theirs is None or set(theirs) != set(what):
        theirs = _jax_values(f_jax, inputs, d, what)
    _assert_close(ours, theirs, f"{name}, against JAX")


def assert_stored(p, fingerprint):
    """Raise unless JAX's values of case ``p`` (with its inputs' ``fingerprint``) are stored."""
    assert (p.id, fingerprint) in _stored_jax_values(), (
        f"{p.id}: no stored JAX values; run python tests/ops/test_registry_second_order.py "
        f"(it writes tests/data/jax_second_order.npz)")


@long_only
def test_stored_jax_values_are_jax_values_fuzz():
    # every stored value recomputed by JAX; none missing, none left over
    stored = _stored_jax_values()
    seen = set()
    for p in JAX_PARAMS:
        _, f_jax, inputs, d, what, fingerprint = _jax_setup(*p.values)
        assert_stored(p, fingerprint)
        _assert_close(_jax_values(f_jax, inputs, d, what), stored[p.id, fingerprint],
                      f"{p.id}, stored against JAX now")
        seen.add((p.id, fingerprint))
    assert set(stored) == seen, f"stored values of no case: {sorted(set(stored) - seen)}"


def write_jax_references() -> None:
    """Compute JAX's values of every JAX case and store them in JAX_REFERENCES."""
    import jax

    index, parts, start = [], [], 0
    for p in JAX_PARAMS:
        _, f_jax, inputs, d, what, fingerprint = _jax_setup(*p.values)
        for w, values in _jax_values(f_jax, inputs, d, what).items():
            for a in values:
                a = np.asarray(a, dtype=np.complex128 if a.dtype.kind == "c" else np.float64)
                index.append((p.id, fingerprint, w, a.dtype.str, a.shape, start))
                parts.append(a.reshape(-1).view(np.float64))
                start += parts[-1].size
    JAX_REFERENCES.parent.mkdir(exist_ok=True)
    np.savez_compressed(JAX_REFERENCES, values=np.concatenate(parts),
                        index=np.array(json.dumps({"jax": jax.__version__, "arrays": index})))


def _complex_case(p):
    return any(np.iscomplexobj(x) for x in p.values[3])


def test_every_op_defined_on_complex_numbers_has_a_complex_case():
    # the rows' dtypes say which ops take complex inputs (their NumPy oracle does)
    takes_complex = set()
    for c in CASES.values():
        if c.grad != "none" and any(np.dtype(d).kind == "c" for d in c.dtypes):
            takes_complex |= set(c.covers) | ({c.op_name} if c.op_name else set())
    with_case = {p.values[0] for p in CASE_PARAMS if _complex_case(p)}
    missing = sorted((takes_complex & set(BUILTIN)) - with_case)
    assert not missing, f"ops defined on complex numbers without a complex case: {missing}"


def test_counts():
    # The closing note of issue 11 quotes these (238 ops: 199 differentiable, 39 listed in
    # NOT_DIFFERENTIABLE; 331 cases of which 137 complex; 285 cases of 181 ops compared
    # with JAX); they must not shrink unnoticed.
    complex_cases = sum(_complex_case(p) for p in CASE_PARAMS)
    assert len(BUILTIN) >= 199 and len(CASE_PARAMS) >= 331 and complex_cases >= 137
    assert len(JAX_PARAMS) >= 285 and len({p.values[0] for p in JAX_PARAMS}) >= 181


if __name__ == "__main__":
    write_jax_references()
