# boxcar build.  `make` builds build/boxcar, build/boxcar-guard, build/boxcar-sandbox and
# build/boxcar-session-agent; it installs nothing: a missing library is one
# line naming it and its Debian package (`make deps` installs them);
# `make test` runs every suite; `make chaos` the full chaos run; `make run` runs the demo; SAN=1 builds with
# AddressSanitizer + UndefinedBehaviorSanitizer.

SAN ?= 0
BUILD ?= build
CC ?= cc
VERSION := $(shell cat VERSION)
# The commit is part of the version (0.1.0+g192ef54) so that worker_status
# tells two builds apart; outside a git checkout of this tree, plain VERSION.
GIT_REV := $(shell [ "$$(git -C '$(CURDIR)' rev-parse --show-toplevel 2>/dev/null)" = \
                     "$$(cd '$(CURDIR)' && pwd -P)" ] && git -C '$(CURDIR)' rev-parse --short=7 HEAD 2>/dev/null)
FULL_VERSION := $(VERSION)$(if $(GIT_REV),+g$(GIT_REV))

# The libraries boxcar links, as pkg-config modules, each with the Debian
# package that provides it.  Their flags come from pkg-config, never from
# paths written here; scripts/check-libs.sh checks they are all there
# before anything is compiled.  cmocka serves the unit tests only, and is
# checked only for them (the image's build stage has no cmocka).
PKG_CONFIG ?= pkg-config
PC_DEPS := libpq:libpq-dev libcurl:libcurl4-openssl-dev libcjson:libcjson-dev \
           libarchive:libarchive-dev zlib:zlib1g-dev libseccomp:libseccomp-dev \
           libcrypto:libssl-dev libmicrohttpd:libmicrohttpd-dev libsystemd:libsystemd-dev
PC_MODULES := $(foreach d,$(PC_DEPS),$(firstword $(subst :, ,$(d))))
PC_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PC_MODULES) 2>/dev/null)
PC_LIBS := $(shell $(PKG_CONFIG) --libs $(PC_MODULES) 2>/dev/null)
CMOCKA_LIBS := $(shell $(PKG_CONFIG) --libs cmocka 2>/dev/null)
SECCOMP_LIBS := $(shell $(PKG_CONFIG) --libs libseccomp 2>/dev/null)

WARN := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wmissing-prototypes \
        -Wstrict-prototypes -Wno-format-nonliteral
CPPFLAGS := -I. -I$(BUILD)/gen $(PC_CFLAGS) -D_GNU_SOURCE
CFLAGS := -std=c17 $(WARN) -g -MMD -MP -fno-strict-aliasing
LDFLAGS :=
ifeq ($(SAN),1)
  CFLAGS += -O1 -fsanitize=address,undefined -fno-sanitize-recover=all \
            -fno-omit-frame-pointer
  LDFLAGS += -fsanitize=address,undefined
else ifeq ($(SAN),fuzz)
  # libFuzzer harnesses (tests/fuzz): clang, coverage instrumentation on
  # every module, ASan + UBSan.
  CC := clang
  CFLAGS += -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all \
            -fno-omit-frame-pointer
  LDFLAGS += -fsanitize=address,undefined
else
  CFLAGS += -O2
  CPPFLAGS += -D_FORTIFY_SOURCE=2
endif
LDLIBS := $(PC_LIBS) -lpthread

# $(call write_if_changed,FILE,VAR): FILE holds VAR's value, rewritten
# (its time moved) only when that changes, so that what depends on it is
# rebuilt exactly then.  A variable's name, not its value: flags hold
# commas, which would split call's arguments.
write_if_changed = $(shell mkdir -p $(dir $(1)) && echo '$($(2))' > $(1).new && \
                     (cmp -s $(1).new $(1) || mv $(1).new $(1)))
# Objects are rebuilt when the flags change (SAN=1 after a plain build).
FLAGS_STAMP := $(BUILD)/.flags
FLAGS_TEXT := $(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS)
$(call write_if_changed,$(FLAGS_STAMP),FLAGS_TEXT)
# A header, rewritten only when the version changes: a new commit rebuilds
# the few files that include it, not the whole tree.
VERSION_H_TEXT := \#define BOXCAR_VERSION "$(FULL_VERSION)"
$(call write_if_changed,$(BUILD)/gen/version.h,VERSION_H_TEXT)

