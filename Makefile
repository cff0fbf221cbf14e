# mdb build: the C core as a shared library with LMDB's ABI, a static archive for
# in-tree tools and tests, and the compat links that let LMDB programs run on it.
#
#   make lib      build/libmdbcore.so, build/libmdbcore.a, build/libmdbcore-test.so,
#                 build/compat/liblmdb.so{,.0}, build/include/lmdb.h
#   make test     build everything and run every test suite (C, then Python); prints a recap
#   make asan     the C tests (core, unit, api, bad files) under AddressSanitizer +
#                 UndefinedBehaviorSanitizer, built in build-asan/
#   make demo     build and run examples/demo.c against the library under test
#   make ctest    only the C tests;  make pytest  only the Python suites
#   make ctest-one T=NAME   build and run one C test: a program of tests/c/<dir>/NAME.c
#                 (test_btree, test_fault, test_bulk_load, test_abi, test_badfiles, ...), or
#                 a directory's whole runner script (T=core, T=unit); with `make asan`'s
#                 sanitizers: make ctest-one T=NAME ASAN=1
#   make lib-check  the exported-symbol check of libmdbcore.so (56 names, nothing unresolved)
#   make lint     ruff check + ruff format --check of the Python code, and the engine's
#                 layer check (tools/check_layers.py; compiles the core's objects first)
#
# The library under test (docs/building.md):
#   LMDB_IMPL=mdb     (default) our engine: build/libmdbcore.so
#   LMDB_IMPL=system  Debian's liblmdb.so.0 -- bring-up mode, proves the harness before our
#                     engine is complete.  Tests of our internals (tests/c/core, tests/c/unit)
#                     are skipped, and the bad-file test runs its header-level cases only
#                     (real LMDB 0.9 crashes on deeper damage: CVE-2019-16224..16228).

CC ?= cc
OPT ?= -O2 -g
WARN = -Wall -Wextra -Werror
CFLAGS_CORE = -std=gnu11 $(OPT) $(WARN) -fPIC -fno-semantic-interposition -pthread \
              -D_GNU_SOURCE -Isrc/mdbcore $(EXTRA_CFLAGS)
BUILD ?= build
PYTHON ?= python3

