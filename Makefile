# tpubench: `make demo` and `make test` work on a fresh clone (Python 3.10+).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
EXTRAS ?= cpu,dev,launch-check,loadgen

.PHONY: demo test test-slow lint format bench clean models-table

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[$(EXTRAS)]'
	touch $(STAMP)

# Trains mnist_mlp on the embedded real digits dataset: no network, no flags.
demo: $(STAMP)
	$(BIN)/tpubench train

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# Two workers: on 2 cores the suite takes about 15 minutes, less than serially
# (TensorFlow start-up and subprocess waits overlap); PYTEST_WORKERS=0 runs it serially.
PYTEST_WORKERS ?= 2

test: lint
	$(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist loadscope

test-slow: $(STAMP)
	$(BIN)/pytest -q -m slow

# Recounts the built-in models' FLOPs for `tpubench models` (after a model or TF changes).
models-table: $(STAMP)
	$(BIN)/python -m tpubench.model.shipped

bench: $(STAMP)
	$(BIN)/python bench/overhead.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
