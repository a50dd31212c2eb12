# MacroEngine — `make run` and `make test` work on a fresh Debian 12 machine with Swift 6.3:
# they install the system packages they need (JavaScriptCore from WebKitGTK) when missing.

SWIFT      ?= swift
PKG        := javascriptcoregtk-4.1
APT_PKGS   := libjavascriptcoregtk-4.1-dev pkg-config node-acorn libstdc++-12-dev
# acorn parses macro files before anything of them runs (Sources/MacroEngineCore/JavaScript/ShapeCheck.swift).
ACORN      := /usr/share/nodejs/acorn/dist/acorn.js
SUDO       := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
STATE_DIR  := .run

.PHONY: path-count otel otel-test format format-check docs-check deb deb-deps deb-test packaging-test install-user-files all release-check deps test-deps tool-deps browser-deps codemirror-deps web-deps web-check build release run demo test bench bench-ladder bench-deps fuzz sanitize soak completions install-user clean help

all: build

help:
	@echo "make run           build (release), then start macrod in the foreground on the repo's config/ and macros/"
	@echo "make test          build and run the whole test suite"
	@echo "make docs-check    check that every relative link and #anchor in README.md and docs/*.md resolves"
	@echo "make format        format the Swift files with swift-format (.swift-format); make format-check: only check"
	@echo "make demo          build, then run the demo macros in-process (no daemon)"
	@echo "make bench         benchmark macrod against Redis FCALL, a plain Node.js server, a minimal server (the floor), a bare socket and a minimal JSC process"
	@echo "make bench-ladder  the benchmark's ladder alone: one macro.call step by step in-process (ns and allocations per step)"
	@echo "make fuzz          libFuzzer on the JSON-RPC line decoder and on macro-file loading (FUZZ_SECONDS each)"
	@echo "make sanitize      the test suite under AddressSanitizer, then ThreadSanitizer"
	@echo "make soak          100,000 calls, 1,000 reloads, 1,000 connections, a million pipelined requests: RSS before/after"
	@echo "make completions   write shell completions for macro into .build/completions/"
	@echo "make deb           build the Debian package macroengine_VERSION_ARCH.deb (release binaries, unit, completions, man pages)"
	@echo "make deb-test      install that package on this machine, run macrod and macro from it, purge it (root)"
	@echo "make packaging-test  the packaging scripts' checks that need no build (shipped macros, lintian as root)"
	@echo "make install-user  install macro, macrod, the config and the systemd user unit under ~"
	@echo "make path-count    count the functions of ours one macro.call enters, by gdb on a debug macrod (docs/design.md)"
	@echo "make otel          build macro-otel (Integrations/otel): run records as OpenTelemetry spans; not part of make test"
	@echo "make otel-test     macro-otel's tests, and end to end against a private macrod and an OTLP/HTTP receiver (MACROD=path: that macrod)"
	@echo "make deps          install $(APT_PKGS) with apt-get when pkg-config cannot find $(PKG)"
	@echo "make test-deps     install the PyPI helpers the tests use ($(PY_PKGS)) into $(PY_DEPS)"
	@echo "make web-check     type-check (tsc) and lint (eslint) the dashboard's scripts in $(WEB_DIR)"
	@echo "make browser-deps  install chromium, chromium-driver, libjs-codemirror and python3-venv when missing, and selenium (PyPI) into $(BROWSER_VENV)"

# Installs JavaScriptCore's development package when pkg-config does not find it.
deps:
	@if ! pkg-config --exists $(PKG) 2>/dev/null || [ ! -f $(ACORN) ] || ! clang -print-file-name=libstdc++.a 2>/dev/null | grep -q /; then \
		echo "==> installing $(APT_PKGS) (pkg-config cannot find $(PKG), $(ACORN) is missing, or libstdc++.a, which macro links statically)"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(APT_PKGS); \
	fi
	@pkg-config --exists $(PKG) || { echo "error: $(PKG) still missing after apt-get" >&2; exit 1; }
	@[ -f $(ACORN) ] || { echo "error: $(ACORN) still missing after apt-get (node-acorn)" >&2; exit 1; }

