# Tests of the hip backend. Standalone, or included from another makefile
# (paths are relative to this file, variables are prefixed HIP_):
#
#   make -f tests/c/hip.mk hip-constants       # vs the real HIP headers
#   make -f tests/c/hip.mk hip-constants-cuda  # vs the real CUDA headers
#   make -f tests/c/hip.mk hip-rtc-prototypes  # hip_rtc.h vs hiprtc.h
#   make -f tests/c/hip.mk hip-rtc-prototypes-nvrtc  # hip_rtc.h vs nvrtc.h
#   make -f tests/c/hip.mk hip-compile-nvidia  # real NVRTC, no GPU
#   make -f tests/c/hip.mk hip-load            # real libamdhip64, no GPU
#   make -f tests/c/hip.mk hip-fake-cuda       # a stand-in libcudart
#   make -f tests/c/hip.mk hip-ptx-params      # the PTX parameter reader
#   make -f tests/c/hip.mk hip-device          # on a GPU machine
#   make -f tests/c/hip.mk hip-device-build    # its program, no GPU needed
#
# The run-time checks are programs of one scenario per process, each
# named after what it tests and linked with hip_test_support.c:
# test_hip_library_load (hip-load), test_hip_rtc (hip-load,
# hip-compile-nvidia), test_hip_fake_cudart (hip-fake-cuda) and
# test_hip_device (hip-device).
#
# hip-constants needs libamdhip64-dev (headers under $(HIP_INCLUDE)/hip);
# hip-load needs libamdhip64-5 ($(HIP_AMD_LIBRARY)) and no AMD GPU;
# hip-constants-cuda needs a CUDA toolkit's headers ($(CUDA_HOME)/include);
# hip-rtc-prototypes-nvrtc NVRTC's header ($(NVRTC_INCLUDE)/nvrtc.h, in a
# toolkit or the pip wheel nvidia-cuda-nvrtc); hip-compile-nvidia an NVRTC
# library ($(HIP_NVRTC_LIBRARY), from a toolkit or that wheel).

HIP_ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/../..)
CC ?= cc
HIP_BUILD ?= $(HIP_ROOT)/build/hip-tests
HIP_INCLUDE ?= /usr/include
CUDA_HOME ?= /usr/local/cuda
NVRTC_INCLUDE ?= $(CUDA_HOME)/include
HIP_NVRTC_LIBRARY ?= $(CUDA_HOME)/lib64/libnvrtc.so
HIP_AMD_LIBRARY ?= /usr/lib/x86_64-linux-gnu/libamdhip64.so.5
HIP_MISSING_LIBRARY ?= /nonexistent/hrx-test/libamdhip64.so

HIP_CFLAGS := -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -pthread \
  -I$(HIP_ROOT)/csrc/include -I$(HIP_ROOT)/csrc
# Newer ROCm headers deprecate names the table still binds on purpose.
HIP_CHECK_FLAGS := $(HIP_CFLAGS) -Werror=incompatible-pointer-types \
  -Wno-deprecated-declarations -fsyntax-only