# One static library per module directory; a module's main.c (if any) is
# its executable, not part of the library.  A module's rooms (subfolders
# by concern) are part of its library.
MODULES := common storage sandbox worker agent
worker_ROOMS := cli config daemon db exec gc http job log metrics secrets session spec webhook workdir
define module_rules
$(1)_SRCS := $$(filter-out $(1)/main.c,$$(wildcard $(1)/*.c $$(foreach r,$$($(1)_ROOMS),$(1)/$$(r)/*.c)))
$(1)_OBJS := $$(patsubst %.c,$(BUILD)/obj/%.o,$$($(1)_SRCS))
$(BUILD)/lib$(1).a: $$($(1)_OBJS)
	@rm -f $$@
	$$(AR) rcs $$@ $$^
endef
$(foreach m,$(MODULES),$(eval $(call module_rules,$(m))))
# The guard's wait loop is both boxcar-guard's and the worker's fallback's
# (there through libc: sys_libc.c).
$(BUILD)/libworker.a: $(BUILD)/obj/worker/guard/wait.o $(BUILD)/obj/worker/guard/sys_libc.o

# The SQL in migrations/ and sql/ is compiled into the binary, so a worker
# image needs nothing but the executable to migrate its database.
EMBED_SQL := $(sort $(wildcard migrations/*.sql)) $(sort $(wildcard sql/*.sql))
# The list itself, as a stamp: a file removed (or renamed) is embedded no
# more.
$(call write_if_changed,$(BUILD)/gen/sql_list,EMBED_SQL)
$(BUILD)/gen/sql_files.c: scripts/embed-sql.sh $(EMBED_SQL) $(BUILD)/gen/sql_list
	@mkdir -p $(dir $@)
	scripts/embed-sql.sh $(EMBED_SQL) > $@.tmp && mv $@.tmp $@
$(BUILD)/obj/gen/sql_files.o: $(BUILD)/gen/sql_files.c $(FLAGS_STAMP) | check-libs
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# The job's seccomp filters are compiled by libseccomp (the source of
# truth, sandbox/seccomp-policy.c) at build time and embedded as BPF, so the
# helper does not spend ~1.5 ms building them at every spawn.
$(BUILD)/seccomp-gen: sandbox/tools/seccomp-gen.c $(BUILD)/obj/sandbox/seccomp-policy.o \
                      $(BUILD)/obj/sandbox/seccomp.o $(BUILD)/libcommon.a
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(SECCOMP_LIBS)
$(BUILD)/gen/seccomp_bpf.c: $(BUILD)/seccomp-gen
	@mkdir -p $(dir $@)
	$< > $@.tmp && mv $@.tmp $@
$(BUILD)/obj/gen/seccomp_bpf.o: $(BUILD)/gen/seccomp_bpf.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<
$(BUILD)/libsandbox.a: $(BUILD)/obj/gen/seccomp_bpf.o

# The session agent's interpreter wrappers (agent/wrappers/), embedded as
# strings: written and checked as Python and JavaScript, not as C literals.
AGENT_WRAPPERS := agent_python_wrapper=agent/wrappers/python.py agent_node_wrapper=agent/wrappers/node.js
$(BUILD)/gen/agent_wrappers.c: scripts/embed-text.sh $(foreach w,$(AGENT_WRAPPERS),$(lastword $(subst =, ,$(w))))
	@mkdir -p $(dir $@)
	scripts/embed-text.sh agent/wrappers.h $(AGENT_WRAPPERS) > $@.tmp && mv $@.tmp $@
$(BUILD)/obj/gen/agent_wrappers.o: $(BUILD)/gen/agent_wrappers.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<
$(BUILD)/libagent.a: $(BUILD)/obj/gen/agent_wrappers.o

LIBS := $(BUILD)/libworker.a $(BUILD)/libstorage.a $(BUILD)/libsandbox.a $(BUILD)/libcommon.a

$(BUILD)/obj/%.o: %.c $(FLAGS_STAMP) | check-libs
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD)/boxcar: $(BUILD)/obj/worker/main.o $(BUILD)/obj/gen/sql_files.o $(LIBS)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# boxcar-sandbox is linked statically (unless sanitized): every sandbox
# starts with an exec of it, and the dynamic loader's mappings and
# relocations cost more than the rest of its start on a virtualised host.
$(BUILD)/boxcar-sandbox: $(BUILD)/obj/sandbox/main.o $(BUILD)/libsandbox.a $(BUILD)/libcommon.a
	$(CC) $(if $(filter 0,$(SAN)),-static,$(LDFLAGS)) -o $@ $^

# boxcar-session-agent runs inside a session's sandbox, whose image may
# have no libc of ours: static (unless sanitized), and linked with nothing
# but libc and the few objects of libcommon it uses (the frames, dynbuf,
# rmtree), which the archive hands over alone.
$(BUILD)/boxcar-session-agent: $(BUILD)/obj/agent/main.o $(BUILD)/libagent.a $(BUILD)/libcommon.a
	$(CC) $(if $(filter 0,$(SAN)),-static,$(LDFLAGS)) -o $@ $^

# The pooled path with boxcar-sandbox's command line, for the security suite.
$(BUILD)/sandbox-warm-run: tests/security/warm-run.c $(BUILD)/libsandbox.a $(BUILD)/libcommon.a $(FLAGS_STAMP)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libsandbox.a $(BUILD)/libcommon.a $(LDLIBS)

# make bench's reference: the job command alone, spawned without a sandbox.
$(BUILD)/spawn-floor: bench/spawn_floor.c $(FLAGS_STAMP)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $<

# The guard of a --sandbox none job (worker/guard/main.c), exec'd at each
# job's start: on x86-64 with no libc at all (worker/guard/sys.h says why),
# its objects built freestanding; sanitized or on another architecture,
# through libc (sys_libc.c), and static unless sanitized.
GUARD_RAW := $(if $(and $(filter 0,$(SAN)),$(filter x86_64-%,$(shell $(CC) -dumpmachine))),1)
GUARD_SRCS := worker/guard/main.c worker/guard/wait.c \
              $(if $(GUARD_RAW),worker/guard/sys_raw.c,worker/guard/sys_libc.c)
# Through libc its objects are the plain build's (wait.o and sys_libc.o are
# libworker's too); freestanding, they are built apart.
GUARD_OBJS := $(patsubst %.c,$(BUILD)/obj$(if $(GUARD_RAW),/guard)/%.o,$(GUARD_SRCS))
$(BUILD)/obj/guard/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -D_FORTIFY_SOURCE=%,$(CPPFLAGS)) $(CFLAGS) -ffreestanding \
	  -fno-stack-protector -fno-pie -fcf-protection=none -fno-asynchronous-unwind-tables -c -o $@ $<
$(BUILD)/boxcar-guard: $(GUARD_OBJS)
	$(CC) $(if $(GUARD_RAW),-static -nostdlib -no-pie,$(if $(filter 0,$(SAN)),-static,$(LDFLAGS))) \
	  -o $@ $^

# Unit tests: tests/unit/<library>/[<room>/]test_<name>.c, each its own
# cmocka executable $(BUILD)/tests/unit/<same path>, linked against the
# libraries of the tree it sits in (never copies of their code):
# tests/unit/common/ libcommon alone, tests/unit/sandbox/ libsandbox +
# libcommon, tests/unit/storage/ libstorage + libcommon, tests/unit/worker/
# (a folder per room: worker/exec/ -> tests/unit/worker/exec/) everything,
# tests/unit/agent/ libagent + libcommon (test_agent drives the built
# boxcar-session-agent, test_spawn calls spawn.c itself).
# Base names are unique: `make test SUITES=unit T=test_proc` names one.
UNIT_SRCS := $(sort $(wildcard tests/unit/*/test_*.c tests/unit/*/*/test_*.c))
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/unit/%,$(UNIT_SRCS))
ifneq ($(wildcard tests/unit/test_*.c),)
  $(error $(wildcard tests/unit/test_*.c): a unit test goes under tests/unit/<library>/, beside what it tests (see tests/unit/run.sh))