# The dashboard's editor: CodeMirror 5 from Debian, served by macrod from /usr/share/javascript/codemirror.
CODEMIRROR := /usr/share/javascript/codemirror/lib/codemirror.js
codemirror-deps:
	@if [ ! -f $(CODEMIRROR) ]; then \
		echo "==> installing libjs-codemirror (the dashboard's editor)"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libjs-codemirror; \
	fi

# The dashboard's browser test (Tests/Browser): headless Chromium driven by selenium. selenium
# comes from PyPI into a virtual environment and uses Debian's chromedriver (an explicit path: no
# Selenium Manager downloads).
BROWSER_VENV := .build/browser-venv
browser-deps:
	@missing=""; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	command -v chromedriver >/dev/null || missing="$$missing chromium-driver"; \
	[ -f $(CODEMIRROR) ] || missing="$$missing libjs-codemirror"; \
	command -v python3 >/dev/null || missing="$$missing python3"; \
	python3 -c 'import ensurepip, venv' 2>/dev/null || missing="$$missing python3-venv"; \
	if [ -n "$$missing" ]; then \
		echo "==> installing$$missing (the dashboard's browser test)"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
	@[ -x $(BROWSER_VENV)/bin/python ] || python3 -m venv $(BROWSER_VENV)
	@$(BROWSER_VENV)/bin/python -c 'import selenium' 2>/dev/null || $(BROWSER_VENV)/bin/pip install -q 'selenium>=4.11,<5'
	@$(BROWSER_VENV)/bin/python -c 'import selenium' || { echo "error: selenium is missing from $(BROWSER_VENV)" >&2; exit 1; }

build: deps
	$(SWIFT) build

# Release binaries: `macro-local` and `macrod` use the Swift runtime and Foundation as shared
# libraries, which the package installs once, in /usr/lib/macroengine (RUNPATH
# $ORIGIN/../lib/macroengine; in .build the toolchain's own folder, first in the RUNPATH, serves
# them); linked statically into each binary they would make it 188 MB installed
# (docs/performance.md, "Installed size"). `macro` links them statically all the same (Package.swift):
# loading a dozen shared libraries would more than double its start, most of `macro run`.
# Every target that uses the release binaries builds them with these flags and asks for their
# folder with the same flags (RELEASE_BIN), so one build serves them all: `make run && make deb &&
# make run` compiles once. They link with lld, as `macro` always does (Package.swift): the static
# Foundation's temporary-file helper calls mktemp(3), and gold prints glibc's link-time note
# about it ("the use of `mktemp' is dangerous") for every binary that links Foundation; lld
# does not print those notes.
RELEASE_FLAGS := -c release -Xswiftc -use-ld=lld -Xlinker -rpath=\$$ORIGIN/../lib/macroengine
RELEASE_BIN    = $(SWIFT) build $(RELEASE_FLAGS) --show-bin-path
release: deps
	$(SWIFT) build $(RELEASE_FLAGS)

# CI's check of the release binaries `make run` and `make bench` use: each must parse its
# arguments (a statically linked Swift runtime once lost argv; debug builds did not show it;
# `macro --help` would print the root help even then, so macro and macro-local are asked for
# `run --help`), and macro must not link JavaScriptCore (docs/cli.md, "A thin macro") nor load
# the Swift runtime as shared libraries (Package.swift: its start is most of `macro run`).
release-check: release
	@BIN=$$($(RELEASE_BIN)); \
	for tool in macro macrod macro-bench; do \
		out=$$(timeout 10 $$BIN/$$tool --help 2>&1 | head -1); \
		case "$$out" in OVERVIEW:*) echo "==> $$tool --help: ok";; \
		*) echo "error: release $$tool --help printed '$$out', not its help" >&2; exit 1;; esac; \
	done; \
	for tool in macro macro-local; do \
		out=$$(timeout 10 $$BIN/$$tool run --help 2>&1 | head -1); \
		case "$$out" in "OVERVIEW: Run a macro"*) echo "==> $$tool run --help: ok";; \
		*) echo "error: release $$tool run --help printed '$$out', not run's help" >&2; exit 1;; esac; \
	done; \
	if ldd $$BIN/macro | grep -q javascriptcoregtk; then echo "error: release macro links JavaScriptCore" >&2; exit 1; fi; \
	echo "==> macro links no JavaScriptCore"; \
	if ldd $$BIN/macro | grep -qE 'libswift|Foundation'; then echo "error: release macro loads the Swift runtime as a shared library (Package.swift links it statically)" >&2; exit 1; fi; \
	echo "==> macro links the Swift runtime statically"

