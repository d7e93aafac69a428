# notesd — build, run, test, install. `make help` lists the targets.
PREFIX ?= /usr/local
DESTDIR ?=
SWIFT ?= swift
BINDIR := $(DESTDIR)$(PREFIX)/bin
UNITDIR := $(DESTDIR)$(PREFIX)/lib/systemd
RELEASE := .build/release

.PHONY: help deps test-deps build run test install clean

help:
	@echo "make run      install what is missing, build (release), start notesd in the foreground"
	@echo "make test     install what is missing, run every test"
	@echo "make build    build release binaries into $(RELEASE)"
	@echo "make install  install binaries and systemd units under PREFIX=$(PREFIX) (honours DESTDIR)"

deps:
	@scripts/install-deps run

test-deps:
	@scripts/install-deps test

build: deps
	$(SWIFT) build -c release

run: build
	$(RELEASE)/notesd

test: test-deps
	scripts/run-tests

install: build
	install -d $(BINDIR)
	install -m 755 $(RELEASE)/notesd $(RELEASE)/notesctl $(BINDIR)/

clean:
	rm -rf .build
