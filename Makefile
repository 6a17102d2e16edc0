# Two commands do all the set-up on a fresh machine (see README.md):
#   make bench   installs hrx in .venv and runs the queue-pool benchmark sweep
#                on the default backend (hip if a GPU is found, else host),
#                with the sizes the size rule gives that backend (quick on
#                host, the reference protocol on a GPU; SWEEP_ARGS="--preset
#                reference" for the reference sizes anywhere)
#   make test    installs hrx with its test extras in .venv, builds the
#                testing extension (build/testing, see testing-build) and
#                runs every test against it: the C tests (plain, ASan+UBSan,
#                TSan), the hip checks that need no GPU, the Python suite,
#                the runtime's conformance tests once more with submission
#                batching off, and the tests that exercise the extension
#                again against an ASan+UBSan testing build of it
PYTHON ?= python3
VENV ?= .venv
VPY := $(VENV)/bin/python
# Expanded once (:=): the sweep and its plot must name the same file even
# when the clock turns a second between their lines.
ifeq ($(origin RESULTS),undefined)
RESULTS := bench/results/sweep-$(shell date -u +%Y%m%dT%H%M%SZ).jsonl
endif
SWEEP_ARGS ?=
# pip builds in the tree, where setuptools copies the package to build/lib
# and never removes a module the tree no longer has: an old copy would be
# installed with the new code, so each install starts from no copy.
PIP_INSTALL := rm -rf build/lib.* build/bdist.* && $(VPY) -m pip install -q
# The runtime's contract tests, run a second time with batching and
# transfer chunking off. The first run uses small chunks
# (CONFORMANCE_CHUNKING), so that the suites' transfers of 64 KiB and more
# go through the paced path (docs/lanes.md, "Transfers").
CONFORMANCE_TESTS := test_pool_contract.py test_stream_ops.py \
  test_event_ordering.py test_bad_input.py test_host_backend.py \
  test_batching.py test_graph.py test_fault_injection.py \
  test_host_callbacks.py test_stream_independence.py test_failure_model.py \
  test_stream_api.py test_multi_device.py test_kernel_launch.py \
  test_kernel_graph.py test_launch_batching.py test_kernel_cuda_dialect.py \
  test_staged_transfers.py test_pinned_memory.py test_cupy_style_program.py

CONFORMANCE_CHUNKING := HRX_CHUNK_BYTES=65536 HRX_CHUNK_WINDOW_BYTES=131072

conformance-tests:
	@echo $(CONFORMANCE_TESTS)

conformance-chunking:
	@echo $(CONFORMANCE_CHUNKING)

.PHONY: conformance-tests conformance-chunking test bench venv test-c test-python test-python-asan \
  testing-build clean

$(VPY):
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip

venv: $(VPY)

test: $(VPY)
	$(PIP_INSTALL) '.[test]' 'setuptools>=77'
	$(MAKE) testing-build
	$(MAKE) -C tests/c -j$$(nproc)
	cd tests && $(CONFORMANCE_CHUNKING) PYTHONPATH=$(TESTING_PKG) \
	  ../$(VPY) -m pytest -q -p no:cacheprovider .
	cd tests && HRX_BATCHING=0 HRX_CHUNKING=0 PYTHONPATH=$(TESTING_PKG) \
	  ../$(VPY) -m pytest -q -p no:cacheprovider $(CONFORMANCE_TESTS)
	$(MAKE) test-python-asan TEST_EXTRAS_INSTALLED=1

# The testing build of the extension (HRX_TESTING_BUILD=1, see setup.py):
# the product plus fault injection and the test hooks, with a copy of the
# hrx package, in build/testing. The tests import it through PYTHONPATH
# (their child processes too); what `pip install .` installs stays without
# hooks (tests/test_product_build.py checks it). PY: the Python to build
# with (the venv's; the H200 script passes its own).
TESTING_PKG := $(CURDIR)/build/testing
PY ?= $(VPY)
testing-build:
	rm -rf $(TESTING_PKG) build/testing-tmp
	mkdir -p $(TESTING_PKG)
	cp -r hrx $(TESTING_PKG)/
	rm -f $(TESTING_PKG)/hrx/*.so
	HRX_TESTING_BUILD=1 $(PY) setup.py -q build_ext --force \
	  --build-lib $(TESTING_PKG) --build-temp build/testing-tmp

# The Python tests that exercise the extension, with the testing extension
# built with ASan+UBSan (build/asan, found first through PYTHONPATH, also by
# the tests' child processes), under the venv's ordinary CPython with libasan
# preloaded. Tests marked python_only (plots, notebooks, packaging, result
# files and the sweep's process handling) check no C code and are left out:
# under the preloaded runtime, C++ modules they load (matplotlib's, zmq's)
# can abort in ASan's exception interceptor. Leak detection is off
# here: CPython itself does not free everything at exit; native leaks are
# covered by the C tests under LeakSanitizer and by the fault wrapper's live
# object counts (tests/test_fault_injection.py). From `make test`
# (TEST_EXTRAS_INSTALLED=1) the venv already has the test extras.
ASAN_PKG := $(CURDIR)/build/asan
SANITIZE := -fsanitize=address,undefined
test-python-asan: $(VPY)
	$(if $(TEST_EXTRAS_INSTALLED),,$(PIP_INSTALL) '.[test]' 'setuptools>=77')
	rm -rf $(ASAN_PKG) build/asan-tmp
	mkdir -p $(ASAN_PKG)
	cp -r hrx $(ASAN_PKG)/
	# An in-place extension (pip install -e .) must not pass for the build.
	rm -f $(ASAN_PKG)/hrx/*.so
	HRX_TESTING_BUILD=1 \
	  CFLAGS="-O1 -g -fno-omit-frame-pointer $(SANITIZE) -fno-sanitize-recover=undefined" \
	  LDFLAGS="$(SANITIZE)" $(VPY) setup.py -q build_ext --force \
	  --build-lib $(ASAN_PKG) --build-temp build/asan-tmp
	cd tests && LD_PRELOAD="$$($(CC) -print-file-name=libasan.so)" \
	  ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  HRX_EXPECT_SANITIZED=$(ASAN_PKG) PYTHONPATH=$(ASAN_PKG) \
	  ../$(VPY) -m pytest -q -p no:cacheprovider -m 'not python_only' .

bench: $(VPY)
	$(PIP_INSTALL) '.[plot]'
	$(VENV)/bin/hrx-bench sweep --output $(RESULTS) $(SWEEP_ARGS)
	$(VENV)/bin/hrx-bench plot $(RESULTS) --out $(RESULTS:.jsonl=.png)

clean:
	rm -rf $(VENV) build tests/c/build *.egg-info
