# attncap: build the library, the CLI, the tests and the benchmarks.
# `make deps` installs the Debian packages the build needs (run once, as root).

CC      ?= cc
ARCH    ?= -march=native
OPT     ?= -O2
CFLAGS  ?= $(OPT) $(ARCH) -g
override CFLAGS += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -Iinclude -I/usr/include/stb \
           -I/usr/include/x86_64-linux-gnu/openblas-pthread -fno-strict-aliasing
LDLIBS  += -lopenblas -lpng -lstb -lturbojpeg -lwebp -ltiff -lcjson -lstemmer -lpthread -lm
# The program alone links libmicrohttpd (attncap serve, src/cli/serve_*.c); the library does not.
CLI_LDLIBS := -lmicrohttpd
SAN_FLAGS = -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined

BUILD   ?= build
# The library's sources live in family folders (src/base/, src/cnn/, src/search/ ...;
# docs/architecture.md); src/cli/ is the command-line program. A .c or .h still flat in src/ (a branch merged
# before its file was moved) builds too. The library's files include each other's private headers by
# bare name ("pool.h"), so its own sources, and the tools and tests that use private headers, get
# every family folder on the include path: a file moving between families changes no #include.
LIB_DIRS := src $(patsubst %/,%,$(filter-out src/cli/,$(sort $(dir $(wildcard src/*/*.c src/*/*.h)))))
LIB_INC := $(addprefix -I,$(LIB_DIRS))
LIB_HDR := $(wildcard $(addsuffix /*.h,$(LIB_DIRS)))
LIB_SRC := $(wildcard $(addsuffix /*.c,$(LIB_DIRS)))
CLI_SRC := $(wildcard src/cli/*.c)
TEST_SRC:= $(wildcard tests/test_*.c)
BENCH_SRC := $(wildcard bench/*.c)
TOOL_SRC := $(wildcard tools/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)
TEST_BIN:= $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
TOOL_BIN := $(TOOL_SRC:tools/%.c=$(BUILD)/tools/%)
LIB     := $(BUILD)/libattncap.a
BIN     := $(BUILD)/attncap

# `make deps`: what building and running attncap needs (the README's main job: the compiler and the
# libraries; WordNet for METEOR's synonyms; the overlays' font; curl to fetch the encoder when there
# is no ../shared). `make test-deps`: what only the test suite uses (a browser to render the eval
# report, python3 for checks and the pseudo-terminal, pkg-config and man for the installed files);
# tests whose tool is missing say so and skip.
DEBIAN_PACKAGES := build-essential libopenblas-dev libstb-dev libpng-dev libturbojpeg0-dev libwebp-dev libtiff-dev \
                   libcjson-dev libstemmer-dev libmicrohttpd-dev \
                   wordnet-base fonts-dejavu-core curl ca-certificates
DEBIAN_TEST_PACKAGES := chromium python3 python3-pil python3-numpy pkg-config man-db abigail-tools \
                        python3-setuptools python3-wheel python3-venv python3-pip python3-pytest


.PHONY: bench-deps shared abi-baseline
.PHONY: all test test-asan test-valgrind test-slurm bench clean deps models demo train-flickr8k train-model train-tags-model fuzz imagenet-words install man shared portable test-deps
all: $(BIN) attncap $(TOOL_BIN)

attncap: $(BIN)
	@ln -sf $(BIN) attncap

$(BUILD)/%.o: %.c $(wildcard include/attncap/*.h) $(LIB_HDR) $(wildcard src/cli/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(if $(filter src/cli/%,$<),,$(LIB_INC)) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BIN): $(CLI_OBJ) $(LIB)
	$(CC) $(CFLAGS) $(CLI_OBJ) $(LIB) $(CLI_LDLIBS) $(LDLIBS) -o $@

# attncap serve's page, embedded by .incbin: its object follows the file.
$(BUILD)/src/cli/serve_page.o $(BUILD)/portable/src/cli/serve_page.o: web/index.html

$(BUILD)/tests/%: tests/%.c tests/test.h $(LIB_HDR) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LIB_INC) $< $(LIB) $(LDLIBS) -o $@

# test_fuzz_regress replays fuzz/fuzz_serve.c, which drives the server's request reading (a CLI file) and
# libmicrohttpd's post processor.
$(BUILD)/tests/test_fuzz_regress: $(BUILD)/src/cli/serve_request.o
$(BUILD)/tests/test_fuzz_regress: LDLIBS := $(BUILD)/src/cli/serve_request.o $(LDLIBS) $(CLI_LDLIBS)

$(BUILD)/bench/%: bench/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(LIB) $(LDLIBS) -o $@
# The few-rows product's bench calls the decoder's private kernel (src/decoder/smm.c).
$(BUILD)/bench/bench_smm: CFLAGS += $(LIB_INC)

# The CNN benchmark's peers (bench/cnn_peers.py): ours, and XNNPACK when Debian's libxnnpack-dev is
# installed (a dev tool, never linked into attncap).
PEER_BIN := $(BUILD)/bench/peers/attncap_cnn $(if $(wildcard /usr/include/xnnpack.h),$(BUILD)/bench/peers/xnnpack_cnn)
# The decode benchmark's (bench/decode_peers.py): ours, reduced and whole; its peers are Python's.
PEER_BIN += $(BUILD)/bench/peers/attncap_decode
$(BUILD)/bench/peers/attncap_decode: bench/peers/attncap_decode.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(LIB) $(LDLIBS) -o $@
$(BUILD)/bench/peers/attncap_cnn: bench/peers/attncap_cnn.c bench/peers/serve.h $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(LIB) $(LDLIBS) -o $@
$(BUILD)/bench/peers/xnnpack_cnn: bench/peers/xnnpack_cnn.c bench/peers/serve.h $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(LIB) -lXNNPACK -lpthreadpool $(LDLIBS) -o $@

# Development tools built on the library (they may use its internal headers).
$(BUILD)/tools/%: tools/%.c $(LIB_HDR) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LIB_INC) $< $(LIB) $(LDLIBS) -o $@

tests: $(TEST_BIN) $(BIN) $(TOOL_BIN) $(BUILD)/libattncap.so

# The shared library exports the core API alone (include/attncap/attncap.h's AC_API names; issue #31):
# the library's sources compiled again, position-independent with -fvisibility=hidden, linked with the
# version script src/libattncap.map (tests/core_api.sh checks both against the header; tests/abi.sh
# the ABI against abi/libattncap.abi). The static library exports everything, as static libraries do.
SHLIB_FLAGS := -fPIC -fvisibility=hidden
SHLIB_MAP   := src/libattncap.map
SHLIB       := $(BUILD)/libattncap.so
$(BUILD)/pic/%.o: %.c $(wildcard include/attncap/*.h) $(LIB_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LIB_INC) $(SHLIB_FLAGS) -c $< -o $@
$(SHLIB): $(LIB_SRC:%.c=$(BUILD)/pic/%.o) $(SHLIB_MAP)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -Wl,-soname,libattncap.so.$(SOMAJOR) -Wl,--version-script,$(SHLIB_MAP) -Wl,--no-undefined \
	    $(filter %.o,$^) $(LDLIBS) -o $@
	@ln -sf libattncap.so $(BUILD)/libattncap.so.$(SOMAJOR) # what programs linked to it look for
shared: $(SHLIB)
# The ABI baseline tests/abi.sh compares against: run after a deliberate, compatible change to
# attncap.h, or with a SONAME bump (commit the new abi/libattncap.abi).
abi-baseline: $(SHLIB)
	abidw --no-show-locs --no-corpus-path --out-file abi/libattncap.abi $(SHLIB)

# The man page: doc/attncap.1.in with every command's --help filled in by the binary itself.
MAN := $(BUILD)/attncap.1
man: $(MAN)
$(MAN): doc/attncap.1.in tools/gen_man.sh $(BIN)
	bash tools/gen_man.sh $(BIN) doc/attncap.1.in >$@.tmp && mv $@.tmp $@

VERSION := $(shell sed -n 's/^\#define AC_VERSION "\(.*\)"/\1/p' include/attncap/attncap.h)
SOMAJOR := $(firstword $(subst ., ,$(VERSION)))

# What `make install` installs is built for any x86-64 CPU, not -march=native: the translation units
# whose code depends on the instruction set (the CNN, the image resampler, the decoders: the LSTM, its
# attention scores and the transformer's step; the beam search, the small-matrix kernels, the copy
# path's mixture, the softmax's exponentials, the float16 conversions) are compiled three times, for
# x86-64-v4 (AVX-512), x86-64-v3 (AVX2, FMA, F16C) and baseline x86-64, and each of their functions is
# an ifunc that picks the best variant the CPU runs when the program or library is loaded
# (tools/gen_dispatch.sh); the rest is built for baseline x86-64. `make all` keeps -march=native. They
# are named by file, found in whichever folder of src/ holds them.
ISA_FILES := cnn.c cnn_gemm.c cnn_kernels.c cnn_q8.c image.c resize.c smm.c features.c features_extract.c decoder.c attention.c \
             copy.c expsum.c f16.c \
             transformer.c beam.c constraints.c caption.c decode_rows.c
ISA_SRC   := $(filter $(addprefix %/,$(ISA_FILES)),$(LIB_SRC))
ISAS      := avx512 avx2 generic
ISA_ARCH_avx512  := -march=x86-64-v4
ISA_ARCH_avx2    := -march=x86-64-v3
ISA_ARCH_generic := -march=x86-64
PORT      := $(BUILD)/portable
PORT_ARCH := -march=x86-64 -mtune=generic
PORT_OBJ  := $(patsubst %.c,$(PORT)/%.o,$(filter-out $(ISA_SRC),$(LIB_SRC))) \
             $(foreach i,$(ISAS),$(ISA_SRC:%.c=$(PORT)/$(i)/%.o)) $(PORT)/dispatch.o
PORT_LIB  := $(PORT)/libattncap.a
PORT_SHLIB:= $(PORT)/libattncap.so.$(VERSION)
PORT_BIN  := $(PORT)/attncap
$(PORT)/dispatch.c: tools/gen_dispatch.sh $(ISA_SRC:%.c=$(BUILD)/%.o)
	bash tools/gen_dispatch.sh $(PORT) $(ISAS) -- $(ISA_SRC:%.c=$(BUILD)/%.o)
$(PORT)/rename_%.h: $(PORT)/dispatch.c
	@test -f $@
# kept: as intermediates of the pattern rules make would delete them, and a later build that recompiles
# one ISA object (dispatch.c up to date) would find them gone
.SECONDARY: $(foreach i,$(ISAS),$(PORT)/rename_$(i).h)
$(PORT)/dispatch.o: $(PORT)/dispatch.c
	$(CC) $(CFLAGS) $(PORT_ARCH) $(SHLIB_FLAGS) -c $< -o $@
define isa_objects
$(PORT)/$(1)/%.o: %.c $(PORT)/rename_$(1).h $(wildcard include/attncap/*.h) $(LIB_HDR)
	@mkdir -p $$(dir $$@)
	$(CC) $(CFLAGS) $(LIB_INC) $(ISA_ARCH_$(1)) -mtune=generic $(SHLIB_FLAGS) -include $(PORT)/rename_$(1).h -c $$< -o $$@
endef
$(foreach i,$(ISAS),$(eval $(call isa_objects,$(i))))
$(PORT)/%.o: %.c $(wildcard include/attncap/*.h) $(LIB_HDR) $(wildcard src/cli/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(if $(filter src/cli/%,$<),,$(LIB_INC)) $(PORT_ARCH) $(SHLIB_FLAGS) -c $< -o $@
$(PORT_LIB): $(PORT_OBJ)
	@rm -f $@
	ar rcs $@ $^
$(PORT_SHLIB): $(PORT_OBJ) $(SHLIB_MAP)
	$(CC) $(CFLAGS) $(PORT_ARCH) $(LDFLAGS) -shared -Wl,-soname,libattncap.so.$(SOMAJOR) -Wl,--version-script,$(SHLIB_MAP) -Wl,--no-undefined \
	    $(filter %.o,$^) $(LDLIBS) -o $@
$(PORT_BIN): $(CLI_SRC:%.c=$(PORT)/%.o) $(PORT_LIB)
	$(CC) $(CFLAGS) $(PORT_ARCH) $(CLI_SRC:%.c=$(PORT)/%.o) $(PORT_LIB) $(CLI_LDLIBS) $(LDLIBS) -o $@
# The shared library's SONAME is libattncap.so.MAJOR.
portable: $(PORT_BIN) $(PORT_LIB) $(PORT_SHLIB)

# make install [PREFIX=/usr/local] [DESTDIR=staging]: the CLI, libattncap.a and libattncap.so, the
# headers (<attncap/attncap.h> includes them all), attncap.pc for pkg-config, the man page and bash
# completion. A program: cc prog.c $$(pkg-config --cflags --libs attncap).
PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
LIBDIR  ?= $(PREFIX)/lib
INCDIR  ?= $(PREFIX)/include
MANDIR  ?= $(PREFIX)/share/man
COMPDIR ?= $(PREFIX)/share/bash-completion/completions
# The model and its companions (tools/install_models.sh lists them); the installed attncap looks here
# (src/base/locate.c, AC_DATADIR: compiled into the portable build, rebuilt when DATADIR changes).
DATADIR ?= $(PREFIX)/share/attncap
$(PORT)/src/base/locate.o: override CFLAGS += -DAC_DATADIR='"$(DATADIR)"'
$(PORT)/src/base/locate.o: $(PORT)/datadir.txt
$(PORT)/datadir.txt: FORCE
	@mkdir -p $(dir $@); echo '$(DATADIR)' | cmp -s - $@ || echo '$(DATADIR)' >$@
.PHONY: FORCE
PC_LIBS := $(filter-out -lattncap,$(LDLIBS))
install: $(PORT_BIN) $(PORT_LIB) $(PORT_SHLIB) $(MAN)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCDIR)/attncap \
	           $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(COMPDIR)
	install -m 755 $(PORT_BIN) $(DESTDIR)$(BINDIR)/attncap
	install -m 644 $(PORT_LIB) $(DESTDIR)$(LIBDIR)/libattncap.a
	install -m 755 $(PORT_SHLIB) $(DESTDIR)$(LIBDIR)/libattncap.so.$(VERSION)
	ln -sf libattncap.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libattncap.so.$(SOMAJOR)
	ln -sf libattncap.so.$(SOMAJOR) $(DESTDIR)$(LIBDIR)/libattncap.so
	install -m 644 include/attncap/*.h $(DESTDIR)$(INCDIR)/attncap/
	printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(LIBDIR)' 'includedir=$(INCDIR)' '' 'Name: attncap' \
	  'Description: image captioning with visual attention (Show, Attend and Tell) in C' 'Version: $(VERSION)' \
	  'Cflags: -I$${includedir}' 'Libs: -L$${libdir} -lattncap' 'Libs.private: $(PC_LIBS)' \
	  >$(DESTDIR)$(LIBDIR)/pkgconfig/attncap.pc
	install -m 644 $(MAN) $(DESTDIR)$(MANDIR)/man1/attncap.1
	install -m 644 completions/attncap.bash $(DESTDIR)$(COMPDIR)/attncap
	bash tools/install_models.sh $(DESTDIR)$(DATADIR)
	$(MAKE) --no-print-directory install-python

# The Python package (python/, pure Python over libattncap.so) for Debian's system python3: copied into
# PYDIR, its attncap/_where.py recording where the library went. PREFIX /usr: /usr/lib/python3/dist-packages;
# any other: PREFIX/lib/pythonX.Y/dist-packages (on sys.path for /usr/local). Skipped without python3.
PYTHON ?= $(firstword $(wildcard /usr/bin/python3) python3)
PYVER   = $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
PYDIR  ?= $(if $(filter /usr,$(PREFIX)),$(PREFIX)/lib/python3/dist-packages,$(PREFIX)/lib/python$(PYVER)/dist-packages)
.PHONY: install-python
install-python:
	@if [ -z "$(PYVER)" ]; then echo "install-python: no $(PYTHON): the Python package is not installed"; exit 0; fi; \
	 set -e; install -d $(DESTDIR)$(PYDIR)/attncap; \
	 install -m 644 python/attncap/*.py python/attncap/py.typed $(DESTDIR)$(PYDIR)/attncap/; \
	 printf '%s\n' '# written by make install: where libattncap went' \
	   'LIBRARY = "$(LIBDIR)/libattncap.so.$(SOMAJOR)"' 'CHECKOUT = None' >$(DESTDIR)$(PYDIR)/attncap/_where.py; \
	 echo "install-python: the attncap package in $(DESTDIR)$(PYDIR)"

# The README's test command. Runs every test binary and tests/*.sh, prints "N passed, N failed".
test: tests
	@BUILD=$(BUILD) bash tests/run.sh

# The same suite under AddressSanitizer + UndefinedBehaviorSanitizer; tests/test_faults.c fails every
# allocation of its paths in turn, not every 7th (ATTNCAP_FAULTS_FULL).
test-asan:
	$(MAKE) BUILD=build-asan OPT= ARCH=-march=native CFLAGS="$(SAN_FLAGS) -march=native" LDFLAGS="-fsanitize=address,undefined" tests
	@BUILD=build-asan ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 ATTNCAP_FAULTS_FULL=1 bash tests/run.sh

# valgrind cannot execute AVX-512, so this build targets x86-64-v3 (AVX2/FMA). Every test binary runs
# under memcheck, and so does every attncap command the shell tests run (ATTNCAP_CLI_WRAPPER; about
# 10 minutes of the target's time). The binaries in
# VALGRIND_NODATA run with ATTNCAP_DATA=none: their ../shared cases (full-size MobileNet on real
# photos, the COCO golden metrics) would take hours under valgrind, so they print "skip" instead;
# `make test-valgrind VALGRIND_NODATA=` runs them too (make test-asan always does). No suppressions:
# the stb_image inputs that decoded from uninitialised memory are refused or padded by src/image/image.c.
VALGRIND_NODATA ?= test_cnn|test_faults|test_tags|test_tflite|test_metrics|test_meteor|test_overlay|test_batch_search
VALGRIND = valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite
test-valgrind:
	$(MAKE) BUILD=build-valgrind ARCH=-march=x86-64-v3 tests
	@log=$$(mktemp); nodata='^($(VALGRIND_NODATA))$$'; \
	 rest=$$( (ls build-valgrind/tests; ls tests/*.sh | sed 's|tests/||; s|[.]sh$$||') | grep -vE "$$nodata" | paste -sd'|'); \
	 if [ "$$nodata" != '^()$$' ]; then \
	   { BUILD=build-valgrind ATTNCAP_TEST_WRAPPER="$(VALGRIND)" ATTNCAP_TEST_FILTER="$$nodata" ATTNCAP_DATA=none \
	     bash tests/run.sh || echo fail >$$log.bad; } | tee $$log; fi; \
	 { BUILD=build-valgrind ATTNCAP_TEST_WRAPPER="$(VALGRIND)" ATTNCAP_CLI_WRAPPER="$(VALGRIND)" ATTNCAP_TEST_FILTER="^($$rest)$$" \
	   bash tests/run.sh || echo fail >$$log.bad; } | tee -a $$log; \
	 grep -E '^[0-9]+ passed, ' $$log | awk '{p += $$1; f += $$3; s += $$5} END {print "valgrind: " p " passed, " f " failed, " s " skipped"}'; \
	 ok=1; [ -e $$log.bad ] && ok=0; rm -f $$log $$log.bad; [ $$ok = 1 ]

# The Slurm and GNU parallel recipes of tools/slurm/ on a real one-node Slurm started here (root:
# installs slurm-wlm, munge and parallel from Debian; stops the daemons after). About 2 minutes.
test-slurm: all
	bash tools/slurm/test_slurm.sh

# libFuzzer targets (fuzz/README.md): each runs FUZZ_SECONDS at nice 19, one after another; fails if
# any of them left a crash input in build-fuzz/crashes/TARGET/.
FUZZ_SECONDS ?= 600
FUZZ_TARGETS ?= $(patsubst fuzz/fuzz_%.c,%,$(wildcard fuzz/fuzz_*.c))
fuzz:
	@for t in $(FUZZ_TARGETS); do bash fuzz/run.sh $$t $(FUZZ_SECONDS) || exit 1; done
	@bad=$$(for t in $(FUZZ_TARGETS); do ls -d build-fuzz/crashes/$$t/* 2>/dev/null; done); \
	 if [ -n "$$bad" ]; then echo "fuzz: crash inputs:"; echo "$$bad"; exit 1; else echo "fuzz: no findings"; fi

bench: $(BENCH_BIN) $(PEER_BIN) $(BIN)
	@bash bench/run.sh

# The default encoder, from ../shared or TensorFlow's official archive, and the detector the shipped
# model attends to, from ../shared (SHA-256 checked).
models:
	@bash tools/get_encoder.sh
	@bash tools/get_detector.sh

# The README's main job: caption samples/ with the committed model, overlays and sheets in out/.
demo: all models
	./attncap caption --force --overlays out/ samples/

# Redo the Flickr8k-only model (features, then training): the starting point of the shipped one.
train-flickr8k: all models
	bash tools/train_flickr8k.sh

# Redo the shipped model (models/README.md): the Flickr8k model above, then joint training on every
# captioned photo and the caption text of ../shared, tune, naming settings and calibration.
train-model: all models
	bash tools/train_pointer_model.sh

# The previous shipped model (ImageNet tags and naming rules; models/README.md, "The previous model").
train-tags-model: all models
	bash tools/train_model.sh

# Regenerate models/imagenet_words.tsv (ImageNet class -> caption word, see tools/imagenet_words.c)
# from ../shared (or ATTNCAP_DATA) and Debian's WordNet.
SHARED ?= $(or $(ATTNCAP_DATA),../shared)
IMAGENET_WORDS_CORPORA = $(SHARED)/data/text/flickr30k_captions.tsv $(SHARED)/data/text/coco_captions.tsv \
    $(SHARED)/data/flickr8k $(SHARED)/data/coco/captions.json $(SHARED)/data/coco_extra/captions.json \
    $(SHARED)/data/flickr30k/captions.tsv
imagenet-words: $(BUILD)/tools/imagenet_words
	$(BUILD)/tools/imagenet_words --synsets $(SHARED)/encoders/imagenet_synsets.txt --wordnet /usr/share/wordnet \
	    --out models/imagenet_words.tsv $(IMAGENET_WORDS_CORPORA)

deps:
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(DEBIAN_PACKAGES)

test-deps: deps
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(DEBIAN_TEST_PACKAGES)

# `make bench-deps`: the CNN benchmark's peers (bench/cnn_peers.py), dev tools only: XNNPACK, PyTorch, python3-onnx
# to write the ONNX Runtime peer's model (ONNX Runtime itself comes from npm, see bench/cnn.sh).
# npm only where none is installed: a machine with NodeSource's nodejs (which carries its own npm)
# refuses Debian's npm package beside it ("held broken packages").
bench-deps: test-deps
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libxnnpack-dev libpthreadpool-dev python3-onnx python3-numpy python3-torch \
	  $(if $(shell command -v npm),,nodejs npm)

clean:
	rm -rf build build-asan build-valgrind build-fuzz attncap
