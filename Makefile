# MacroEngine — `make run` and `make test` work on a fresh Debian 12 machine with Swift 6.3:
# they install the system packages they need (JavaScriptCore from WebKitGTK) when missing.

SWIFT      ?= swift
PKG        := javascriptcoregtk-4.1
APT_PKGS   := libjavascriptcoregtk-4.1-dev pkg-config
SUDO       := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
STATE_DIR  := .run

.PHONY: all deps build release run test clean help

all: build

help:
	@echo "make run    build, then run the demo macros against the repo's config and macros"
	@echo "make test   build and run the whole test suite"
	@echo "make deps   install $(APT_PKGS) with apt-get when pkg-config cannot find $(PKG)"

# Installs JavaScriptCore's development package when pkg-config does not find it.
deps:
	@if ! pkg-config --exists $(PKG) 2>/dev/null; then \
		echo "==> installing $(APT_PKGS) (pkg-config cannot find $(PKG))"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(APT_PKGS); \
	fi
	@pkg-config --exists $(PKG) || { echo "error: $(PKG) still missing after apt-get" >&2; exit 1; }

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

# The demo: list the macros, run the seed's template twice (values accumulate), bump one ring.
run: release
	@mkdir -p $(STATE_DIR)
	@BIN=$$($(SWIFT) build -c release --show-bin-path); \
	ARGS="--config config/macroengine.yaml --state $(STATE_DIR)/state.json"; \
	set -x; \
	$$BIN/macro list $$ARGS && \
	$$BIN/macro run random $$ARGS && \
	$$BIN/macro run random $$ARGS && \
	$$BIN/macro run bump $$ARGS outer 2.5

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

clean:
	rm -rf .build $(STATE_DIR)
