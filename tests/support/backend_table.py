"""The op-case table (tests/op_cases/elementwise.py) run on another array library's arrays, against
the same calls on NumPy arrays: used by tests/array_api/test_backend_array_api.py (array_api_strict)
and tests/array_api/test_backend_cupy.py (CuPy, where a GPU is present)."""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, Callable

import numpy as np

import yaad
from tests.op_cases import ELEMENTWISE, resolve, row_function, row_inputs
from yaad.core.backend import BackendError


def cases() -> list[tuple[str, str]]:
    """(op name, dtype) for every row: float64, and complex128 where the row is defined."""
    return [(n, d) for n in sorted(ELEMENTWISE) for d in ("float64", "complex128")
            if d == "float64" or ELEMENTWISE[n].complex == "yes"]


def run(name: str, dtype: str, convert: Callable[[Any], Any]) -> tuple:
    """The value, the reverse-mode gradients (for a random cotangent) and the forward-mode
    derivative (all tangents one) of the row's op, on its inputs passed through
    ``convert`` (NumPy arrays to the library's; identity for NumPy)."""
    row = ELEMENTWISE[name]
    xs = row_inputs(row, dtype, np.random.default_rng(0))
    rng = np.random.default_rng(1)
    conv = lambda v: convert(v) if isinstance(v, np.ndarray) else v  # noqa: E731
    row = dataclasses.replace(row, params=tuple(conv(p) for p in row.params),
                              after=tuple(conv(p) for p in row.after))
    f = row_function(row, resolve(row.path or name))
    ts = [yaad.tensor(conv(x), requires_grad=True) for x in xs]
    with np.errstate(all="ignore"):
        out = f(*ts)
        out_dtype = np.dtype(str(out.dtype).rsplit(".", 1)[-1])
        cot = rng.standard_normal(out.shape) + (
            1j * rng.standard_normal(out.shape) if out_dtype.kind == "c" else 0)
        out.backward(gradient=conv(cot.astype(out_dtype)))
        tangents = tuple(conv(np.ones_like(x)) for x in xs)
        _, jvp_out = yaad.func.jvp(f, tuple(conv(x) for x in xs), tangents)
    return out.data, [t.grad for t in ts], jvp_out


def outcome(name: str, dtype: str, convert: Callable[[Any], Any],
            to_numpy: Callable[[Any], np.ndarray], rtol: float = 1e-12,
            atol: float = 1e-12) -> tuple[str, str]:
    """``("works", "")`` when the value and the derivatives equal NumPy's (``to_numpy``
    checks that each result is the library's array and brings it to the host), or
    ``("refuses", message)`` for a BackendError; any other outcome raises."""
    expected = run(name, dtype, lambda v: v)
    try:
        got = run(name, dtype, convert)
    except BackendError as e:
        return "refuses", str(e)
    pairs = [(got[0], expected[0]), *zip(got[1], expected[1]), (got[2], expected[2])]
    for g, e in pairs:
        g = to_numpy(g)
        assert g.shape == np.shape(e), (g.shape, np.shape(e))
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, equal_nan=True)
    return "works", ""


def summary(results: dict, library: str) -> str:
    """The counts of a table run, and the refusing cases."""
    works = sorted(c for c, r in results.items() if r == "works")
    refuses = sorted(c for c, r in results.items() if r == "refuses")
    return (f"{library}: {len(works)} op cases work, {len(refuses)} refuse clearly, of "
            f"{len(results)} ({len({n for n, _ in works})} ops work on float64 or "
            f"complex128)\nrefusing: " + " ".join(f"{n}[{d}]" for n, d in refuses))


# ---- linear algebra, contractions and softmax on another library's arrays ----------------
# Each case: a function of tensors whose result does not depend on a basis chosen inside a
# degenerate subspace or on the phases of vectors (the same on any LAPACK), and its inputs.

def _mh(a):
    return yaad.conj(yaad.swapaxes(a, -1, -2))


def _proj(v):
    """``v v^H``: the projector onto the columns of ``v`` (basis- and phase-free)."""
    return v @ _mh(v)