endif
ifneq ($(filter-out common/% sandbox/% storage/% worker/% agent/%,$(UNIT_SRCS:tests/unit/%=%)),)
  $(error $(filter-out tests/unit/common/% tests/unit/sandbox/% tests/unit/storage/% tests/unit/worker/% tests/unit/agent/%,$(UNIT_SRCS)): not under a library's folder of tests/unit/)
endif
ifneq ($(words $(UNIT_SRCS)),$(words $(sort $(notdir $(UNIT_SRCS)))))
  $(error two unit tests have the same base name: $(sort $(foreach f,$(notdir $(UNIT_SRCS)),$(if $(filter-out 1,$(words $(filter %/$(f),$(UNIT_SRCS)))),$(f)))))
endif
unit_libs = $(strip $(if $(filter common/%,$(1)),$(BUILD)/libcommon.a,\
                     $(if $(filter agent/%,$(1)),$(BUILD)/libagent.a $(BUILD)/libcommon.a,\
                     $(if $(filter sandbox/%,$(1)),$(BUILD)/libsandbox.a $(BUILD)/libcommon.a,\
                     $(if $(filter storage/%,$(1)),$(BUILD)/libstorage.a $(BUILD)/libcommon.a,\
                     $(BUILD)/obj/gen/sql_files.o $(LIBS))))))
.SECONDEXPANSION:
$(BUILD)/tests/unit/%: tests/unit/%.c $$(call unit_libs,$$*) $(FLAGS_STAMP) | check-unit-libs
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(call unit_libs,$*) $(LDLIBS) $(CMOCKA_LIBS)
# The agent's tests run the agent itself, found beside them in $(BUILD).
$(filter $(BUILD)/tests/unit/agent/%,$(UNIT_BINS)): $(BUILD)/boxcar-session-agent

# Fuzz harnesses: tests/fuzz/fuzz_<name>.c, each a libFuzzer executable
# linked against the module libraries (build with SAN=fuzz; `make fuzz`).
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRCS))
$(BUILD)/fuzz/%: tests/fuzz/%.c $(BUILD)/obj/gen/sql_files.o $(LIBS) $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -fsanitize=fuzzer $(LDFLAGS) -o $@ $< \
	  $(BUILD)/obj/gen/sql_files.o $(LIBS) $(LDLIBS)
