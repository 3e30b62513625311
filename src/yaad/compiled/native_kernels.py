"""The numba interpreter of native programs (see ``native.py``).

Imported only when the native backend first builds a program (importing numba takes a
while). :func:`execute` is compiled once and cached on disk: a program is a table of
instructions over two flat workspaces (float64 and complex128) and one integer array of
precomputed indices, so a new program costs no compilation at all. Each instruction
reads and writes regions of the workspaces; every value has a region of its own, so a
reshape, an alias or a contiguous slice is a region, not an instruction.
"""

from __future__ import annotations

import numba
import numpy as np

jit = numba.njit(cache=True, error_model="numpy")

# Opcodes (native.py writes them). Each instruction is a row:
# op, ka, kb, ko, o, n, a, sa, b, sb, x, m
# (kinds: 0 float64, 1 complex128; o/n: the output's offset and size; a/b: the operands'
# offsets, sa/sb their strides, 0 for a scalar that broadcasts; x: an offset into the
# index array; m: a count or a function code).
ADD, SUB, MUL, DIV = 0, 1, 2, 3
UNARY = 4  # m: the function (below), real -> real
NEG_Z, CONJ, REAL, IMAG, ABS_Z, TO_Z = 5, 6, 7, 8, 9, 10
GATHER = 11  # out[k] = a[I[x + k]]
CONTRACT1 = 12  # out[I[x + t]] += a[I[x + m + t]], t < m; b = 1: accumulate (no zeroing)
CONTRACT2 = 13  # out[I[x + t]] += a[I[x + m + t]] * b[I[x + 2m + t]]
STRONG_ZERO = 14  # out[k] = 0 if a[k sa] == 0 and b[k] not finite, else b[k]
EXPM = 15  # m: the matrix size
SIGN_Z = 16  # z / |z| (0 at 0)
GEMM = 17  # out (m x n) = op(a) (m x K) @ op(b) (K x n), n = out's size / m; x: K;
# sa, sb: 1 where the operand's region holds the transpose (K x m, n x K); BLAS's product
EXP_Z = 18  # the complex exponential (a non-finite input or result: 1, the NumPy replay)

(F_NEG, F_COS, F_SIN, F_TAN, F_EXP, F_LOG, F_SQRT, F_TANH, F_SINH, F_COSH, F_ABS, F_SQUARE,
 F_RECIP, F_EXPM1, F_LOG1P, F_ARCTAN, F_SIGN) = range(17)


@jit
def _binary(op, out, o, n, A, a, sa, B, b, sb):
    if op == 0:
        for k in range(n):
            out[o + k] = A[a + k * sa] + B[b + k * sb]
    elif op == 1:
        for k in range(n):
            out[o + k] = A[a + k * sa] - B[b + k * sb]
    elif op == 2:
        for k in range(n):
            out[o + k] = A[a + k * sa] * B[b + k * sb]
    else:
        for k in range(n):
            out[o + k] = A[a + k * sa] / B[b + k * sb]


@jit
def _unary(f, R, o, n, a):
    for k in range(n):
        x = R[a + k]
        if f == 0:
            y = -x
        elif f == 1:
            y = np.cos(x)
        elif f == 2:
            y = np.sin(x)
        elif f == 3:
            y = np.tan(x)
        elif f == 4:
            y = np.exp(x)
        elif f == 5:
            y = np.log(x)
        elif f == 6:
            y = np.sqrt(x)
        elif f == 7:
            y = np.tanh(x)
        elif f == 8:
            y = np.sinh(x)
        elif f == 9:
            y = np.cosh(x)
        elif f == 10:
            y = abs(x)
        elif f == 11:
            y = x * x
        elif f == 12:
            y = 1.0 / x
        elif f == 13:
            y = np.expm1(x)
        elif f == 14:
            y = np.log1p(x)
        elif f == 15:
            y = np.arctan(x)
        elif x > 0:
            y = 1.0
        elif x < 0:
            y = -1.0
        else:
            y = x if x != x else 0.0
        R[o + k] = y


@jit
def _contract1(out, o, n, A, a, idx, x, m, acc):
    if not acc:
        for k in range(n):
            out[o + k] = 0
    for t in range(m):
        out[o + idx[x + t]] += A[a + idx[x + m + t]]


@jit
def _contract2(out, o, n, A, a, B, b, idx, x, m):
    for k in range(n):
        out[o + k] = 0
    for t in range(m):
        out[o + idx[x + t]] += A[a + idx[x + m + t]] * B[b + idx[x + 2 * m + t]]


@jit
def _strong_zero(out, o, n, A, a, sa, B, b):
    for k in range(n):
        g = A[a + k * sa]
        gi = B[b + k]
        if g == 0 and not np.isfinite(gi):
            out[o + k] = 0
        else:
            out[o + k] = gi