HIP_SOURCES := $(wildcard $(HIP_ROOT)/csrc/base/*.c) \
  $(HIP_ROOT)/csrc/bench/bench_kernel_sources.c \
  $(wildcard $(HIP_ROOT)/csrc/drivers/hip/*.c)
HIP_HEADERS := $(wildcard $(HIP_ROOT)/csrc/drivers/hip/*.h) \
  $(wildcard $(HIP_ROOT)/csrc/hal/*.h) $(wildcard $(HIP_ROOT)/csrc/base/*.h) \
  $(HIP_ROOT)/csrc/bench/bench_kernel_sources.h \
  $(HIP_ROOT)/csrc/include/hrx.h
HIP_TEST_LIBRARY_LOAD := $(HIP_BUILD)/test_hip_library_load
HIP_TEST_RTC := $(HIP_BUILD)/test_hip_rtc
HIP_TEST_FAKE_CUDART := $(HIP_BUILD)/test_hip_fake_cudart
HIP_TEST_DEVICE := $(HIP_BUILD)/test_hip_device
HIP_TEST_PTX_PARAMS := $(HIP_BUILD)/test_hip_ptx_params
HIP_TEST_PROGRAMS := $(HIP_TEST_LIBRARY_LOAD) $(HIP_TEST_RTC) \
  $(HIP_TEST_FAKE_CUDART) $(HIP_TEST_DEVICE) $(HIP_TEST_PTX_PARAMS)
HIP_TEST_SUPPORT := $(HIP_ROOT)/tests/c/hip_test_support.c
# The stand-in libcudart (tests/c/fake_cudart.c), with and without the
# runtime's parameter query.
HIP_FAKE_CUDART := $(HIP_BUILD)/libfakecudart.so
HIP_FAKE_CUDART_DRIVER := $(HIP_BUILD)/libfakecudart-driver.so
HIP_FAKE_FLAGS := -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -shared \
  -fPIC -fvisibility=hidden

.PHONY: hip-constants hip-constants-cuda hip-rtc-prototypes \
  hip-rtc-prototypes-nvrtc hip-load hip-fake-cuda hip-compile-nvidia \
  hip-device hip-device-build hip-ptx-params

hip-constants:
	$(CC) $(HIP_CHECK_FLAGS) -D__HIP_PLATFORM_AMD__ -isystem $(HIP_INCLUDE) \
	  $(HIP_ROOT)/tests/c/test_hip_constants.c
	@echo "PASS hip-constants (HIP headers in $(HIP_INCLUDE)/hip)"

hip-rtc-prototypes:
	$(CC) $(HIP_CHECK_FLAGS) -D__HIP_PLATFORM_AMD__ -isystem $(HIP_INCLUDE) \
	  $(HIP_ROOT)/tests/c/test_hip_rtc_prototypes.c
	@echo "PASS hip-rtc-prototypes (hiprtc.h in $(HIP_INCLUDE)/hip)"

hip-rtc-prototypes-nvrtc:
	$(CC) $(HIP_CHECK_FLAGS) -DHRX_CHECK_NVRTC -isystem $(NVRTC_INCLUDE) \
	  $(HIP_ROOT)/tests/c/test_hip_rtc_prototypes.c
	@echo "PASS hip-rtc-prototypes-nvrtc (nvrtc.h in $(NVRTC_INCLUDE))"

hip-constants-cuda:
	$(CC) $(HIP_CHECK_FLAGS) -DHRX_CHECK_CUDA -isystem $(CUDA_HOME)/include \
	  $(HIP_ROOT)/tests/c/test_hip_constants.c
	@echo "PASS hip-constants-cuda (CUDA headers in $(CUDA_HOME)/include)"

$(HIP_TEST_PROGRAMS): $(HIP_BUILD)/%: $(HIP_ROOT)/tests/c/%.c \
    $(HIP_TEST_SUPPORT) $(HIP_ROOT)/tests/c/hip_test_support.h \
    $(HIP_SOURCES) $(HIP_HEADERS) $(HIP_ROOT)/tests/c/fake_cudart.h
	@mkdir -p $(HIP_BUILD)
	$(CC) $(HIP_CFLAGS) -g -o $@ $< $(HIP_TEST_SUPPORT) $(HIP_SOURCES) -ldl

$(HIP_FAKE_CUDART): $(HIP_ROOT)/tests/c/fake_cudart.c \
    $(HIP_ROOT)/tests/c/fake_cudart.h
	@mkdir -p $(HIP_BUILD)
	$(CC) $(HIP_FAKE_FLAGS) -o $@ $<

$(HIP_FAKE_CUDART_DRIVER): $(HIP_ROOT)/tests/c/fake_cudart.c \
    $(HIP_ROOT)/tests/c/fake_cudart.h
	@mkdir -p $(HIP_BUILD)
	$(CC) $(HIP_FAKE_FLAGS) -DFAKE_NO_FUNC_PARAM_INFO -DFAKE_NO_NODE_ENABLE \
	  -o $@ $<

# The NVIDIA kernel path against the stand-in libcudart; needs nothing
# installed.
hip-fake-cuda: $(HIP_TEST_FAKE_CUDART) $(HIP_FAKE_CUDART) \
    $(HIP_FAKE_CUDART_DRIVER)
	$(HIP_TEST_FAKE_CUDART) fake-cuda $(HIP_FAKE_CUDART)
	$(HIP_TEST_FAKE_CUDART) fake-cuda-driver $(HIP_FAKE_CUDART_DRIVER)

# PTX text as NVRTC writes it; needs nothing installed.
hip-ptx-params: $(HIP_TEST_PTX_PARAMS)
	$(HIP_TEST_PTX_PARAMS)

hip-load: $(HIP_TEST_LIBRARY_LOAD) $(HIP_TEST_RTC)
	env -u HRX_PYTHON_SITE_DIRS $(HIP_TEST_LIBRARY_LOAD) \
	  amd-no-device $(HIP_AMD_LIBRARY)
	env -u HRX_PYTHON_SITE_DIRS $(HIP_TEST_LIBRARY_LOAD) \
	  amd-no-device-opening $(HIP_AMD_LIBRARY)
	env -u HRX_PYTHON_SITE_DIRS $(HIP_TEST_LIBRARY_LOAD) \
	  missing-library $(HIP_MISSING_LIBRARY)
	env -u HRX_RTC_LIBRARY $(HIP_TEST_RTC) amd-compile $(HIP_AMD_LIBRARY)
	$(HIP_TEST_RTC) rtc-missing $(HIP_MISSING_LIBRARY)

hip-compile-nvidia: $(HIP_TEST_RTC)
	env -u HRX_RTC_LIBRARY $(HIP_TEST_RTC) nvidia-compile \
	  $(HIP_NVRTC_LIBRARY)

hip-device: $(HIP_TEST_DEVICE)
	env -u HRX_HIP_LIBRARY $(HIP_TEST_DEVICE) device

# The device test's program, built where there is no GPU to run it.
hip-device-build: $(HIP_TEST_DEVICE)
	@echo "BUILT $(HIP_TEST_DEVICE) (make -f tests/c/hip.mk hip-device runs it)"