# The C validator's verdict on spec files, for the SQL/C differential test.
$(BUILD)/fuzz/spec-check: tests/fuzz/spec-check.c $(BUILD)/obj/gen/sql_files.o $(LIBS) $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/obj/gen/sql_files.o $(LIBS) $(LDLIBS)
fuzz-bins: $(FUZZ_BINS) $(BUILD)/fuzz/spec-check

BINS := $(BUILD)/boxcar $(BUILD)/boxcar-guard $(if $(wildcard sandbox/main.c),$(BUILD)/boxcar-sandbox) \
        $(BUILD)/boxcar-session-agent

.DEFAULT_GOAL := all
.PHONY: all check-libs check-unit-libs deps test test-vm chaos unit-tests run bench lint clang-tidy cppcheck format-check format \
        clean distclean dev-up dev-down fuzz fuzz-bins deb

all: check-libs check-unit-libs $(BINS) $(UNIT_BINS) $(BUILD)/sandbox-warm-run

# Every object waits for it (order-only), so a missing library is its one
# line, not a compiler's "no such file" for a header.
check-libs:
	@PKG_CONFIG='$(PKG_CONFIG)' scripts/check-libs.sh $(PC_DEPS)
check-unit-libs: check-libs
	@PKG_CONFIG='$(PKG_CONFIG)' scripts/check-libs.sh cmocka:libcmocka-dev

deps:
	@scripts/deps.sh all

unit-tests: $(UNIT_BINS)