CORE_SRC := $(sort $(wildcard src/mdbcore/*.c))
CORE_OBJ := $(patsubst src/mdbcore/%.c,$(BUILD)/obj/%.o,$(CORE_SRC))
CORE_HDR := $(wildcard src/mdbcore/*.h)

.PHONY: all lib clean test asan asan-run demo ctest ctest-core ctest-api ctest-badfile \
        pytest lib-check test-recap impl-ready

all: lib

lib: $(BUILD)/libmdbcore.so $(BUILD)/libmdbcore.a $(BUILD)/libmdbcore-test.so \
     $(BUILD)/compat/liblmdb.so.0 $(BUILD)/compat/liblmdb.so $(BUILD)/include/lmdb.h

$(BUILD)/obj/%.o: src/mdbcore/%.c $(CORE_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_CORE) -c $< -o $@

# Only the 56 LMDB API functions are exported (exports.map); everything else is local.
$(BUILD)/libmdbcore.so: $(CORE_OBJ) src/mdbcore/exports.map
	$(CC) -shared -pthread -Wl,-soname,liblmdb.so.0 -Wl,-Bsymbolic \
	  -Wl,--version-script=src/mdbcore/exports.map $(EXTRA_LDFLAGS) -o $@ $(CORE_OBJ)

# The same objects, also exporting the mdbcore_* test and checker extras (mdbcore.h)
# listed in src/mdbcore/exports-test.map.
TEST_MAP := src/mdbcore/exports-test.map

# Plus src/mdbcore/testlib/ (outside the core glob): its constructor arms the fault seam
# from MDBCORE_FAULT, which only this library reads.
TESTLIB_OBJ := $(BUILD)/obj/testlib/fault_env.o
$(BUILD)/libmdbcore-test.so: $(CORE_OBJ) $(TESTLIB_OBJ) $(TEST_MAP)
	$(CC) -shared -pthread -Wl,-soname,libmdbcore-test.so -Wl,-Bsymbolic \
	  -Wl,--version-script=$(TEST_MAP) $(EXTRA_LDFLAGS) -o $@ $(CORE_OBJ) $(TESTLIB_OBJ)

# The installed extras library (make install): LMDB's API plus mdbcore.h's public extras.
$(BUILD)/libmdbcore-extras.so: $(CORE_OBJ) src/mdbcore/exports-extras.map
	$(CC) -shared -pthread -Wl,-soname,libmdbcore.so.0 -Wl,-Bsymbolic \
	  -Wl,--version-script=src/mdbcore/exports-extras.map $(EXTRA_LDFLAGS) -o $@ $(CORE_OBJ)

$(BUILD)/libmdbcore.a: $(CORE_OBJ)
	@rm -f $@
	ar rcs $@ $(CORE_OBJ)

$(BUILD)/compat/liblmdb.so.0: $(BUILD)/libmdbcore.so
	@mkdir -p $(dir $@)
	ln -sf ../libmdbcore.so $@

$(BUILD)/compat/liblmdb.so: $(BUILD)/compat/liblmdb.so.0
	ln -sf liblmdb.so.0 $@

$(BUILD)/include/lmdb.h: src/mdbcore/lmdb.h
	@mkdir -p $(dir $@)
	cp $< $@

clean:
	rm -rf $(BUILD) build-asan build-fuzz

# make install [PREFIX=/usr/local] [DESTDIR=...]: our engine as a system library.
#   $(LIBDIR)/liblmdb.so.0 (+ liblmdb.so)      the drop-in: LMDB's 56 functions, soname
#                                              liblmdb.so.0, so programs built for LMDB load it
#   $(LIBDIR)/libmdbcore.so.0 (+ libmdbcore.so) the same engine plus mdbcore.h's extras
#   $(INCDIR)/lmdb.h, mdbcore.h and format.h (the on-disk layout mdbcore.h refers to)
#   $(LIBDIR)/pkgconfig/lmdb.pc, mdbcore.pc    `pkg-config --cflags --libs lmdb`
# ldconfig runs when installing into the live system (no DESTDIR) as root.  See
# docs/building.md for running Debian's slapd or any LMDB program on it system-wide.
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCDIR ?= $(PREFIX)/include
VERSION_STR := 0.9.29
.PHONY: install uninstall
install: lib $(BUILD)/libmdbcore-extras.so
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCDIR)
	install -m 0755 $(BUILD)/libmdbcore.so $(DESTDIR)$(LIBDIR)/liblmdb.so.0
	ln -sf liblmdb.so.0 $(DESTDIR)$(LIBDIR)/liblmdb.so
	install -m 0755 $(BUILD)/libmdbcore-extras.so $(DESTDIR)$(LIBDIR)/libmdbcore.so.0
	ln -sf libmdbcore.so.0 $(DESTDIR)$(LIBDIR)/libmdbcore.so
	install -m 0644 src/mdbcore/lmdb.h src/mdbcore/mdbcore.h src/mdbcore/format.h $(DESTDIR)$(INCDIR)/
	for pc in lmdb mdbcore; do \
	  sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@INCDIR@|$(INCDIR)|g' \
	      -e 's|@VERSION@|$(VERSION_STR)|g' src/mdbcore/$$pc.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/$$pc.pc; \
	done
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then ldconfig; fi

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/liblmdb.so.0 $(DESTDIR)$(LIBDIR)/liblmdb.so \
	      $(DESTDIR)$(LIBDIR)/libmdbcore.so.0 $(DESTDIR)$(LIBDIR)/libmdbcore.so \
	      $(DESTDIR)$(INCDIR)/lmdb.h $(DESTDIR)$(INCDIR)/mdbcore.h $(DESTDIR)$(INCDIR)/format.h \
	      $(DESTDIR)$(LIBDIR)/pkgconfig/lmdb.pc $(DESTDIR)$(LIBDIR)/pkgconfig/mdbcore.pc

# ======================================================================================
# Test harness
# ======================================================================================

LMDB_IMPL ?= mdb
SYSTEM_LIB := /usr/lib/x86_64-linux-gnu/liblmdb.so.0
SYSTEM_HDR := /usr/include/lmdb.h
# Harness binaries depend on the implementation, so each one gets its own directory.
HBUILD := $(BUILD)/harness-$(LMDB_IMPL)
RESULTS := $(HBUILD)/results.txt
# Every C test includes tests/c/include/mdbtest.h, the one header of assertion macros.
CFLAGS_TEST = -std=gnu11 $(OPT) $(WARN) -D_GNU_SOURCE -pthread -Itests/c/include $(EXTRA_CFLAGS)
TEST_LIBS = -pthread -ldl $(EXTRA_LDFLAGS)
# The one way a C test of our internals is built on the core: compiled with these flags and
# linked with $(BUILD)/libmdbcore.a, the archive of the objects `make lib` compiles (in
# build-asan/ under `make asan`, so the sanitizers cover the core and the test alike).  The
# Makefile's own rule below uses it, and the runner scripts (tests/c/core/run.sh,
# tests/c/unit/run.sh) get it from the environment as MDBTEST_*: none compiles the core.
TEST_CORE_CFLAGS = $(CFLAGS_TEST) -Isrc/mdbcore
TEST_CORE_LIBS = $(abspath $(BUILD)/libmdbcore.a) $(TEST_LIBS) -lm
export MDBTEST_CC = $(CC)
export MDBTEST_CFLAGS = $(TEST_CORE_CFLAGS)
export MDBTEST_LIBS = $(TEST_CORE_LIBS)
# the same objects as a shared library that also arms the fault seam from MDBCORE_FAULT
export MDBTEST_TESTLIB = $(abspath $(BUILD)/libmdbcore-test.so)
# where a runner script puts its programs: $(MDBTEST_OUT)/<dir>/
export MDBTEST_OUT = $(abspath $(BUILD))/tests

ifeq ($(LMDB_IMPL),system)
  TEST_LIB := $(SYSTEM_LIB)
  IMPL_DEPS :=
  # Programs built against Debian's header and linked with Debian's library.
  LINK_UNDER_TEST := -llmdb
  DEMO_INC :=
  BADFILE_ARGS := --header-only
  EXPORTS_CHECK := $(PYTHON) tests/c/api/check_exports.py $(SYSTEM_LIB) src/mdbcore/exports.map --superset
else ifeq ($(LMDB_IMPL),mdb)
  TEST_LIB := $(abspath $(BUILD)/libmdbcore.so)
  IMPL_DEPS := lib
  # Linked through build/compat/liblmdb.so (soname liblmdb.so.0) with a RUNPATH to that
  # directory, so the loader finds ours first; test_abi checks which file was loaded.
  LINK_UNDER_TEST := -L$(BUILD)/compat -llmdb -Wl,-rpath,$(abspath $(BUILD)/compat)
  DEMO_INC := -I$(BUILD)/include
  BADFILE_ARGS :=
  EXPORTS_CHECK := $(PYTHON) tests/c/api/check_exports.py $(BUILD)/libmdbcore.so src/mdbcore/exports.map --exact
  EXPORTS_CHECK_TEST := $(PYTHON) tests/c/api/check_exports.py $(BUILD)/libmdbcore-test.so src/mdbcore/exports.map --test-lib
  PREFETCH_CHECK := $(PYTHON) tests/c/api/check_prefetch.py $(BUILD)/libmdbcore.so
else
  $(error LMDB_IMPL must be "mdb" or "system", not "$(LMDB_IMPL)")
endif
export MDB_TEST_IMPL := $(LMDB_IMPL)
export MDB_TEST_LIB := $(TEST_LIB)
# tests/crash and tests/property drive the core's test library (fault seam, checker)
export MDB_TEST_CORELIB := $(abspath $(BUILD)/libmdbcore-test.so)

# ---- C tests of our internals: every tests/c/<dir>/ except the harness dirs ----
# In each such directory:
#   test_*.c          one program each, linked with build/libmdbcore.a (-Isrc/mdbcore
#                     -Itests/c/<dir>), built to build/tests/<dir>/;
#   lmdb_*.c with a main()   a helper that plays the REAL LMDB side: linked with Debian's
#                     -llmdb, built to build/<dir>/<name>;
#   other *.c with a main()  a helper program on our engine, built like a test but not run;
#   other *.c         linked into every test and helper of that directory.
# How they run: if the directory has a run.sh (or run_*.sh) script, `bash run.sh` is run
# instead -- `bash run.sh --asan` under `make asan` -- as one entry of the summary; the
# script builds and runs that directory's programs itself.  Otherwise every test_*
# program is built here and runs with no arguments, from the repository root, with a
# fresh TMPDIR.
HARNESS_DIRS := api badfile
CORE_TEST_DIRS := $(filter-out $(HARNESS_DIRS),$(notdir $(patsubst %/,%,$(sort $(dir $(wildcard tests/c/*/*.c))))))
has_main = $(shell grep -lE '^[a-z ]*int[[:space:]]+main\b' $(1) 2>/dev/null)
define core_dir_rules
CT_$(1)_TESTS := $$(sort $$(wildcard tests/c/$(1)/test_*.c))
CT_$(1)_OTHER := $$(filter-out $$(CT_$(1)_TESTS),$$(wildcard tests/c/$(1)/*.c))
CT_$(1)_HELPERS := $$(call has_main,$$(CT_$(1)_OTHER))
CT_$(1)_LINKED := $$(filter-out $$(CT_$(1)_HELPERS),$$(CT_$(1)_OTHER))
CT_$(1)_REAL := $$(filter tests/c/$(1)/lmdb_%,$$(CT_$(1)_HELPERS))
CT_$(1)_OURS := $$(filter-out $$(CT_$(1)_REAL),$$(CT_$(1)_HELPERS))
CT_$(1)_BINS := $$(patsubst tests/c/$(1)/%.c,$(BUILD)/tests/$(1)/%,$$(CT_$(1)_TESTS))
CT_$(1)_HELPER_BINS := $$(patsubst tests/c/$(1)/%.c,build/$(1)/%,$$(CT_$(1)_REAL)) \
                       $$(patsubst tests/c/$(1)/%.c,$(BUILD)/tests/$(1)/%,$$(CT_$(1)_OURS))
CT_$(1)_RUNNER := $$(firstword $$(wildcard tests/c/$(1)/run.sh tests/c/$(1)/run_*.sh))
$(BUILD)/tests/$(1)/%: tests/c/$(1)/%.c $$(CT_$(1)_LINKED) $$(wildcard tests/c/$(1)/*.h) tests/c/include/mdbtest.h $(BUILD)/libmdbcore.a $(CORE_HDR)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(TEST_CORE_CFLAGS) -Itests/c/$(1) $$< $$(CT_$(1)_LINKED) $$(TEST_CORE_LIBS) -o $$@
build/$(1)/%: tests/c/$(1)/%.c $$(wildcard tests/c/$(1)/*.h) tests/c/include/mdbtest.h
	@mkdir -p $$(dir $$@)
	$$(CC) -std=gnu11 -O1 -g -Wall -Wextra -D_GNU_SOURCE -Itests/c/include $$< -llmdb -pthread -o $$@
endef
$(foreach d,$(CORE_TEST_DIRS),$(eval $(call core_dir_rules,$(d))))
# Directories with a runner script build their own programs; the others are built here.
CORE_TEST_BINS := $(foreach d,$(CORE_TEST_DIRS),$(if $(CT_$(d)_RUNNER),,$(CT_$(d)_BINS)))
CORE_HELPER_BINS := $(foreach d,$(CORE_TEST_DIRS),$(if $(CT_$(d)_RUNNER),,$(CT_$(d)_HELPER_BINS)))
CORE_CTEST_CMDS := $(foreach d,$(CORE_TEST_DIRS),$(if $(CT_$(d)_RUNNER),\
  "$(d)/$(notdir $(CT_$(d)_RUNNER))::bash $(CT_$(d)_RUNNER)$(if $(SANITIZED), --asan)",\
  $(foreach b,$(CT_$(d)_BINS),"$(abspath $(b))")))

# ---- harness programs: compiled against Debian's lmdb.h, linked with the library under test
API_TEST_BINS := $(patsubst tests/c/api/%.c,$(HBUILD)/api/%,$(sort $(wildcard tests/c/api/test_*.c)))
BADFILE_BIN := $(HBUILD)/badfile/test_badfiles
DEMO_BIN := $(HBUILD)/demo

impl-ready: $(IMPL_DEPS)

$(HBUILD)/api/%: tests/c/api/%.c tests/c/include/mdbtest.h $(SYSTEM_HDR) | impl-ready
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TEST) $< $(LINK_UNDER_TEST) $(TEST_LIBS) -o $@

$(BADFILE_BIN): tests/c/badfile/test_badfiles.c tests/c/include/mdbtest.h $(SYSTEM_HDR) | impl-ready
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TEST) $< $(LINK_UNDER_TEST) $(TEST_LIBS) -o $@

$(DEMO_BIN): examples/demo.c | impl-ready
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_TEST) $(DEMO_INC) $< $(LINK_UNDER_TEST) $(TEST_LIBS) -o $@

RUN_C := tests/support/run_ctests.sh

# A test that does not compile is reported as a failed test (run_ctests.sh: "not built"),
# and the others still run: hence the `make -k` of the binaries first.
ctest-core: | impl-ready
ifeq ($(LMDB_IMPL),mdb)
	$(if $(strip $(CORE_TEST_BINS) $(CORE_HELPER_BINS)),@$(MAKE) --no-print-directory -k \
	  $(CORE_TEST_BINS) $(CORE_HELPER_BINS) || \
	  echo "(some C tests did not build: see the compiler errors above)")
	@$(if $(strip $(CORE_CTEST_CMDS)),$(RUN_C) "core+unit" $(RESULTS) $(CORE_CTEST_CMDS),\
	  echo "C tests (core+unit): none found in tests/c/*/test_*.c" | tee -a $(RESULTS))
else
	@echo "C tests (core+unit): SKIPPED in LMDB_IMPL=system (they test our engine's internals)" | tee -a $(RESULTS)
endif

ctest-api: | impl-ready
	@$(MAKE) --no-print-directory -k $(API_TEST_BINS) || echo "(test_abi did not build)"
	@$(RUN_C) "api" $(RESULTS) \
	  $(foreach b,$(API_TEST_BINS),"$(abspath $(b))") \
	  "check_headers::$(PYTHON) tests/c/api/check_headers.py src/mdbcore/lmdb.h $(SYSTEM_HDR)" \
	  $(if $(SANITIZED),,"check_exports::$(EXPORTS_CHECK)") \
	  $(if $(SANITIZED)$(if $(EXPORTS_CHECK_TEST),,x),,"check_exports(test.so)::$(EXPORTS_CHECK_TEST)") \
	  $(if $(SANITIZED)$(if $(PREFETCH_CHECK),,x),,"check_prefetch::$(PREFETCH_CHECK)")

ctest-badfile: | impl-ready
	@$(MAKE) --no-print-directory -k $(BADFILE_BIN) || echo "(test_badfiles did not build)"
	@$(RUN_C) "bad files$(if $(BADFILE_ARGS), $(BADFILE_ARGS))" $(RESULTS) "$(abspath $(BADFILE_BIN)) $(BADFILE_ARGS)"

# The C suites run from the repository root (some tests find programs by relative path);
# each gets a fresh TMPDIR.  All suites run even if one fails; the status is kept.
ctest:
	@mkdir -p $(HBUILD); : > $(RESULTS)
	@rc=0; \
	$(MAKE) --no-print-directory ctest-core || rc=1; \
	$(MAKE) --no-print-directory ctest-api || rc=1; \
	$(MAKE) --no-print-directory ctest-badfile || rc=1; \
	exit $$rc

# ---- make ctest-one T=NAME: one C test, built and run as `make ctest` would, its output in full
# NAME is the file name (without .c) of a program in tests/c/<dir>/.  In a directory with a
# runner script that is `bash run.sh --only NAME` (the script runs NAME with its arguments,
# plus whatever NAME's checks need); NAME may also be that directory (the whole script).
# Elsewhere the program is built by the rules above and run with no arguments (bad files:
# with BADFILE_ARGS).  ASAN=1 does it in build-asan/ with `make asan`'s sanitizers.
.PHONY: ctest-one ctest-env
T_SRC := $(if $(T),$(firstword $(wildcard tests/c/*/$(T).c)))
T_DIR := $(notdir $(patsubst %/,%,$(dir $(T_SRC))))
ifneq ($(T_SRC),)
  ifneq ($(filter $(T_DIR),$(CORE_TEST_DIRS)),)
    T_RUNNER := $(CT_$(T_DIR)_RUNNER)
    T_BUILD := $(if $(T_RUNNER),,$(BUILD)/tests/$(T_DIR)/$(T) $(CT_$(T_DIR)_HELPER_BINS))
    T_CMD := $(if $(T_RUNNER),"$(T)::bash $(T_RUNNER) --only $(T)$(if $(SANITIZED), --asan)","$(abspath $(BUILD)/tests/$(T_DIR)/$(T))")
    T_OURS := 1
  else ifeq ($(T_DIR),api)
    T_BUILD := $(HBUILD)/api/$(T)
    T_CMD := "$(abspath $(HBUILD)/api/$(T))"
  else ifeq ($(T_SRC),tests/c/badfile/test_badfiles.c)
    T_BUILD := $(BADFILE_BIN)
    T_CMD := "$(abspath $(BADFILE_BIN)) $(BADFILE_ARGS)"
  endif
else ifneq ($(and $(T),$(filter $(T),$(CORE_TEST_DIRS))),)
  T_RUNNER := $(CT_$(T)_RUNNER)
  T_BUILD := $(if $(T_RUNNER),,$(CT_$(T)_BINS) $(CT_$(T)_HELPER_BINS))
  T_CMD := $(if $(T_RUNNER),"$(T)/$(notdir $(T_RUNNER))::bash $(T_RUNNER)$(if $(SANITIZED), --asan)",\
             $(foreach b,$(CT_$(T)_BINS),"$(abspath $(b))"))
  T_OURS := 1
endif

ifeq ($(ASAN)$(SANITIZED),1)
# the same target, remade with `make asan`'s variables
ctest-one ctest-env:
	@$(MAKE) --no-print-directory $(ASAN_MAKEVARS) $@
else
ctest-one: | impl-ready
	@$(if $(T),,echo "usage: make ctest-one T=NAME (a tests/c/<dir>/NAME.c program, or T=core / T=unit)"; exit 2)
	@$(if $(T_CMD),,echo "ctest-one: no C test named '$(T)' (no tests/c/*/$(T).c, nor a test directory $(T))"; exit 2)
	@$(if $(and $(T_OURS),$(filter system,$(LMDB_IMPL))),echo "ctest-one: $(T) tests our internals: not in LMDB_IMPL=system"; exit 2)
	@mkdir -p $(HBUILD)
	$(if $(strip $(T_BUILD)),@$(MAKE) --no-print-directory $(T_BUILD))
	@CTEST_VERBOSE=1 $(RUN_C) "$(T)" $(HBUILD)/results-one.txt $(T_CMD)

# The MDBTEST_* settings above as shell code, with the libraries they name built: a runner
# script started by hand (not by make) evaluates it.  ASAN=1 gives build-asan/'s.
ctest-env: $(BUILD)/libmdbcore.a $(BUILD)/libmdbcore-test.so
	@echo "export MDBTEST_CC='$(MDBTEST_CC)' MDBTEST_CFLAGS='$(MDBTEST_CFLAGS)'" \
	  "MDBTEST_LIBS='$(MDBTEST_LIBS)' MDBTEST_TESTLIB='$(MDBTEST_TESTLIB)' MDBTEST_OUT='$(MDBTEST_OUT)'"
endif

pytest: | impl-ready
	@mkdir -p $(HBUILD); touch $(RESULTS)
	@echo "== Python suites: LMDB_IMPL=$(LMDB_IMPL) MDB_TEST_LIB=$(MDB_TEST_LIB)"
	@rc=0; \
	PYTHON=$(PYTHON) tests/support/run_pytest.sh tests/interop $(RESULTS) || rc=1; \
	PYTHON=$(PYTHON) tests/support/run_pytest.sh tests/python $(RESULTS) --needs-mdb || rc=1; \
	PYTHON=$(PYTHON) tests/support/run_pytest.sh tests/cli $(RESULTS) --needs-mdb || rc=1; \
	PYTHON=$(PYTHON) tests/support/run_pytest.sh tests/property $(RESULTS) --needs-mdb || rc=1; \
	PYTHON=$(PYTHON) tests/support/run_pytest.sh tests/crash $(RESULTS) || rc=1; \
	PYTHON=$(PYTHON) tests/support/run_pytest.sh tests/compat $(RESULTS) || rc=1; \
	PYTHON=$(PYTHON) tests/support/run_pytest.sh tests/slapd $(RESULTS) || rc=1; \
	PYTHON=$(PYTHON) tests/support/run_pytest.sh tests/lab $(RESULTS) || rc=1; \
	exit $$rc

# The demo, then Debian's mdb_stat (real LMDB 0.9.24, statically linked) on the same file.
demo: $(DEMO_BIN)
	$(DEMO_BIN) $(HBUILD)/demo-db
	@if command -v mdb_stat >/dev/null; then \
	  echo "== the same file read by real LMDB (Debian's mdb_stat -a):"; \
	  mdb_stat -a $(HBUILD)/demo-db > $(HBUILD)/demo-stat.txt && \
	  grep -E '^Status of|Entries:' $(HBUILD)/demo-stat.txt | paste - -; \
	fi

lib-check: lib
	$(PYTHON) tests/c/api/check_exports.py $(BUILD)/libmdbcore.so src/mdbcore/exports.map --exact

test-recap:
	@echo "==================== test recap (LMDB_IMPL=$(LMDB_IMPL)) ===================="
	@cat $(RESULTS)

# Everything, in one go; every suite runs even when an earlier one fails.
test:
	@mkdir -p $(HBUILD); : > $(RESULTS)
	@rc=0; \
	$(MAKE) --no-print-directory impl-ready || exit 1; \
	$(MAKE) --no-print-directory ctest || rc=1; \
	if $(MAKE) --no-print-directory demo > $(HBUILD)/demo.log 2>&1; then \
	  echo "demo: ok ($$(grep -E '^demo ok' $(HBUILD)/demo.log); the file read back by mdb_stat -a)" | tee -a $(RESULTS); \
	else cat $(HBUILD)/demo.log; echo "demo: FAILED" | tee -a $(RESULTS); rc=1; fi; \
	$(MAKE) --no-print-directory pytest || rc=1; \
	$(MAKE) --no-print-directory test-recap; \
	if [ $$rc -eq 0 ]; then echo "make test: ALL PASSED"; else echo "make test: FAILURES (see above)"; fi; \
	exit $$rc

# ---- sanitizers: a separate build tree; C tests and the bad-file test only ----
# (The export checks are left to `make test`: in a sanitizer build the library's libc and
# sanitizer references are resolved by the runtime in the executable, so nm -D shows them
# as unversioned undefined symbols.)
# SAN_EXTRA adds flags, e.g. `make asan SAN_EXTRA=-fno-sanitize=alignment` to look past
# misaligned-access reports (see docs/building.md) for other findings.
SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all $(SAN_EXTRA)
ASAN_MAKEVARS = BUILD=build-asan OPT="-O1 -g" WARN="-Wall -Wextra" \
  EXTRA_CFLAGS="$(SAN)" EXTRA_LDFLAGS="$(SAN)" LMDB_IMPL=$(LMDB_IMPL) SANITIZED=1
asan:
	@$(MAKE) --no-print-directory $(ASAN_MAKEVARS) asan-run

ifdef SANITIZED
export ASAN_OPTIONS := detect_leaks=1:abort_on_error=0:strict_string_checks=1
export UBSAN_OPTIONS := print_stacktrace=1:halt_on_error=1
endif
asan-run:
	@mkdir -p $(HBUILD); : > $(RESULTS)
	@rc=0; \
	$(MAKE) --no-print-directory impl-ready || exit 1; \
	$(MAKE) --no-print-directory ctest || rc=1; \
	echo "==================== asan recap (LMDB_IMPL=$(LMDB_IMPL)) ===================="; \
	cat $(RESULTS); exit $$rc

# ======================================================================================
# Compatibility harnesses and the many-databases benchmark (tests/compat, tests/slapd,
# tests/c/diff, bench/many_dbs.c; docs/compat.md)
# ======================================================================================
# `make test` (through `make pytest`) runs tests/compat and tests/slapd in their everyday
# mode: self-tests on Debian's liblmdb / stock slapd must pass; on our library the
# implemented subset must pass, and the parts needing a feature our library reports
# missing (MDB_INCOMPATIBLE for DUPSORT or nested txns) are skipped, naming it.
# `make test-compat` runs the same suites against our library with nothing skipped or
# excused for a missing feature (MDB_COMPAT_STRICT=1): it fails until they all land.
# `make bench-many-dbs` and `make bench-core` are benchmarks (they print tables, never part
# of `make test`); BENCH_ARGS passes options, e.g. BENCH_ARGS="--rounds 1 --scale 0.1".
# bench-core: bench/core_ops.c (put/get/scan, 1,000,000 keys) on our library and on
# Debian's liblmdb in interleaved rounds, median ratio with its spread.
# bench: the catalogue (bench/catalogue.c, db_bench's workloads, docs/performance.md) at
# 1,000,000 records; BENCH_ARGS="-n 10000000" for 10M, "--rows 'fill*'" for some rows.
# bench-py: the same through Python (bench/py_catalogue.py): mdb, py-lmdb (its C extension
# and its cffi backend on Debian's liblmdb), sqlite3, LevelDB and RocksDB (plyvel and
# rocksdict are pip-installed into the venv first).
.PHONY: test-compat bench-many-dbs bench-core bench bench-py
test-compat: lib
	MDB_COMPAT_STRICT=1 $(PYTHON) -m pytest tests/compat tests/slapd -q -rfEs -p no:cacheprovider

bench-many-dbs: lib
	$(PYTHON) bench/run_many_dbs.py $(BENCH_ARGS)

bench-core: lib
	$(PYTHON) bench/run_core_ops.py $(BENCH_ARGS)

bench: lib
	$(PYTHON) bench/catalogue.py $(BENCH_ARGS)

bench-py: lib
	$(PYTHON) -c "import plyvel, rocksdict" 2>/dev/null || $(PYTHON) -m pip install -q plyvel rocksdict
	$(PYTHON) bench/py_catalogue.py $(BENCH_ARGS)

# `make lint`: ruff's linter and a formatting check over all the Python (pyproject.toml's
# [tool.ruff] settings), run as $(PYTHON) -m ruff, so CI's PYTHON=.venv/bin/python uses
# the ruff that .ci/setup installs there.  Fix with `ruff check --fix` / `ruff format`.
# Then the engine's layer map (tools/check_layers.py, the list in src/mdbcore/core.h): no
# call into a higher layer, every file listed, names and prototypes where they belong.  It
# reads the objects with nm, so lint compiles them first (the same ones `make lib` links).
LINT_DIRS := $(wildcard python cli tests bench lab tools)
.PHONY: lint
lint: $(CORE_OBJ)
	$(PYTHON) -m ruff check $(LINT_DIRS)
	$(PYTHON) -m ruff format --check $(LINT_DIRS)
	$(PYTHON) tools/check_layers.py --src src/mdbcore --obj $(BUILD)/obj

# ======================================================================================
# Fuzzing (fuzz/, docs/fuzzing.md; issue 12): libFuzzer harnesses built by Debian's clang
# with ASan + UBSan, linked with the core's sources compiled likewise into build-fuzz/.
# ======================================================================================
#   make fuzz-build          build-fuzz/fuzz_datafile, build-fuzz/fuzz_lockfile
#   make fuzz-smoke          every fuzzer FUZZ_SMOKE_SECS (60) s from fuzz/corpus/, then the
#                            inputs of fuzz/regressions/ replayed; fails on any finding
#   make fuzz HOURS=N        a campaign of N hours split over the fuzzers (one core, nice 19);
#                            prints executions, coverage and findings per fuzzer
#   make fuzz-seeds          regenerate fuzz/corpus/{datafile,lockfile}/ with fuzz/gen_seeds.c,
#                            written by our library and by Debian's liblmdb
FUZZ_CC ?= clang-14
FUZZ_BUILD := build-fuzz
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_SMOKE_SECS ?= 60
HOURS ?= 1
FUZZ_NAMES := $(patsubst fuzz/fuzz_%.c,%,$(wildcard fuzz/fuzz_*.c))
.PHONY: fuzz-build fuzz-smoke fuzz fuzz-seeds
fuzz-build:
	@$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) CC=$(FUZZ_CC) OPT="-O1 -g" WARN="-Wall -Wextra" \
	  EXTRA_CFLAGS="$(FUZZ_SAN) -fsanitize=fuzzer-no-link" $(FUZZ_BUILD)/libmdbcore.a
	@for f in $(FUZZ_NAMES); do \
	  if [ ! $(FUZZ_BUILD)/fuzz_$$f -nt fuzz/fuzz_$$f.c ] || [ ! $(FUZZ_BUILD)/fuzz_$$f -nt $(FUZZ_BUILD)/libmdbcore.a ] || \
	     [ ! $(FUZZ_BUILD)/fuzz_$$f -nt tests/c/diff/tools/lmdbdiff.c ]; then \
	    echo "$(FUZZ_CC) ... fuzz/fuzz_$$f.c -o $(FUZZ_BUILD)/fuzz_$$f"; \
	    $(FUZZ_CC) -std=gnu11 -O1 -g -Wall -Wextra -Werror -D_GNU_SOURCE $(FUZZ_SAN) -fsanitize=fuzzer \
	      -Isrc/mdbcore fuzz/fuzz_$$f.c $(FUZZ_BUILD)/libmdbcore.a -pthread -o $(FUZZ_BUILD)/fuzz_$$f || exit 1; \
	  fi; \
	done
	@if [ -f fuzz/fuzz_apidiff.c ] && { [ ! -x $(FUZZ_BUILD)/apidiff_ref ] || [ $(FUZZ_BUILD)/apidiff_ref -ot fuzz/apidiff_ref.c ] || [ $(FUZZ_BUILD)/apidiff_ref -ot tests/c/diff/tools/lmdbdiff.c ]; }; then \
	  ref=$$(PYTHON=$(PYTHON) bash tests/c/ref/lmdb0936.sh) || exit 1; \
	  echo "cc ... fuzz/apidiff_ref.c (LMDB 0.9.36 from $$ref) -o $(FUZZ_BUILD)/apidiff_ref"; \
	  $(CC) -std=gnu11 -O1 -g -w -pthread -I"$$ref" fuzz/apidiff_ref.c "$$ref/mdb.c" "$$ref/midl.c" \
	    -o $(FUZZ_BUILD)/apidiff_ref || exit 1; \
	fi

fuzz-smoke: fuzz-build
	FUZZERS="$(FUZZ_NAMES)" bash fuzz/run.sh smoke $(FUZZ_SMOKE_SECS)

fuzz: fuzz-build
	FUZZERS="$(FUZZ_NAMES)" nice -n 19 bash fuzz/run.sh campaign $$(awk "BEGIN { print int($(HOURS) * 3600) }")

fuzz-seeds: lib
	@mkdir -p $(FUZZ_BUILD)/seeds fuzz/corpus/datafile fuzz/corpus/lockfile
	$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Werror fuzz/gen_seeds.c -llmdb -o $(FUZZ_BUILD)/seeds/gen_lmdb
	$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Werror -Isrc/mdbcore fuzz/gen_seeds.c $(BUILD)/libmdbcore.a \
	  -pthread -o $(FUZZ_BUILD)/seeds/gen_mdb
	$(FUZZ_BUILD)/seeds/gen_lmdb fuzz/corpus/datafile lmdb
	$(FUZZ_BUILD)/seeds/gen_mdb fuzz/corpus/datafile mdb
	$(FUZZ_BUILD)/seeds/gen_lmdb -lock fuzz/corpus/lockfile lmdb
	$(FUZZ_BUILD)/seeds/gen_mdb -lock fuzz/corpus/lockfile mdb

# ---- the lab (lab/README.md): slapd on stock LMDB and on our engine ----
# lab-smoke: every experiment at --size smoke on both engines (about 8 minutes), then one
# PNG per experiment and the report table; results under build/lab/smoke/.
# lab-1m: the 1,000,000-entry run of every experiment (about 2 hours on 2 cores; see
# lab/README.md), results, plots and report under lab/results/<date>-1m/ (to commit).
LAB_PY = $(if $(wildcard .venv/bin/python),.venv/bin/python,$(PYTHON))
.PHONY: lab-smoke lab-1m
lab-smoke: lib
	$(LAB_PY) -m lab run all --size smoke --engine both --rounds 3 --out build/lab/smoke
	$(LAB_PY) -m lab plot --results build/lab/smoke
	$(LAB_PY) -m lab report --results build/lab/smoke
	@echo "lab: plots in build/lab/smoke/plots/, rows in build/lab/smoke/results.jsonl, table in build/lab/smoke/report.md"

lab-1m: lib
	$(LAB_PY) -m lab run all --size 1m --engine both --rounds 3
	$(LAB_PY) -m lab plot
	$(LAB_PY) -m lab report

# lmdb-src: the lab's third engine, upstream LMDB 0.9.29 with symbols, fetched from py-lmdb
# 1.2.1's sdist on PyPI (SHA-256 checked) and compiled into build/lmdb-src/liblmdb.so;
# never committed (lab/lmdb_src.py).
.PHONY: lmdb-src
lmdb-src:
	$(LAB_PY) -m lab.lmdb_src
