# Two commands do all the set-up on a fresh machine (see README.md):
#   make bench   installs hrx in .venv and runs the queue-pool benchmark sweep
#                on the default backend (hip if a GPU is found, else host)
#   make test    installs hrx with its test extras in .venv and runs every
#                test: the C tests (plain, ASan+UBSan, TSan), the hip checks
#                that need no GPU, the Python suite, and the runtime's
#                conformance tests once more with submission batching off
PYTHON ?= python3
VENV ?= .venv
VPY := $(VENV)/bin/python
RESULTS ?= bench/results/sweep-$(shell date -u +%Y%m%dT%H%M%SZ).jsonl
SWEEP_ARGS ?=
# The runtime's contract tests, run a second time with batching off.
CONFORMANCE_TESTS := test_pool_contract.py test_stream_ops.py \
  test_event_ordering.py test_bad_input.py test_host_backend.py \
  test_batching.py test_graph.py

.PHONY: test bench venv test-c test-python clean

$(VPY):
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip

venv: $(VPY)

test: $(VPY)
	$(VPY) -m pip install -q '.[test]'
	$(MAKE) -C tests/c
	cd tests && ../$(VPY) -m pytest -q -p no:cacheprovider .
	cd tests && HRX_BATCHING=0 ../$(VPY) -m pytest -q -p no:cacheprovider \
	  $(CONFORMANCE_TESTS)

bench: $(VPY)
	$(VPY) -m pip install -q '.[plot]'
	$(VENV)/bin/hrx-bench sweep --output $(RESULTS) $(SWEEP_ARGS)
	$(VENV)/bin/hrx-bench plot $(RESULTS) --out $(RESULTS:.jsonl=.png)

clean:
	rm -rf $(VENV) build tests/c/build *.egg-info
