# tpubench: `make demo` and `make test` work on a fresh clone (Python 3.10+).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
EXTRAS ?= cpu,dev,launch-check,loadgen

.PHONY: demo test test-quick test-slow lint format bench clean models-table zendnn

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

# Two workers: on 2 cores the suite takes about half an hour, less than serially
# (TensorFlow start-up and subprocess waits overlap); PYTEST_WORKERS=0 runs it serially.
PYTEST_WORKERS ?= 2

test: lint
	$(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist loadscope

# Under 5 minutes on 2 cores: lint, the smoke layer (every command a user can type, once),
# the layering checks and the docs' commands (README.md's figures among them).
QUICK_TESTS := tests/test_smoke_runs.py tests/test_smoke_launch.py tests/test_smoke_serving.py \
	tests/test_layers.py tests/docs

test-quick: lint
	$(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist loadscope $(QUICK_TESTS)

test-slow: $(STAMP)
	$(BIN)/pytest -q -m slow

# Recounts the built-in models' FLOPs for `tpubench models` (after a model or TF changes).
models-table: $(STAMP)
	$(BIN)/python -m tpubench.model.shipped

bench: $(STAMP)
	$(BIN)/python bench/overhead.py

# AMD's ZenDNN plug-in (zentf) for `--cpu_kernels=zendnn`, in an environment of its
# own: it loads into every TensorFlow process of the environment it is installed in.
# .venv-zendnn sees .venv's packages (tpubench included) and adds the zentf built for
# .venv's TensorFlow (without its numpy pin, which .venv's TensorFlow does not need).
ZENDNN_VENV := .venv-zendnn
zendnn: $(STAMP)
	$(PYTHON) -m venv $(ZENDNN_VENV)
	$(BIN)/python -c "import site; print('import site; site.addsitedir(%r)' % site.getsitepackages()[0])" \
		> "$$($(ZENDNN_VENV)/bin/python -c 'import site; print(site.getsitepackages()[0])')/tpubench-venv.pth"
	$(ZENDNN_VENV)/bin/pip install --quiet --no-deps \
		"zentf==$$($(BIN)/python -c 'from tpubench.hardware import cpu_kernels; print(cpu_kernels.matching_zentf())')"
	$(ZENDNN_VENV)/bin/python -P -m tpubench train --cpu_kernels=zendnn --help > /dev/null

clean:
	rm -rf $(VENV) $(ZENDNN_VENV) build *.egg-info .pytest_cache .ruff_cache