def _inputs():
    rng = np.random.default_rng(7)

    def rand(*shape, c=False):
        x = rng.standard_normal(shape)
        return x + 1j * rng.standard_normal(shape) if c else x

    def herm(*shape, c=False):
        x = rand(*shape, c=c)
        return x + np.conj(np.swapaxes(x, -1, -2))

    def posdef(*shape, c=False):
        x = rand(*shape, c=c)
        return x @ np.conj(np.swapaxes(x, -1, -2)) + shape[-1] * np.eye(shape[-1])

    q = np.linalg.qr(rand(4, 4))[0]
    p = np.linalg.qr(rand(3, 3))[0]
    return dict(
        sym=herm(4, 4), herm=herm(2, 3, 3, c=True), gen=rand(2, 3, 3) + 3 * np.eye(3),
        genc=rand(3, 3, c=True) + 3 * np.eye(3), tall=rand(5, 3), wide=rand(2, 3, 5),
        tallc=rand(4, 3, c=True), pd=posdef(2, 3, 3), pdc=posdef(3, 3, c=True),
        vec=rand(3), mat=rand(3, 2), small=rand(3, 3) / 3, big=rand(3, 3) * 2.5,
        smallc=rand(2, 3, 3, c=True) / 2,
        # degenerate spectra: eigenvalues (1, 1, 2, 3), singular values (2, 2, 1), rank 2
        degen=q @ np.diag([1.0, 1.0, 2.0, 3.0]) @ q.T,
        sdegen=q[:, :3] @ np.diag([2.0, 2.0, 1.0]) @ p.T,
        singular=rand(3, 2) @ rand(2, 3),
        t3=rand(2, 3, 4), t4=rand(4, 3, 2), t5=rand(2, 4, 2), m42=rand(4, 2),
        cvec=rand(6, c=True), lse=rand(3, 4),
        lseinf=np.array([[0.5, -np.inf, 1.0], [-np.inf, -np.inf, -np.inf]]),
        ties=np.array([[1.0, -1.0, 0.5], [2.0, 2.0, -2.0]]),
    )


INPUTS = _inputs()
L = yaad.linalg