@jit
def _gemm(out, o, n, A, a, ta, B, b, tb, K, M):
    N = n // M
    if ta == 0 and tb == 0:
        r = np.dot(A[a:a + M * K].reshape((M, K)), B[b:b + K * N].reshape((K, N)))
    elif ta == 0:
        r = np.dot(A[a:a + M * K].reshape((M, K)), B[b:b + K * N].reshape((N, K)).T)
    elif tb == 0:
        r = np.dot(A[a:a + M * K].reshape((K, M)).T, B[b:b + K * N].reshape((K, N)))
    else:
        r = np.dot(A[a:a + M * K].reshape((K, M)).T, B[b:b + K * N].reshape((N, K)).T)
    out[o:o + n] = r.reshape(n)


@jit
def _gather(out, o, n, A, a, idx, x):
    for k in range(n):
        out[o + k] = A[a + idx[x + k]]


@jit
def _csign(z):
    re, im = z.real, z.imag
    if re == 0 and im == 0:
        return 0j
    if np.isinf(re) or np.isinf(im):
        if np.isnan(re) or np.isnan(im):
            return complex(np.nan, np.nan)
        re = (1.0 if re > 0 else -1.0) if np.isinf(re) else 0.0
        im = (1.0 if im > 0 else -1.0) if np.isinf(im) else 0.0
        z = complex(re, im)
    return z / abs(z)


@jit
def execute(code, idx, R, Z):
    """Run the instructions ``code`` on the workspaces ``R`` (float64) and ``Z``
    (complex128), with the index array ``idx``; 0, or 1 where the values are outside
    what it reproduces (the caller then runs the NumPy replay)."""
    for p in range(code.shape[0]):
        op = code[p, 0]
        ka = code[p, 1]
        kb = code[p, 2]
        ko = code[p, 3]
        o = code[p, 4]
        n = code[p, 5]
        a = code[p, 6]
        sa = code[p, 7]
        b = code[p, 8]
        sb = code[p, 9]
        x = code[p, 10]
        m = code[p, 11]
        if op <= DIV:
            if ko == 0:
                _binary(op, R, o, n, R, a, sa, R, b, sb)
            elif ka == 0:
                _binary(op, Z, o, n, R, a, sa, Z, b, sb)
            elif kb == 0:
                _binary(op, Z, o, n, Z, a, sa, R, b, sb)
            else:
                _binary(op, Z, o, n, Z, a, sa, Z, b, sb)
        elif op == UNARY:
            _unary(m, R, o, n, a)
        elif op == NEG_Z:
            for k in range(n):
                Z[o + k] = -Z[a + k]
        elif op == CONJ:
            for k in range(n):
                Z[o + k] = Z[a + k].conjugate()
        elif op == REAL:
            for k in range(n):
                R[o + k] = Z[a + k].real
        elif op == IMAG:
            for k in range(n):
                R[o + k] = Z[a + k].imag
        elif op == ABS_Z:
            for k in range(n):
                R[o + k] = abs(Z[a + k])
        elif op == TO_Z:
            for k in range(n):
                Z[o + k] = R[a + k]
        elif op == GATHER:
            if ko == 0:
                _gather(R, o, n, R, a, idx, x)
            else:
                _gather(Z, o, n, Z, a, idx, x)
        elif op == CONTRACT1:
            if ko == 0:
                _contract1(R, o, n, R, a, idx, x, m, b)
            elif ka == 0:
                _contract1(Z, o, n, R, a, idx, x, m, b)
            else:
                _contract1(Z, o, n, Z, a, idx, x, m, b)
        elif op == CONTRACT2:
            if ko == 0:
                _contract2(R, o, n, R, a, R, b, idx, x, m)
            elif ka == 0 and kb == 1:
                _contract2(Z, o, n, R, a, Z, b, idx, x, m)
            elif ka == 1 and kb == 0:
                _contract2(Z, o, n, Z, a, R, b, idx, x, m)
            else:
                _contract2(Z, o, n, Z, a, Z, b, idx, x, m)
        elif op == STRONG_ZERO:
            if ko == 0:
                if ka == 0:
                    _strong_zero(R, o, n, R, a, sa, R, b)
                else:
                    _strong_zero(R, o, n, Z, a, sa, R, b)
            elif ka == 0:
                _strong_zero(Z, o, n, R, a, sa, Z, b)
            else:
                _strong_zero(Z, o, n, Z, a, sa, Z, b)
        elif op == GEMM:
            if ko == 0:
                _gemm(R, o, n, R, a, sa, R, b, sb, x, m)
            else:
                _gemm(Z, o, n, Z, a, sa, Z, b, sb, x, m)
        elif op == EXP_Z:
            # (NumPy's exponential has its own answers at infinities and overflow)
            for k in range(n):
                z = Z[a + k]
                if not (np.isfinite(z.real) and np.isfinite(z.imag)):
                    return 1
                w = np.exp(z)
                if not (np.isfinite(w.real) and np.isfinite(w.imag)):
                    return 1
                Z[o + k] = w
        elif op == SIGN_Z:
            for k in range(n):
                Z[o + k] = _csign(Z[a + k])
        elif op == EXPM:
            # (a matrix with an inf or a NaN: SciPy's answer has a structure of its own;
            # the caller runs the NumPy replay instead)
            if ko == 0:
                if not np.isfinite(norm1(R[a:a + m * m], m)):
                    return 1
                R[o:o + m * m] = expm(R[a:a + m * m].copy(), m)
            else:
                if not np.isfinite(norm1(Z[a:a + m * m], m)):
                    return 1
                Z[o:o + m * m] = expm(Z[a:a + m * m].copy(), m)
    return 0


