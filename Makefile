# Every target creates .venv if needed and installs what it needs.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q

.PHONY: demo test lint docs bench fuzz gpu-check clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# COMPILE=1 (the default, what CI tests): yaad's hot modules compiled by Cython (setup.py),
# installed as a regular copy (not editable: an extension module must not shadow the .py
# being edited), rebuilt when a source changes; the tests then check that they import the
# compiled modules (pure Python where no C compiler is found: the check then fails).
# COMPILE=0: an editable, pure-Python install (for editing without rebuilds).
COMPILE ?= 1
ifeq ($(COMPILE),1)
INSTALL := $(PIP) install
INSTALLED_FROM := pyproject.toml setup.py $(shell find src -name '*.py' -o -name '*.pyi' -o -name '*.pxd')
else
INSTALL := $(PIP) install -e
INSTALLED_FROM := pyproject.toml setup.py
endif

# (the stamps of the other build are removed: the venv holds one build at a time)
$(VENV)/.installed-$(COMPILE)-%: $(INSTALLED_FROM) | $(PY)
	find $(VENV)/ -maxdepth 1 -name '.installed-*' ! -name '.installed-$(COMPILE)-*' -delete
	rm -rf build/lib.*  # (setuptools would package a moved or deleted module's old copy)
	$(INSTALL) '.[$*]'
	touch $@

demo: $(VENV)/.installed-$(COMPILE)-demo
	$(PY) -m yaad demo $(ARGS)

test: $(VENV)/.installed-$(COMPILE)-test
	YAAD_EXPECT_COMPILED=$(COMPILE) $(PY) -m pytest tests $(ARGS)

lint: $(VENV)/.installed-$(COMPILE)-lint
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

docs: $(VENV)/.installed-$(COMPILE)-docs
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

bench: $(VENV)/.installed-$(COMPILE)-bench
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m benchmarks $(ARGS)
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m benchmarks.jacobian

fuzz: $(VENV)/.installed-$(COMPILE)-test
	YAAD_FUZZ_PROGRAMS=5000 $(PY) -m pytest tests -k fuzz $(ARGS)

# On a machine with a CUDA GPU: the CuPy tests, then W1-W8 on CuPy next to PyTorch CUDA.
gpu-check: $(VENV)/.installed-$(COMPILE)-test $(VENV)/.installed-$(COMPILE)-gpu
	$(PY) tools/gpu_check.py $(ARGS)

clean:
	rm -rf $(VENV) build dist site src/*.egg-info
