"""SciPy and scikit-learn array API functions on yaad tensors and on PyTorch tensors,
gradients compared (run by tests/array_api/test_array_api_libraries.py in a fresh interpreter:
SCIPY_ARRAY_API must be set before SciPy is imported). Prints one JSON line: for each
function, "match" (values and gradients agree), "differ", or what each library raised."""

from __future__ import annotations

import json
import os
import warnings

os.environ["SCIPY_ARRAY_API"] = "1"

import numpy as np  # noqa: E402
import scipy.cluster.vq as vq  # noqa: E402
import scipy.fft as sfft  # noqa: E402
import scipy.special as sp  # noqa: E402
import scipy.stats as st  # noqa: E402
import sklearn  # noqa: E402
import torch  # noqa: E402
from sklearn import preprocessing  # noqa: E402
from sklearn.metrics import pairwise  # noqa: E402
from sklearn.utils import extmath  # noqa: E402

import yaad  # noqa: E402

sklearn.set_config(array_api_dispatch=True)
warnings.simplefilter("ignore")

rng = np.random.default_rng(0)
X = rng.standard_normal((5, 3))
V = rng.standard_normal(6) + 3.0

# name -> (function of one array, input)
CASES = {
    "scipy.special.logsumexp": (lambda x: sp.logsumexp(x, axis=1), X),
    "scipy.special.softmax": (lambda x: sp.softmax(x, axis=1), X),
    "scipy.special.log_softmax": (lambda x: sp.log_softmax(x, axis=0), X),
    "scipy.special.xlogy": (lambda x: sp.xlogy(x, x), V),
    "scipy.special.expit": (lambda x: sp.expit(x), X),
    "scipy.special.entr": (lambda x: sp.entr(x), V),
    "scipy.stats.skew": (lambda x: st.skew(x, axis=0), X),
    "scipy.stats.kurtosis": (lambda x: st.kurtosis(x, axis=0), X),
    "scipy.stats.moment": (lambda x: st.moment(x, order=3, axis=0), X),
    "scipy.stats.variation": (lambda x: st.variation(x, axis=0), X + 5.0),
    "scipy.stats.zscore": (lambda x: st.zscore(x, axis=0), X),
    "scipy.stats.gmean": (lambda x: st.gmean(x), V),
    "scipy.stats.hmean": (lambda x: st.hmean(x), V),
    "scipy.stats.pmean": (lambda x: st.pmean(x, 2.5), V),
    "scipy.stats.entropy": (lambda x: st.entropy(x), V),
    "scipy.stats.tmean": (lambda x: st.tmean(x), V),
    "scipy.fft.fft": (lambda x: sfft.fft(x).real, V),
    "scipy.fft.dct": (lambda x: sfft.dct(x), V),
    "scipy.cluster.vq.whiten": (lambda x: vq.whiten(x), X),
    "sklearn rbf_kernel": (lambda x: pairwise.rbf_kernel(x, x, gamma=0.3), X),
    "sklearn polynomial_kernel": (lambda x: pairwise.polynomial_kernel(
        x, x, degree=2, gamma=0.5, coef0=1.0), X),
    "sklearn linear_kernel": (lambda x: pairwise.linear_kernel(x, x), X),
    "sklearn cosine_similarity": (lambda x: pairwise.cosine_similarity(x), X),
    "sklearn euclidean_distances": (lambda x: pairwise.euclidean_distances(x, x[:2] + 1.0), X),
    "sklearn normalize": (lambda x: preprocessing.normalize(x), X),
    "sklearn StandardScaler": (lambda x: preprocessing.StandardScaler().fit_transform(x), X),
    "sklearn MinMaxScaler": (lambda x: preprocessing.MinMaxScaler().fit_transform(x), X),
    "sklearn extmath.softmax": (lambda x: extmath.softmax(x * 1.0, copy=True), X),
}


def run(lib, f, x0):
    """The function's value and the gradient of a weighted sum of it, or the error."""
    try:
        if lib == "torch":
            x = torch.tensor(x0, requires_grad=True)
            y = f(x)
            w = torch.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)))
            (g,) = torch.autograd.grad((y * w).sum(), x)
            return y.detach().numpy(), g.numpy()
        x = yaad.tensor(x0, requires_grad=True)
        y = f(x)
        if not isinstance(y, yaad.Tensor):
            return f"TypeError: the result is a {type(y).__name__}, not a tensor"
        yaad.sum(y * np.cos(np.arange(y.size)).reshape(y.shape)).backward()
        return y.detach().numpy(), x.grad
    except Exception as e:  # noqa: BLE001 - reported, compared with the other library's
        return f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"


def main():
    report = {}
    for name, (f, x0) in CASES.items():
        t, y = run("torch", f, x0), run("yaad", f, x0)
        if isinstance(t, tuple) and isinstance(y, tuple):
            same = (np.allclose(t[0], y[0], rtol=1e-12, atol=1e-13)
                    and np.allclose(t[1], y[1], rtol=1e-10, atol=1e-12))
            report[name] = {"result": "match" if same else "differ"}
        else:
            report[name] = {"result": "raises",
                            "torch": t if isinstance(t, str) else "ok",
                            "yaad": y if isinstance(y, str) else "ok"}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