LINALG: dict[str, tuple] = {
    "eigh values": (lambda a: L.eigh(a)[0], "sym"),
    "eigh projector": (lambda a: _proj(L.eigh(a)[1][..., :, 1:2]), "sym"),
    "eigh complex batched": (lambda a: L.eigh(a)[0] + yaad.real(
        _proj(L.eigh(a)[1][..., :, :1])[..., 0, :]), "herm"),
    "eigh UPLO=U, nonsymmetric input": (lambda a: _proj(L.eigh(a, "U")[1][..., :, :1])
                                        + L.eigh(a, "U")[0][..., None], "gen"),
    "eigh truncated (last two vectors)": (lambda a: _proj(L.eigh(a)[1][..., :, 2:]), "sym"),
    "eigh degenerate: values": (lambda a: L.eigh(a)[0], "degen"),
    "eigh degenerate: block projector": (lambda a: _proj(L.eigh(a)[1][..., :, :2]), "degen"),
    "eigh degenerate: eps": (lambda a: _proj(L.eigh(a, eps=1e-3)[1][..., :, :1]), "degen"),
    "eigh degenerate: one vector refuses": (lambda a: _proj(L.eigh(a)[1][..., :, :1]), "degen"),
    "eigvalsh": (lambda a: L.eigvalsh(a), "herm"),
    "svd values": (lambda a: L.svd(a)[1], "wide"),
    "svd U S Vh": (lambda a: (lambda u, s, vh: (u * s[..., None, :]) @ vh)(
        *L.svd(a, full_matrices=False)), "tallc"),
    "svd truncated": (lambda a: (lambda u, s, vh: (u[..., :, :2] * s[..., None, :2])
                                 @ vh[..., :2, :])(*L.svd(a, full_matrices=False)), "tall"),
    "svd full_matrices": (lambda a: _proj(L.svd(a)[0][..., :, :2]), "tall"),
    "svd degenerate: bond": (lambda a: (lambda u, s, vh: (u * s[..., None, :]) @ vh)(
        *L.svd(a, full_matrices=False)), "sdegen"),
    "svd degenerate: values": (lambda a: L.svdvals(a), "sdegen"),
    "qr projector": (lambda a: _proj(L.qr(a)[0]), "tallc"),
    "qr r^H r": (lambda a: (lambda r: _mh(r) @ r)(L.qr(a)[1]), "tall"),
    "qr wide": (lambda a: yaad.abs(L.qr(a)[1]) ** 2, "wide"),
    "qr complete": (lambda a: _proj(L.qr(a, mode="complete")[0][..., :, :3]), "tall"),
    "cholesky": (lambda a: L.cholesky(a), "pd"),
    "cholesky upper complex": (lambda a: L.cholesky(a, upper=True), "pdc"),
    "solve": (lambda a, b: L.solve(a, b), "gen", "t3"),
    "solve vector": (lambda a, b: L.solve(a, b), "genc", "vec"),
    "inv": (lambda a: L.inv(a), "gen"),
    "det": (lambda a: L.det(a), "genc"),
    "det singular (adjugate)": (lambda a: L.det(a), "singular"),
    "slogdet": (lambda a: yaad.stack([yaad.real(L.slogdet(a)[0]), L.slogdet(a)[1]]), "gen"),
    "slogdet complex phase": (lambda a: L.slogdet(a)[0] * L.slogdet(a)[1], "genc"),
    "expm": (lambda a: L.expm(a), "small"),
    "expm scaled and squared": (lambda a: L.expm(a), "big"),
    "expm complex batched": (lambda a: L.expm(a), "smallc"),
    "pinv": (lambda a: L.pinv(a), "wide"),
    "pinv rank-deficient": (lambda a: L.pinv(a), "singular"),
    "matrix_power": (lambda a: L.matrix_power(a, 3), "gen"),
    "einsum matmul": (lambda a, b: yaad.einsum("ijk,kl->ijl", a, b), "t3", "m42"),
    "einsum batched": (lambda a, b: yaad.einsum("bij,bjk->bik", a, b), "t3", "t5"),
    "einsum trace and diagonal": (lambda a: yaad.einsum("ii->", a) * yaad.einsum("ii->i", a),
                                  "genc"),
    "einsum repeated label with another": (lambda a, b: yaad.einsum("bii,bij->bj", a, b),
                                           "gen", "gen"),
    "einsum sum within one operand": (lambda a, b: yaad.einsum("ijk,kl->i", a, b), "t3", "m42"),
    "einsum hadamard": (lambda a, b: yaad.einsum("ij,ij->ij", a, b), "tall", "tall"),
    "einsum outer": (lambda a, b: yaad.einsum("i,j->ij", a, b), "vec", "cvec"),
    "einsum three operands": (lambda a, b, c: yaad.einsum("ij,jk,kl->il", a, b, c),
                              "tall", "genc", "mat"),
    "einsum three operands, no path": (lambda a, b, c: yaad.einsum(
        "ij,jk,kl->li", a, b, c, optimize=False), "tall", "small", "mat"),
    "einsum ellipsis broadcast": (lambda a, b: yaad.einsum("...ij,...jk->...ik", a, b),
                                  "gen", "small"),
    "einsum transpose": (lambda a: yaad.einsum("abc->cab", a), "t3"),
    "tensordot": (lambda a, b: yaad.tensordot(a, b, ([1, 2], [1, 0])), "t3", "t4"),
    "tensordot int axes": (lambda a, b: yaad.tensordot(a, b, 1), "tall", "genc"),
    "vdot": (lambda a, b: yaad.vdot(a, b), "cvec", "cvec"),
    "trace": (lambda a: yaad.trace(a), "genc"),
    "trace offset axes": (lambda a: yaad.trace(a, 1, 2, 0), "t3"),
    "norm (vector 2-norm of all entries)": (lambda a: L.norm(a), "tallc"),
    "vector_norm inf, ties split": (lambda a: L.vector_norm(a, ord=np.inf, axis=1), "ties"),
    "vector_norm 3": (lambda a: L.vector_norm(a, ord=3, axis=0), "lse"),
    "norm nuc and 2": (lambda a: L.norm(a, "nuc") * L.norm(a, 2), "tall"),
    "matrix_norm 1": (lambda a: L.matrix_norm(a, ord=1), "gen"),
    "logsumexp": (lambda a: yaad.logsumexp(a, axis=1), "lse"),
    "logsumexp b signed": (lambda a, b: yaad.logsumexp(a, axis=0, b=b, return_sign=True)[0],
                           "lse", "lse"),
    "logsumexp -inf": (lambda a: yaad.logsumexp(a, axis=1), "lseinf"),
    "softmax": (lambda a: yaad.softmax(a, axis=0), "lse"),
    "log_softmax": (lambda a: yaad.log_softmax(a, axis=-1), "lse"),
}


