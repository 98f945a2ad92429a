# Sourced by tests/ops/run.sh: `make` (the default goal, all) installs
# nothing and, when a library is missing, says which and what to install
# in one line before compiling anything; `make run` and `make test` are
# the ones that install (through scripts/deps.sh).
build_has() { grep -qF -- "$2" <<<"$1"; }
build_test() {
  local out
  out=$(make -n --no-print-directory BUILD="$W/build-n" all 2>&1)
  check "make -n all prints the compile commands (it is a real dry run)" build_has "$out" "-c -o $W/build-n/obj/worker/main.o worker/main.c"
  check "make -n all runs no apt-get and no scripts/deps.sh" \
    eval '! grep -qE "apt-get|deps\.sh" <<<"$out"'
  check "the Makefile hard-codes no include path or library (pkg-config gives them)" \
    eval '! grep -nE -- "-I/usr|-l(pq|curl|cjson|archive|z|seccomp|crypto|microhttpd|systemd|cmocka)\\b" Makefile'
  check "make -n all compiles with pkg-config's flags ($(pkg-config --cflags libpq libcjson))" \
    build_has "$out" "$(pkg-config --cflags libpq libcurl libcjson)"
  for goal in run test deps; do
    out=$(make -n --no-print-directory BUILD="$W/build-n" $goal 2>&1 | head -5)
    check "make -n $goal installs (scripts/deps.sh all)" build_has "$out" "scripts/deps.sh all"
  done

  # pkg-config that finds nothing: one line naming every library and package.
  mkdir -p "$W/pc-empty"
  out=$(PKG_CONFIG_PATH="$W/pc-empty" PKG_CONFIG_LIBDIR="$W/pc-empty" \
        make --no-print-directory BUILD="$W/build-nolib" all 2>&1); local rc=$?
  check "make all fails when pkg-config finds no library (rc=$rc)" test "$rc" -ne 0
  check "...with one line naming the modules, the Debian packages and make deps" \
    build_has "$out" "make: missing libraries libpq libcurl libcjson libarchive zlib libseccomp libcrypto libmicrohttpd libsystemd (pkg-config modules not found): install the Debian packages libpq-dev libcurl4-openssl-dev libcjson-dev libarchive-dev zlib1g-dev libseccomp-dev libssl-dev libmicrohttpd-dev libsystemd-dev, or run make deps"
  check "...before compiling anything" test ! -d "$W/build-nolib/obj"

  # One library taken away: every other system .pc file, libcjson's not.
  mkdir -p "$W/pc-some"
  local d
  for d in $(pkg-config --variable pc_path pkg-config | tr : ' '); do
    [[ -d $d ]] && find "$d" -maxdepth 1 -name '*.pc' ! -name 'libcjson.pc' -exec ln -sf {} "$W/pc-some/" \;
  done
  out=$(PKG_CONFIG_PATH="$W/pc-some" PKG_CONFIG_LIBDIR="$W/pc-some" \
        make --no-print-directory BUILD="$W/build-nocjson" all 2>&1); rc=$?
  is "make all without libcjson.pc: the one line" "$(grep '^make: missing' <<<"$out")" \
    "make: missing library libcjson (pkg-config module libcjson not found): install the Debian package libcjson-dev, or run make deps"
  check "...and it fails (rc=$rc) before compiling anything" eval '[[ $rc -ne 0 && ! -d $W/build-nocjson/obj ]]'

  # cmocka serves the unit tests alone: the binaries build without it (the
  # image's build stage has none), `make all` names it.
  rm -f "$W/pc-some"/*.pc
  for d in $(pkg-config --variable pc_path pkg-config | tr : ' '); do
    [[ -d $d ]] && find "$d" -maxdepth 1 -name '*.pc' ! -name 'cmocka.pc' -exec ln -sf {} "$W/pc-some/" \;
  done
  out=$(PKG_CONFIG_PATH="$W/pc-some" PKG_CONFIG_LIBDIR="$W/pc-some" \
        make --no-print-directory BUILD="$W/build-nocmocka" check-libs 2>&1); rc=$?
  check "without cmocka.pc the binaries' check passes (rc=$rc: make build/boxcar would build)" \
    eval '[[ $rc -eq 0 && -z $out ]]'
  out=$(PKG_CONFIG_PATH="$W/pc-some" PKG_CONFIG_LIBDIR="$W/pc-some" \
        make --no-print-directory BUILD="$W/build-nocmocka" all 2>&1); rc=$?
  is "...but make all (the unit tests too) names it" "$(grep '^make: missing' <<<"$out")" \
    "make: missing library cmocka (pkg-config module cmocka not found): install the Debian package libcmocka-dev, or run make deps"
  check "...and stops (rc=$rc) before compiling anything" eval '[[ $rc -ne 0 && ! -d $W/build-nocmocka/obj ]]'
}
build_test
