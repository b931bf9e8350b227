# sluice: two commands for a newcomer.
#   make demo   installs what is missing, builds, runs the main job on embedded data
#   make test   installs what is missing, builds, runs every test
# More: make asan | tsan | threadsafety | fuzz | bench | bench-peers | format | install | clean

BUILD      ?= build
BUILD_ASAN ?= build-asan
BUILD_TSAN ?= build-tsan
BUILD_FUZZ ?= build-fuzz
BUILD_TSA  ?= build-tsa
JOBS       ?= $(shell nproc)
FUZZ_SECONDS ?= 30
# Tests left out under TSan: they parse tf.train.Example with Debian's (uninstrumented)
# libprotobuf, whose arena teardown trips TSan's allocator ("CHECK failed:
# sanitizer_allocator_secondary.h:297 IsAligned") before any test code runs concurrently.
# (GeneratedSetTest.TfrecordShardsParseBack parses the generated shards' Examples and
# dies the same way inside libprotobuf.) They are single-threaded and run under ASan and
# in make test.
TSAN_EXCLUDE ?= ExampleWireTest|ParseExampleTest|ParseSequenceExampleTest|example\.tfrecord_pipeline|GeneratedSetTest\.TfrecordShardsParseBack|SerializeTest\.EveryRegisteredKernelRoundTrips|SpecTest\.ImagenetSpecRuns
CMAKE_FLAGS ?=
PREFIX     ?= /usr/local
# ccache (the compiler launcher, CMakeLists.txt) keys objects by paths relative to the
# checkout, so a clone in another folder (CI's) reuses what an earlier build compiled.
export CCACHE_BASEDIR   ?= $(CURDIR)
export CCACHE_NOHASHDIR ?= 1

.PHONY: all deps build demo test asan tsan threadsafety fuzz bench bench-peers format install clean

all: build

deps:
	@./scripts/install_deps.sh

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)
	@ln -sf $(BUILD)/compile_commands.json compile_commands.json

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	./$(BUILD)/sluice demo

test: build
	ctest --test-dir $(BUILD) -j $(JOBS) --output-on-failure --timeout 600

asan: deps
	cmake -S . -B $(BUILD_ASAN) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSLUICE_SANITIZE=address,undefined -DSLUICE_BUILD_BENCH=OFF
	cmake --build $(BUILD_ASAN) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/scripts/lsan.supp \
	  ctest --test-dir $(BUILD_ASAN) -j $(JOBS) --output-on-failure --timeout 900

tsan: deps
	cmake -S . -B $(BUILD_TSAN) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLUICE_SANITIZE=thread -DSLUICE_BUILD_BENCH=OFF
	cmake --build $(BUILD_TSAN) -j $(JOBS)
	TSAN_OPTIONS=halt_on_error=1:suppressions=$(CURDIR)/scripts/tsan.supp ctest --test-dir $(BUILD_TSAN) -j $(JOBS) --output-on-failure --timeout 900 \
	  -E '$(TSAN_EXCLUDE)' 

# clang's -Wthread-safety over the library and the CLI (compile only, no test run): an
# access to GUARDED_BY state without its mutex is an error (src/core/thread_annotations.h).
# Then checks that clang still rejects tests/compile_fail/unguarded_access.cc (its three
# deliberate errors), so annotations that became no-ops cannot pass unnoticed.
TSA_FLAGS ?= -Wthread-safety -Wthread-safety-beta -Werror=thread-safety -Werror=thread-safety-beta
threadsafety: deps
	CC=clang CXX=clang++ cmake -S . -B $(BUILD_TSA) -G Ninja -DCMAKE_BUILD_TYPE=Debug \
	  -DCMAKE_CXX_FLAGS="$(TSA_FLAGS)" -DSLUICE_BUILD_TESTS=OFF -DSLUICE_BUILD_BENCH=OFF \
	  -DSLUICE_BUILD_PYTHON=OFF
	cmake --build $(BUILD_TSA) -j $(JOBS) --target sluice_cli
	@n=$$(clang++ -std=c++20 -Iinclude -Isrc $(TSA_FLAGS) -fsyntax-only \
	  tests/compile_fail/unguarded_access.cc 2>&1 | grep -c 'error: .*thread-safety'); \
	if [ "$$n" = 3 ]; then echo "threadsafety: clean; the deliberate violations are rejected"; \
	else echo "threadsafety: expected 3 errors from tests/compile_fail/unguarded_access.cc, got $$n"; exit 1; fi

fuzz: deps
	CC=clang CXX=clang++ cmake -S . -B $(BUILD_FUZZ) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DSLUICE_BUILD_FUZZ=ON -DSLUICE_BUILD_TESTS=OFF -DSLUICE_BUILD_BENCH=OFF \
	  -DSLUICE_SANITIZE=address,undefined -DSLUICE_LAYER_TYPE=STATIC
	cmake --build $(BUILD_FUZZ) -j $(JOBS)
	./scripts/run_fuzzers.sh $(BUILD_FUZZ) $(FUZZ_SECONDS)

# Headers, static libraries and the CMake package (find_package(sluice), sluice::sluice).
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

bench: build
	./scripts/run_benchmarks.sh $(BUILD)
	/usr/bin/python3 bench/side_by_side.py --build $(BUILD)

# Only the side-by-side comparison with PyTorch DataLoader and the bare decode loop.
bench-peers: build
	/usr/bin/python3 bench/side_by_side.py --build $(BUILD)

format:
	clang-format -i $$(git ls-files '*.h' '*.cc')

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_TSAN) $(BUILD_TSA) $(BUILD_FUZZ) compile_commands.json
