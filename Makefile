# The two commands the README opens with, and the ones around them.
BUILD ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps deps-demo build demo check bench install clean

all: build

deps:
	@bash scripts/install-deps.sh

# What the demo builds and runs, and no more (no browser, Go, valgrind,
# perf or servers: those are the tests').
deps-demo:
	@bash scripts/install-deps.sh demo

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS)

# Configured again each time: a build directory first configured by
# `make demo` then finds the test tools `make deps` installed since.
build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS) > /dev/null
	cmake --build $(BUILD) -j $(JOBS)

demo: deps-demo $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target profil_cli run_demo
	@bash examples/demo.sh $(BUILD)

check: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

bench: build
	@bash bench/run.sh $(BUILD)

install: build
	cmake --install $(BUILD) --prefix $(or $(PREFIX),/usr/local)

clean:
	rm -rf $(BUILD)