# The main job: macrod in the foreground with the repo's config/ and macros/ (Ctrl-C stops it).
run: release codemirror-deps
	@mkdir -p $(STATE_DIR)
	@BIN=$$($(RELEASE_BIN)); \
	SOCK=$${MACROENGINE_SOCKET:-$${XDG_RUNTIME_DIR:+$$XDG_RUNTIME_DIR/macroengine/macrod.sock}}; \
	SOCK=$${SOCK:-/tmp/macroengine-$$(id -u)/macrod.sock}; \
	echo "==> macrod on $$SOCK"; \
	echo "    macros: $(CURDIR)/macros   state: $(CURDIR)/$(STATE_DIR)/state.json   Ctrl-C stops it"; \
	echo "    In another terminal, try:"; \
	echo "      $$BIN/macro run random          # the seed's template moves the rings"; \
	echo "      $$BIN/macro progress --watch    # the rings, redrawn live"; \
	echo "      $$BIN/macro edit bump           # edit a macro; it is live when saved"; \
	echo "      $$BIN/macro dashboard           # a one-time URL of the dashboard (macrod prints its URL below too)"; \
	echo "      echo '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"macro.list\"}' | socat -t 5 - UNIX-CONNECT:$$SOCK"; \
	exec $$BIN/macrod --config config/macroengine.yaml --socket "$$SOCK" --state $(STATE_DIR)/state.json

# The demo without the daemon: the macros run in-process.
demo: release
	@mkdir -p $(STATE_DIR)
	@BIN=$$($(RELEASE_BIN)); \
	ARGS="--config config/macroengine.yaml --state $(STATE_DIR)/demo-state.json"; \
	set -x; \
	$$BIN/macro list $$ARGS && \
	$$BIN/macro run random $$ARGS && \
	$$BIN/macro run random $$ARGS && \
	$$BIN/macro run bump $$ARGS outer 2.5

# PyPI helpers the tests drive macrod with (a third-party JSON-RPC client, Prometheus' text parser), into .build/python
# (pip --target: no virtualenv needed, the system's Python is left alone).
PY_DEPS    := .build/python
PY_PKGS    := tinyrpc==1.1.7 prometheus_client==0.26.0 dap-python==0.5.0
test-deps:
	@if ! PYTHONPATH=$(PY_DEPS) python3 -c 'import tinyrpc, prometheus_client, dap' 2>/dev/null; then \
		echo "==> installing $(PY_PKGS) into $(PY_DEPS) (a JSON-RPC client the protocol tests use; the Prometheus text parser the metrics tests use; dap-python, the DAP client macro dap is tested with)"; \
		if ! python3 -m pip --version >/dev/null 2>&1; then \
			$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
			$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-pip; \
		fi; \
		python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --target $(PY_DEPS) $(PY_PKGS); \
	fi
	@PYTHONPATH=$(PY_DEPS) python3 -c 'import tinyrpc, prometheus_client, dap' || { echo "error: tinyrpc, prometheus_client or dap (dap-python) missing in $(PY_DEPS)" >&2; exit 1; }


# Tools the tests drive as a user would: TypeScript's checker on the shipped macros (tsc, from
# node-typescript), `macro edit` with vim in a real terminal (tmux), and systemd-analyze on the
# shipped unit (SystemdUnitTests). Installed when missing.
TEST_TOOLS := tsc:node-typescript vim:vim tmux:tmux systemd-analyze:systemd
tool-deps: deps
	@missing=""; for pair in $(TEST_TOOLS); do \
		command -v $${pair%%:*} >/dev/null || missing="$$missing $${pair#*:}"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "==> installing$$missing (the tests use them)"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
	@for pair in $(TEST_TOOLS); do command -v $${pair%%:*} >/dev/null || { echo "error: $${pair%%:*} still missing after apt-get" >&2; exit 1; }; done
	@if ! command -v emacs >/dev/null || ! ls -d /usr/share/emacs/site-lisp/elpa/dap-mode-* >/dev/null 2>&1; then \
		echo "==> installing emacs-nox and elpa-dap-mode (Emacs' DAP client: the tests debug a macro with it)"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends emacs-nox elpa-dap-mode; \
	fi

