# Every target creates .venv if needed and installs what it needs.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q

.PHONY: demo test lint docs bench fuzz gpu-check clean

$(PY):
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed-%: pyproject.toml | $(PY)
	$(PIP) install -e '.[$*]'
	touch $@

demo: $(VENV)/.installed-demo
	$(PY) -m yaad demo $(ARGS)

test: $(VENV)/.installed-test
	$(PY) -m pytest tests $(ARGS)

lint: $(VENV)/.installed-lint
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

docs: $(VENV)/.installed-docs
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

bench: $(VENV)/.installed-bench
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m benchmarks $(ARGS)
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m benchmarks.jacobian

fuzz: $(VENV)/.installed-test
	YAAD_FUZZ_PROGRAMS=5000 $(PY) -m pytest tests -k fuzz $(ARGS)

# On a machine with a CUDA GPU: the CuPy tests, then W1-W8 on CuPy next to PyTorch CUDA.
gpu-check: $(VENV)/.installed-test $(VENV)/.installed-gpu
	$(PY) tools/gpu_check.py $(ARGS)

clean:
	rm -rf $(VENV) build dist site src/*.egg-info
