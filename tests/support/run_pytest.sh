#!/usr/bin/env bash
# run_pytest.sh -- run one Python test suite with pytest and record its summary line.
#
#   run_pytest.sh SUITE_DIR RESULTS_FILE [--needs-mdb]
#
# * SUITE_DIR missing, or holding no test_*.py file: "skipped (no tests yet)", exit 0.
# * --needs-mdb and `import mdb` fails (the Python package is installed separately with
#   `pip install .`): "SKIPPED ... import mdb failed", exit 0 -- never reported as passed.
# * Otherwise pytest runs; its summary line ("== 12 passed in 3.4s ==") is appended to
#   RESULTS_FILE.  pytest's exit status 5 ("no tests collected") is a FAILURE here: the
#   directory has test files, so collecting nothing means something is broken.
set -u
suite=$1
results=$2
needs_mdb=${3:-}
PYTHON=${PYTHON:-python3}

if [ ! -d "$suite" ] || [ -z "$(find "$suite" -name 'test_*.py' -print -quit)" ]; then
    echo "pytest $suite: skipped (no test_*.py files yet)" | tee -a "$results"
    exit 0
fi
if [ "$needs_mdb" = "--needs-mdb" ]; then
    if ! err=$("$PYTHON" -c "import mdb" 2>&1); then
        msg="pytest $suite: SKIPPED -- 'import mdb' failed (install the package: pip install .): $(echo "$err" | tail -n 1)"
        echo "$msg" | tee -a "$results"
        exit 0
    fi
fi
log=$(mktemp "${TMPDIR:-/tmp}/pytest-XXXXXX.log")
"$PYTHON" -m pytest "$suite" -q -rfEs -p no:cacheprovider ${PYTEST_ARGS:-} 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
summary=$(grep -E '^=+ .*(passed|failed|error|skipped|no tests ran|deselected).* =+$' "$log" | tail -n 1)
[ -z "$summary" ] && summary=$(tail -n 1 "$log")
rm -f "$log"
case $rc in
    0) echo "pytest $suite: $summary" >>"$results" ;;
    5) echo "pytest $suite: FAILED -- no tests collected although test files exist: $summary" \
         | tee -a "$results"; exit 1 ;;
    *) echo "pytest $suite: FAILED (exit $rc): $summary" >>"$results"; exit 1 ;;
esac