# The dashboard's page (WEB_DIR, compiled into macrod by Plugins/EmbedWebAssets): TypeScript's
# checker on its scripts against the DOM library (WEB_DIR/tsconfig.json, strict), and ESLint
# (WEB_DIR/.eslintrc.json), both Debian's (node-typescript, eslint), installed when missing.
# Debian's eslint finds its modules in /usr/share/nodejs, which only Debian's own nodejs searches
# by itself: NODE_PATH names it for any other node (NodeSource's, say).
WEB_DIR   := Sources/MacroHTTP/Web
WEB_TOOLS := tsc:node-typescript eslint:eslint
web-deps:
	@missing=""; for pair in $(WEB_TOOLS); do \
		command -v $${pair%%:*} >/dev/null || missing="$$missing $${pair#*:}"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "==> installing$$missing (make web-check)"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
	@for pair in $(WEB_TOOLS); do command -v $${pair%%:*} >/dev/null || { echo "error: $${pair%%:*} still missing after apt-get" >&2; exit 1; }; done

web-check: web-deps
	@passed=0; failed=0; \
	echo "==> tsc $$(tsc --version | sed 's/^Version //') -p $(WEB_DIR)"; \
	if tsc -p $(WEB_DIR); then passed=$$((passed + 1)); else failed=$$((failed + 1)); echo "web-check: tsc failed" >&2; fi; \
	export NODE_PATH=/usr/share/nodejs:/usr/lib/nodejs$${NODE_PATH:+:$$NODE_PATH}; \
	echo "==> eslint $$(eslint --version) $(WEB_DIR)/*.js"; \
	if eslint --max-warnings 0 $(WEB_DIR)/*.js; then passed=$$((passed + 1)); else failed=$$((failed + 1)); echo "web-check: eslint failed" >&2; fi; \
	echo "web-check: $$passed passed, $$failed failed"; \
	[ $$failed -eq 0 ]

# The 100,000-request load test runs on its own afterwards, so it does not starve the suites
# whose timing matters (browser, restarts, live edits) of the machine's cores; so does the
# dashboard in headless Chromium, whose waits once ran out beside the memory-bomb tests.
# A crash prints only the crashed thread's frames (no registers, no image list), so the last
# lines of a CI log name the test and the code that crashed.
TEST_BACKTRACE := SWIFT_BACKTRACE=enable=yes,threads=crashed,registers=none,images=none
test: deps test-deps docs-check format-check web-check tool-deps browser-deps
	$(SWIFT) build --build-tests
	$(TEST_BACKTRACE) $(SWIFT) test --skip-build --skip MacroDaemonTests.LoadTests --skip MacroHTTPTests.DashboardBrowserTests
	$(TEST_BACKTRACE) $(SWIFT) test --skip-build --filter MacroHTTPTests.DashboardBrowserTests
	$(TEST_BACKTRACE) $(SWIFT) test --skip-build --filter MacroDaemonTests.LoadTests
	$(MAKE) --no-print-directory packaging-test
	$(MAKE) --no-print-directory deb-test

# Every relative link and #anchor in README.md and docs/*.md resolves (GitHub's anchor slugs).
docs-check:
	python3 Tests/Docs/check_links.py $(CURDIR)

# swift-format (in the Swift toolchain) with .swift-format: `make format` rewrites the Swift files,
# `make format-check` (run by `make test`) fails when one is not formatted.
FORMAT_PATHS := Sources Tests Plugins Package.swift Integrations/otel/Sources Integrations/otel/Tests Integrations/otel/Package.swift
format:
	$(SWIFT) format format --in-place --recursive --parallel $(FORMAT_PATHS)

format-check:
	$(SWIFT) format lint --strict --recursive --parallel $(FORMAT_PATHS)

# The Debian package (packaging/build-deb.sh): the release binaries, the systemd user unit,
# completions, man pages (swift-argument-parser's generate-manual), the example config and
# macros; Depends from dpkg-shlibdeps and dpkg-query; checked by lintian. dpkg-dev (dpkg-shlibdeps,
# dpkg-parsechangelog), chrpath (the binaries' RUNPATH), lintian and systemd (systemd-analyze, for
# deb-test) are installed when missing. dpkg-deb --root-owner-group makes the files root's without
# fakeroot.
DEB_TOOLS := dpkg-shlibdeps:dpkg-dev dpkg-parsechangelog:dpkg-dev chrpath:chrpath lintian:lintian systemd-analyze:systemd man:man-db
deb-deps: deps codemirror-deps
	@missing=""; for pair in $(DEB_TOOLS); do \
		command -v $${pair%%:*} >/dev/null || case " $$missing " in *" $${pair#*:} "*) ;; *) missing="$$missing $${pair#*:}";; esac; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "==> installing$$missing (make deb uses them)"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
	@for pair in $(DEB_TOOLS); do command -v $${pair%%:*} >/dev/null || { echo "error: $${pair%%:*} still missing after apt-get" >&2; exit 1; }; done

deb: deb-deps release
	$(SWIFT) build $(RELEASE_FLAGS) --product generate-manual
	@SWIFT="$(SWIFT)" RELEASE_FLAGS="$(RELEASE_FLAGS)" bash packaging/build-deb.sh

# The packaging scripts' checks that need no release build (Tests/Package/packaging-test.sh):
# only the macros git tracks are shipped, lintian runs as root from a 0700 checkout, and the
# man pages (from the debug build) are macro-run(1)-style, macrod(8) with ENVIRONMENT and FILES.
packaging-test: deb-deps
	SWIFT="$(SWIFT)" bash Tests/Package/packaging-test.sh

# Installs the package built by `make deb` on this machine, runs it, purges it, and checks that
# nothing it installed is left (Tests/Package/deb-test.sh; root, or sudo). `make test` runs it
# last: its release build is the one `make release-check` uses afterwards in CI.
deb-test: deb
	$(SUDO) bash Tests/Package/deb-test.sh

# docs/design.md's count of the functions one macro.call enters (Benchmarks/call_path.py): gdb
# stops a debug macrod where the path changes hands and prints the stacks.
path-count: deps
	@command -v gdb >/dev/null || { echo "==> installing gdb"; $(SUDO) apt-get install -y gdb; }
	$(SWIFT) build --product macrod
	python3 Benchmarks/call_path.py --macrod "$$($(SWIFT) build --show-bin-path)/macrod"

# macro-otel (Integrations/otel; docs/observability.md, "OpenTelemetry spans"): run records as
# OpenTelemetry spans through swift-otel, in a package of its own so that `make test` and CI never
# build swift-otel (its first build alone takes minutes). `make otel` builds it (release);
# `make otel-test` runs its unit tests on that build (--disable-testable-imports: with testable
# imports every module is compiled again, 10 minutes here), then Integrations/otel/test.py: a private
# macrod (the root package's debug build, or MACROD=PATH), an OTLP/HTTP receiver in Python
# (http/json, and http/protobuf decoded with opentelemetry-proto from PyPI, installed into
# OTEL_PY), macro-otel between them, and the hostile cases.
OTEL_PKG     := Integrations/otel
OTEL_FLAGS   := -c release --package-path $(OTEL_PKG)
OTEL_PY      := $(OTEL_PKG)/.build/python
OTEL_PY_PKGS := opentelemetry-proto==1.45.2
MACROD       ?=
otel:
	$(SWIFT) build $(OTEL_FLAGS)
	@echo "built: $$($(SWIFT) build $(OTEL_FLAGS) --show-bin-path)/macro-otel"

otel-test: otel
	@if ! PYTHONPATH=$(OTEL_PY) python3 -c 'import opentelemetry.proto.trace.v1.trace_pb2' 2>/dev/null; then \
		echo "==> installing $(OTEL_PY_PKGS) into $(OTEL_PY) (the test's receiver decodes OTLP/HTTP protobuf with it)"; \
		python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --target $(OTEL_PY) $(OTEL_PY_PKGS); \
	fi
	$(SWIFT) test $(OTEL_FLAGS) --disable-testable-imports
	@if [ -z "$(MACROD)" ]; then $(MAKE) --no-print-directory deps && $(SWIFT) build --product macrod; fi
	PYTHONPATH=$(OTEL_PY) python3 $(OTEL_PKG)/test.py \
		--macrod "$(if $(MACROD),$(MACROD),$$($(SWIFT) build --show-bin-path)/macrod)" \
		--macro-otel "$$($(SWIFT) build $(OTEL_FLAGS) --show-bin-path)/macro-otel"

# The benchmark table (docs/performance.md): a private macrod and a private redis-server on Unix
# sockets in a temporary directory. BENCH_ARGS passes options (macro-bench --help).
BENCH_ARGS ?=
bench-deps: deps
	@missing=""; \
	command -v redis-server >/dev/null && command -v redis-cli >/dev/null || missing="$$missing redis-server redis-tools"; \
	command -v node >/dev/null || command -v nodejs >/dev/null || missing="$$missing nodejs"; \
	command -v strace >/dev/null || missing="$$missing strace"; \
	if [ -n "$$missing" ]; then \
		echo "==> installing$$missing (the benchmark's anchors: Redis, the Node.js server; strace counts system calls)"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
	@command -v cc >/dev/null || { echo "error: a C compiler (cc) is needed for the minimal JSC baseline" >&2; exit 1; }

# After the table, the ladder (docs/performance.md): one macro.call step by step in-process, with
# the heap allocations of each step counted by Benchmarks/malloc-count.c (preloaded).
bench: bench-deps release
	@mkdir -p .build/bench
	cc -O2 -o .build/bench/minimal-jsc Benchmarks/minimal-jsc.c $$(pkg-config --cflags --libs $(PKG))
	cc -O2 -shared -fPIC -o .build/bench/malloc-count.so Benchmarks/malloc-count.c
	@BIN=$$($(RELEASE_BIN)); \
	$$BIN/macro-bench --minimal-jsc .build/bench/minimal-jsc --node-server Benchmarks/node-server.js $(BENCH_ARGS) && \
	LD_PRELOAD=$(CURDIR)/.build/bench/malloc-count.so $$BIN/macro-bench ladder $(LADDER_ARGS)

# The ladder alone (quicker than make bench: no Redis, Node.js or strace).
bench-ladder: release
	@mkdir -p .build/bench
	cc -O2 -shared -fPIC -o .build/bench/malloc-count.so Benchmarks/malloc-count.c
	@BIN=$$($(RELEASE_BIN)); \
	LD_PRELOAD=$(CURDIR)/.build/bench/malloc-count.so $$BIN/macro-bench ladder $(LADDER_ARGS)

# libFuzzer (swiftc -sanitize=fuzzer, with AddressSanitizer) on each target for FUZZ_SECONDS,
# starting from the checked-in corpus; new inputs go to .build-fuzz/corpus, crashes to
# .build-fuzz/crash-* (add them to Fuzz/corpus/TARGET to keep them as regression inputs).
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := rpc-line macro-file
fuzz: deps
	$(SWIFT) build --scratch-path .build-fuzz --product macro-fuzz -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING -Xswiftc -use-ld=lld
	@BIN=$$($(SWIFT) build --scratch-path .build-fuzz --show-bin-path); \
	for target in $(FUZZ_TARGETS); do \
		mkdir -p .build-fuzz/corpus/$$target; \
		echo "==> fuzzing $$target for $(FUZZ_SECONDS) s"; \
		if ASAN_OPTIONS=detect_leaks=0 $$BIN/macro-fuzz $$target -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -timeout=10 \
			-rss_limit_mb=4096 -artifact_prefix=.build-fuzz/crash-$$target- -print_final_stats=1 \
			.build-fuzz/corpus/$$target Fuzz/corpus/$$target > .build-fuzz/$$target.log 2>&1; then \
			grep -E "^Done|number_of_executed_units|new_units_added|peak_rss_mb" .build-fuzz/$$target.log; \
		else \
			tail -40 .build-fuzz/$$target.log; echo "error: fuzz target $$target failed; the input is in .build-fuzz/crash-$$target-*" >&2; exit 1; \
		fi; \
	done

# The test suite under AddressSanitizer, then ThreadSanitizer (separate build folders).
sanitize: deps test-deps browser-deps
	$(SWIFT) build --build-tests --scratch-path .build-asan -Xswiftc -sanitize=address -Xswiftc -use-ld=lld
	ASAN_OPTIONS=detect_leaks=0 MACROENGINE_LOAD_RSS_BOUND_MIB=2048 $(SWIFT) test --skip-build --scratch-path .build-asan
	$(SWIFT) build --build-tests --scratch-path .build-tsan -Xswiftc -sanitize=thread -Xswiftc -DTSAN -Xswiftc -use-ld=lld
	TSAN_OPTIONS="halt_on_error=1 suppressions=$(CURDIR)/Tests/tsan-suppressions.txt" MACROENGINE_LOAD_RSS_BOUND_MIB=2048 $(SWIFT) test --skip-build --scratch-path .build-tsan

# The leak soak (docs/reliability.md): fails when the daemon's RSS grows past the bound.
soak: release
	@BIN=$$($(RELEASE_BIN)); $$BIN/macro-bench soak $(SOAK_ARGS)

# Shell completions for `macro` (bash, zsh, fish), generated by swift-argument-parser.
completions: release
	@BIN=$$($(RELEASE_BIN)); mkdir -p .build/completions; \
	for shell in bash zsh fish; do $$BIN/macro --generate-completion-script $$shell > .build/completions/macro.$$shell; done; \
	echo "written: .build/completions/macro.bash, macro.zsh, macro.fish"

# macro (with macro-local, which it runs for in-process commands) and macrod into ~/.local/bin, the config into ~/.config/macroengine (where both read it
# without --config), the shipped macros (those git tracks: packaging/macro-files.sh) into
# ~/.local/share/macroengine/macros (the installed config's macros_dir; existing files are
# kept), the systemd user unit.
install-user: release
	@$(MAKE) -s install-user-files BIN="$$($(RELEASE_BIN))"
	@echo "then: systemctl --user enable --now macrod"

# What install-user installs, from the binaries in BIN, under HOME. SystemdUnitTests installs a
# debug build into a temporary HOME with it, and runs the unit's command in the unit's sandbox.
USER_MACROS = $(HOME)/.local/share/macroengine/macros
USER_CONFIG = $(HOME)/.config/macroengine/macroengine.yaml
install-user-files:
	@[ -n "$(BIN)" ] && [ -x "$(BIN)/macrod" ] || { echo "error: BIN must name the directory of the built binaries" >&2; exit 1; }
	@install -Dm755 "$(BIN)/macro" $(HOME)/.local/bin/macro; \
	install -Dm755 "$(BIN)/macro-local" $(HOME)/.local/bin/macro-local; \
	install -Dm755 "$(BIN)/macrod" $(HOME)/.local/bin/macrod; \
	mkdir -p $(USER_MACROS)/lib; \
	packaging/macro-files.sh | while IFS= read -r f; do \
		[ -e "$(USER_MACROS)/$${f#macros/}" ] || install -Dm644 "$$f" "$(USER_MACROS)/$${f#macros/}"; \
	done; \
	if [ ! -e $(USER_CONFIG) ]; then \
		mkdir -p $$(dirname $(USER_CONFIG)); \
		sed 's|^macros_dir: .*|macros_dir: $(USER_MACROS)|' config/macroengine.yaml > $(USER_CONFIG); \
		chmod 644 $(USER_CONFIG); \
	fi; \
	install -Dm644 config/macrod.service $(HOME)/.config/systemd/user/macrod.service; \
	echo "installed: macro, macro-local, macrod in $(HOME)/.local/bin; config $(USER_CONFIG) (macros_dir: $$(sed -n 's/^macros_dir: //p' $(USER_CONFIG)))"

clean:
	rm -rf .build $(STATE_DIR)