# SUITES="unit sql" runs some suites only; T="t_drain 01_enqueue" some tests
# of them only (a script's or a test's base name, tests/select.sh); a T that
# names no test of those suites fails.
unexport T
test: deps
	@$(MAKE) --no-print-directory all SAN=$(SAN) BUILD=$(BUILD)
	@SAN=$(SAN) BOXCAR_BUILD=$(BUILD) BOXCAR_T='$(T)' scripts/test.sh $(SUITES)

# The cgroup v2 VM suite alone (it is also part of `make test`).
test-vm: deps
	@$(MAKE) --no-print-directory all SAN=$(SAN) BUILD=$(BUILD)
	@SAN=$(SAN) BOXCAR_BUILD=$(BUILD) BOXCAR_T='$(T)' scripts/test.sh vm

# Chaos at scale, full size: 100,000 jobs (tests/chaos/chaos.sh; the chaos
# suite of `make test` runs 10,000), then its sandboxed run (2,000 jobs,
# CHAOS_SANDBOX_JOBS=N).  CHAOS_JOBS=N for another size.
CHAOS_JOBS ?= 100000
chaos: deps
	@$(MAKE) --no-print-directory all SAN=$(SAN) BUILD=$(BUILD)
	@SAN=$(SAN) BOXCAR_BUILD=$(BUILD) BOXCAR_T='$(T)' CHAOS_JOBS=$(CHAOS_JOBS) scripts/test.sh chaos

run: deps
	@$(MAKE) --no-print-directory all
	@scripts/demo.sh

# Benchmarks: bench/<name>.sh, all or BENCHES="queue egress" (bench/run.sh).
bench: deps
	@$(MAKE) --no-print-directory all
	@bench/run.sh $(BENCHES)

# Every libFuzzer harness for FUZZ_SECONDS each (default 60), in their own
# build directory; corpora and crash reproducers under .dev/fuzz.
FUZZ_SECONDS ?= 60
fuzz: deps
	@SAN=$(SAN) BOXCAR_BUILD=$(BUILD) BOXCAR_T='$(T)' FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run.sh

# The Debian package (scripts/deb.sh): binaries, systemd unit, default
# configuration, man pages; $(BUILD)/deb/boxcar_<version>_<arch>.deb.
# The version is Debian's spelling of FULL_VERSION.
deb: $(BINS)
	@scripts/deb.sh $(BUILD) '$(FULL_VERSION)'

dev-up: deps
	@scripts/pg.sh start

dev-down:
	@scripts/pg.sh stop
	@scripts/s3.sh stop
	@scripts/rgw.sh stop

# `make lint`: clang-tidy and cppcheck over the modules, and the C sources'
# format (.clang-format; scripts/format.sh lists the files, and `make
# format` formats the same ones); each runs, and lint fails if one did.
# The lint suite (tests/lint, part of `make test`) runs cppcheck and the
# format check too, not clang-tidy: about 5 minutes of a CPU.
lint:
	@rc=0; for t in clang-tidy cppcheck format-check; do \
	  $(MAKE) --no-print-directory $$t || rc=1; done; exit $$rc

clang-tidy:
	clang-tidy --quiet $(foreach m,$(MODULES),$(wildcard $(m)/*.c $(foreach r,$($(m)_ROOMS),$(m)/$(r)/*.c))) -- $(CPPFLAGS) -std=c17

# cppcheck does not model __attribute__((cleanup)): every _cleanup_free_
# local returned early from is a "leak" to it, so leaks are left to the
# ASan and Valgrind suites, which run the code.  log_event's NULL
# terminator is checked by GCC (__attribute__((sentinel))).  The few other
# findings it cannot see through are suppressed where they stand, with why.
cppcheck:
	cppcheck --quiet --error-exitcode=1 --enable=warning,portability --inline-suppr \
	  --suppress=missingIncludeSystem --suppress=memleak --suppress=resourceLeak \
	  --suppress=varFuncNullUB -I. $(MODULES)

format-check:
	@scripts/format.sh check

format:
	scripts/format.sh fix

clean:
	rm -rf $(BUILD) build-fuzz build-vg

distclean: clean
	-scripts/pg.sh stop
	rm -rf .dev node_modules

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
