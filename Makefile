# notesd — build, run, test, install. `make help` lists the targets.
PREFIX ?= /usr/local
DESTDIR ?=
SWIFT ?= swift
BINDIR := $(DESTDIR)$(PREFIX)/bin
UNITDIR := $(DESTDIR)$(PREFIX)/lib/systemd
SHAREDIR := $(DESTDIR)$(PREFIX)/share
MANDIR := $(SHAREDIR)/man
DOCDIR := $(SHAREDIR)/doc/notesd
# The web app's files: notesd looks in share/notesd/web beside its bin/ (docs/web.md).
WEBDIR := $(SHAREDIR)/notesd/web
RELEASE := .build/release
# Release binaries link the Swift runtime and Foundation statically: they run without the
# toolchain's libraries installed (make install, systemd units) and an idle notesd maps ~6 MB
# less of shared libraries (docs/benchmarks.md).
RELEASE_FLAGS := -c release -Xswiftc -static-stdlib

.PHONY: help deps test-deps build web run test install deb clean

help:
	@echo "make run      install what is missing, build (release), start notesd in the foreground"
	@echo "make test     install what is missing, run every test"
	@echo "make build    build release binaries into $(RELEASE), and the web app (make web)"
	@echo "make web      bundle the web app into web/assets/ (esbuild, ProseMirror from Debian)"
	@echo "make install  install binaries, systemd units, man pages, completions and docs under PREFIX=$(PREFIX) (honours DESTDIR)"
	@echo "make deb      build the Debian package into .build/deb/ (checked with lintian)"

deps:
	@scripts/install-deps run

test-deps:
	@scripts/install-deps test

build: deps web
	$(SWIFT) build $(RELEASE_FLAGS)

# The web app (docs/web-app.md): web/src/ bundled into web/assets/app.js.
web: deps
	scripts/build-web

# Serves the checkout's web/ folder as the web app (no network: files are read from disk).
run: build
	$(RELEASE)/notesd --web-root $(CURDIR)/web

test: test-deps
	scripts/run-tests

# The units name the binary by its installed path, without DESTDIR (which is only where the
# files are put now); docs/systemd.md says how to enable them.
UNITS := systemd/user/notesd.service systemd/user/notesd.socket systemd/system/notesd@.service \
	systemd/user/notesd-backup.service systemd/user/notesd-backup.timer \
	systemd/system/notesd-backup@.service systemd/system/notesd-backup@.timer

install: build
	install -d $(BINDIR) $(UNITDIR)/user $(UNITDIR)/system
	install -m 755 $(RELEASE)/notesd $(RELEASE)/notesctl $(BINDIR)/
	# The web app, when the checkout has one (no empty directory otherwise: notesd then
	# answers / with a page saying the app is not installed).
	if [ -f web/index.html ]; then install -d $(WEBDIR) && install -m 644 web/index.html $(WEBDIR)/; fi
	if [ -d web/assets ]; then install -d $(WEBDIR) && cp -R web/assets $(WEBDIR)/ && chmod -R u=rwX,go=rX $(WEBDIR)/assets; fi
	for unit in $(UNITS); do \
	    target=$(UNITDIR)/$${unit#systemd/}; \
	    sed 's|@BINDIR@|$(PREFIX)/bin|g' $$unit >$$target && chmod 644 $$target || exit 1; \
	done
	install -d $(MANDIR)/man1 $(MANDIR)/man8
	gzip -9nc man/notesctl.1 >$(MANDIR)/man1/notesctl.1.gz
	gzip -9nc man/notesd.8 >$(MANDIR)/man8/notesd.8.gz
	chmod 644 $(MANDIR)/man1/notesctl.1.gz $(MANDIR)/man8/notesd.8.gz
	install -d $(SHAREDIR)/bash-completion/completions $(SHAREDIR)/zsh/vendor-completions $(SHAREDIR)/fish/vendor_completions.d
	install -m 644 completions/notesctl.bash $(SHAREDIR)/bash-completion/completions/notesctl
	install -m 644 completions/_notesctl $(SHAREDIR)/zsh/vendor-completions/_notesctl
	install -m 644 completions/notesctl.fish $(SHAREDIR)/fish/vendor_completions.d/notesctl.fish
	install -d $(DOCDIR)
	install -m 644 README.md docs/*.md $(DOCDIR)/

# The Debian package: what `make install PREFIX=/usr` installs, as notesd_VERSION_ARCH.deb.
deb: build
	scripts/build-deb

clean:
	rm -rf .build