def run_linalg(name: str, convert: Callable[[Any], Any]) -> tuple:
    """The value, reverse-mode gradients (random cotangent) and forward-mode derivative
    (random tangents) of case ``name`` of :data:`LINALG` on its inputs through ``convert``;
    a GaugeError is returned as the outcome."""
    f, *keys = LINALG[name]
    xs = [INPUTS[k] for k in keys]
    rng = np.random.default_rng(11)
    ts = [yaad.tensor(convert(x), requires_grad=True) for x in xs]
    try:
        out = f(*ts)
        dtype = np.dtype(str(out.dtype).rsplit(".", 1)[-1])
        cot = rng.standard_normal(out.shape) + (
            1j * rng.standard_normal(out.shape) if dtype.kind == "c" else 0)
        out.backward(gradient=convert(np.asarray(cot, dtype=dtype)))
    except yaad.linalg.GaugeError as e:
        # (the message up to its detail: the level's entries and cotangents, which an
        # array library NumPy may not read leaves out)
        return ("GaugeError", str(e).split(" (")[0].split(" [")[0])
    tangents = [rng.standard_normal(x.shape) + (1j * rng.standard_normal(x.shape)
                                                 if np.iscomplexobj(x) else 0) for x in xs]
    with np.errstate(all="ignore"):
        _, jvp_out = yaad.func.jvp(f, tuple(convert(x) for x in xs),
                                   tuple(convert(t) for t in tangents))
    return out.data, [t.grad for t in ts], jvp_out


def linalg_outcome(name: str, convert: Callable[[Any], Any],
                   to_numpy: Callable[[Any], np.ndarray], rtol: float = 1e-12,
                   atol: float = 1e-12, guard: Any = contextlib.nullcontext) -> str:
    """``"works"`` when case ``name`` gives NumPy's values and derivatives, ``"gauge"`` when
    it raises the same GaugeError as NumPy, ``"refuses"`` for a BackendError; any other
    outcome raises. ``guard()``: a context the library's run happens in."""
    expected = run_linalg(name, lambda v: v)
    try:
        with guard():
            got = run_linalg(name, convert)
    except BackendError:
        return "refuses"
    if isinstance(expected[0], str):
        assert got == expected, (got, expected)
        return "gauge"
    assert not isinstance(got[0], str), got
    pairs = [(got[0], expected[0]), *zip(got[1], expected[1]), (got[2], expected[2])]
    for g, e in pairs:
        g = to_numpy(g)
        assert g.shape == np.shape(e), (g.shape, np.shape(e))
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, equal_nan=True)
    return "works"


class NoStrictConversion:
    """While active, converting an array_api_strict array to NumPy fails (as CuPy's
    implicit conversion does): a NumPy function meeting one would otherwise read it
    through ``__array__`` and hide the transfer."""

    def __enter__(self) -> None:
        import array_api_strict

        self.cls = type(array_api_strict.asarray(0.0))
        self.saved = self.cls.__array__

        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError("an array_api_strict array was converted to NumPy")

        self.cls.__array__ = refuse

    def __exit__(self, *exc: Any) -> None:
        self.cls.__array__ = self.saved
