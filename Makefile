# gossipd top-level entry points. `make test` and `make demo` install whatever is missing themselves.
SHELL := /bin/bash
BUILD ?= build/release
ASAN_BUILD ?= build/asan
TSAN_BUILD ?= build/tsan
# The threaded code (the ZeroMQ transport's I/O thread, membership and the daemon's membership thread,
# the engine it feeds, the trainer bridge's parameter copies, the node's background checkpoint writer and
# evaluations) runs under TSan.
TSAN_TESTS := test_engine test_transport_zmq test_membership test_membership_runner test_param_copy test_node_parts
JOBS ?= $(shell nproc)
GOSSIPD := $(BUILD)/daemon/gossipd
# ccache (CMakeLists.txt uses it when installed): paths relative to the source tree, so every clone and
# worktree on this machine shares one cache.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1

# Debian packages the build, tests, demo and plots need.
DEB_PACKAGES := build-essential cmake ninja-build ccache pkg-config zlib1g-dev \
  libzmq3-dev cppzmq-dev libeigen3-dev libboost-dev libspdlog-dev doctest-dev \
  libtomlplusplus-dev nlohmann-json3-dev libbenchmark-dev dataset-fashion-mnist \
  python3 python3-numpy python3-matplotlib python3-zmq curl prometheus iproute2 \
  libjs-chart.js libjs-d3 python3-torch
# Only `make test-long` needs these (the headless-browser test of the dashboard): a fresh machine's
# `make test` does not download a browser.
DEB_PACKAGES_LONG := chromium chromium-driver python3-selenium

.PHONY: all deps deps-long build build-asan build-tsan build-fuzz fuzz test test-long test-all demo bench clean docker-base docker-image docker-test

all: build

# apt-get install of whichever of PKGS is missing.
define install_missing
	@missing=$$(for p in $(1); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q "install ok installed" || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:" $$missing; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q --no-install-recommends $$missing; \
	fi
endef

deps:
	$(call install_missing,$(DEB_PACKAGES))

deps-long: deps
	$(call install_missing,$(DEB_PACKAGES_LONG))

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# Only what `ctest -L unit` runs (tests/CMakeLists.txt, target unit_tests): the daemon's binary, the
# simulator's and the benches are not run under ASan, so they are not built there.
build-asan: deps
	[ -f $(ASAN_BUILD)/build.ninja ] || cmake --preset asan
	cmake --build $(ASAN_BUILD) -j $(JOBS) --target unit_tests

build-tsan: deps
	[ -f $(TSAN_BUILD)/build.ninja ] || cmake --preset tsan
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target $(TSAN_TESTS)

# libFuzzer targets (fuzz/): clang with ASan+UBSan. `make fuzz` runs each for FUZZ_SECONDS (default 600).
FUZZ_SECONDS ?= 600
FUZZ_TARGETS := fuzz_frame fuzz_codecs fuzz_engine fuzz_checkpoint fuzz_config
build-fuzz: deps
	@dpkg-query -W -f='$${Status}\n' clang libclang-rt-dev 2>/dev/null | grep -c "install ok installed" | grep -q 2 || \
	  { SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q --no-install-recommends clang libclang-rt-dev; }
	[ -f build/fuzz/build.ninja ] || cmake --preset fuzz
	cmake --build build/fuzz -j $(JOBS) --target $(FUZZ_TARGETS)

fuzz: build-fuzz
	./scripts/fuzz_run.sh $(FUZZ_SECONDS)

# `make test`: the unit tests and the integration tests not labelled `long`, in the release build: one
# compile of the tree (the budget: under 15 minutes from a clean clone on a quiet 2-core machine).
# `make test-long`: the same unit tests again under ASan+UBSan (a second compile of them, with float64 state:
# the exact methods' machine-precision checks, core/real.h), the threaded
# code's tests under ThreadSanitizer (the engine, transport, membership, membership thread and parameter
# copies), the slow multi-process tests (label `long`: network namespaces, a real Prometheus, headless
# Chromium, trainers under kill -9) and every fuzz target for a short smoke run (FUZZ_SMOKE_SECONDS each,
# from the committed corpus and regressions). `.ci/run` runs both and then the docker tests; `make test-all`
# runs both here.
FUZZ_SMOKE_SECONDS ?= 15
test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -LE long

test-long: deps-long build build-asan build-tsan build-fuzz
	cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS) -L unit
	set -e; for t in $(TSAN_TESTS); do echo "== TSan: $$t"; TSAN_OPTIONS="halt_on_error=1 suppressions=$(CURDIR)/tests/tsan.supp" $(TSAN_BUILD)/tests/$$t; done
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L long
	./scripts/fuzz_run.sh $(FUZZ_SMOKE_SECONDS)

test-all: test test-long

demo: build
	./scripts/demo.sh $(GOSSIPD)

bench: build
	mkdir -p bench/results
	$(BUILD)/bench/bench_compressors --out bench/results/compressors.json

# Docker (docker/README.md): the base image when it cannot be pulled, the gossipd image, and the tests on
# real containers (compose clusters, chaos, swarm; tens of minutes, not part of `make test`).
DOCKER_IMAGE ?= gossipd:latest
docker-base:
	./scripts/docker_base_image.sh

docker-image: docker-base
	nice docker build -f docker/Dockerfile -t $(DOCKER_IMAGE) .

docker-test: docker-image
	GOSSIPD_IMAGE=$(DOCKER_IMAGE) ./tests/docker/run_all.sh

clean:
	rm -rf build