@jit
def mm(a, b, n):
    """The product of two flat n x n matrices."""
    out = np.zeros_like(a)
    for i in range(n):
        for k in range(n):
            aik = a[i * n + k]
            for j in range(n):
                out[i * n + j] += aik * b[k * n + j]
    return out


@jit
def norm1(a, n):
    """The 1-norm (largest column sum of moduli) of a flat n x n matrix."""
    best = 0.0
    for j in range(n):
        s = 0.0
        for i in range(n):
            s += abs(a[i * n + j])
        best = max(best, s)
    return best


@jit
def expm(a, n):
    """The exponential of a flat n x n matrix: scaling and squaring with the Pade
    approximant of degree 3, 5, 7, 9 or 13 chosen by the 1-norm (Higham 2005)."""
    nrm = norm1(a, n)
    eye = np.zeros_like(a)
    for i in range(n):
        eye[i * n + i] = 1.0
    s = 0
    if nrm <= 0.01495585217958292:
        c3 = (120.0, 60.0, 12.0, 1.0)
        a2 = mm(a, a, n)
        u = mm(a, c3[3] * a2 + c3[1] * eye, n)
        v = c3[2] * a2 + c3[0] * eye
    elif nrm <= 0.2539398330063230:
        c5 = (30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0)
        a2 = mm(a, a, n)
        a4 = mm(a2, a2, n)
        u = mm(a, c5[5] * a4 + c5[3] * a2 + c5[1] * eye, n)
        v = c5[4] * a4 + c5[2] * a2 + c5[0] * eye
    elif nrm <= 0.9504178996162932:
        c7 = (17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0, 1.0)
        a2 = mm(a, a, n)
        a4 = mm(a2, a2, n)
        a6 = mm(a4, a2, n)
        u = mm(a, c7[7] * a6 + c7[5] * a4 + c7[3] * a2 + c7[1] * eye, n)
        v = c7[6] * a6 + c7[4] * a4 + c7[2] * a2 + c7[0] * eye
    elif nrm <= 2.097847961257068:
        c9 = (17643225600.0, 8821612800.0, 2075673600.0, 302702400.0, 30270240.0,
              2162160.0, 110880.0, 3960.0, 90.0, 1.0)
        a2 = mm(a, a, n)
        a4 = mm(a2, a2, n)
        a6 = mm(a4, a2, n)
        a8 = mm(a6, a2, n)
        u = mm(a, c9[9] * a8 + c9[7] * a6 + c9[5] * a4 + c9[3] * a2 + c9[1] * eye, n)
        v = c9[8] * a8 + c9[6] * a6 + c9[4] * a4 + c9[2] * a2 + c9[0] * eye
    else:
        b = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0,
             1187353796428800.0, 129060195264000.0, 10559470521600.0, 670442572800.0,
             33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0)
        if nrm > 5.371920351148152:
            s = int(np.ceil(np.log2(nrm / 5.371920351148152)))
        a = a * (0.5 ** s)
        a2 = mm(a, a, n)
        a4 = mm(a2, a2, n)
        a6 = mm(a4, a2, n)
        u = mm(a, mm(a6, b[13] * a6 + b[11] * a4 + b[9] * a2, n)
               + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * eye, n)
        v = (mm(a6, b[12] * a6 + b[10] * a4 + b[8] * a2, n)
             + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye)
    r = np.linalg.solve((v - u).reshape((n, n)), (v + u).reshape((n, n)))
    r = np.ascontiguousarray(r).reshape(n * n)
    for _ in range(s):
        r = mm(r, r, n)
    return r
