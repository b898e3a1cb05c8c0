#!/usr/bin/env bash
# The coverage campaign of docs/coverage.md: symmetry, Table 9 bound and monotonicity of every
# catalog instruction, one job per group of instructions with one query, through the campaign
# runner's local pool on every CPU of the machine. Each claim gets at most its share of the
# wall time (SIGINT at the end: the runner stops its workers; finished verdicts are in the
# records and the progress store, and the same command resumes). Usage:
#   OUT=DIR bash bench/coverage_campaign.sh [SYM_S BOUND_S MONO_S PAIRS_S]  (from the repository
#   root); last, distinguish --all-pairs '*' (adjacent architectures) in PAIRS_S seconds.
# A share of 0 skips that step. The records written (proofs/, counterexamples/) are packed
# into $OUT/records.tgz, for a campaign run on a lent machine whose checkout is thrown away.
set -u -o pipefail
OUT=${OUT:-/tmp/coverage}; mkdir -p "$OUT"
STAMP=$(mktemp); touch "$STAMP"
pack() { find proofs counterexamples -type f -newer "$STAMP" | tar czf "$OUT/records.tgz" -T -; }
trap pack EXIT
SYM=${1:-170}; BND=${2:-120}; MON=${3:-230}; PAIRS=${4:-60}
echo "# $(date -u +%FT%TZ) $(hostname) $(nproc) CPUs; python $(python3 -c 'import sys; print(sys.version.split()[0])')"
python3 -m mmaformal.cli --version | head -3
# a stated subset for the side-by-side timings (dev machine, Ray): symmetry of sm8*/*, redone
if [ "${SUBSET:-1}" = 1 ]; then
  t0=$SECONDS
  python3 -m mmaformal.cli prove symmetry --all 'sm8*/*' --redo --timeout 60 \
      --progress "$OUT/subset.jsonl" > "$OUT/subset.out" 2>&1
  echo "subset: $(tail -4 "$OUT/subset.out" | head -1); wall $((SECONDS - t0)) s"
fi
for spec in "symmetry $SYM" "bound $BND" "monotonic $MON"; do
  set -- $spec
  [ "$2" = 0 ] && continue
  echo "## prove $1 --all (at most $2 s)"
  t0=$SECONDS
  timeout -s INT -k 20 "$2" python3 -m mmaformal.cli prove "$1" --all --save --json \
      --timeout "${TIMEOUT:-60}" --progress "$OUT/$1.jsonl" > "$OUT/$1.out" 2> "$OUT/$1.err"
  echo "rc $? wall $((SECONDS - t0)) s"; tail -c 300 "$OUT/$1.err"; echo
  tail -1 "$OUT/$1.out" | cut -c1-400; echo
done
[ "$PAIRS" = 0 ] && exit 0
echo "## distinguish --all-pairs '*' (at most $PAIRS s)"
t0=$SECONDS
timeout -s INT -k 20 "$PAIRS" python3 -m mmaformal.cli distinguish --all-pairs '*' --save --json \
    --timeout 30 --progress "$OUT/pairs.jsonl" > "$OUT/pairs.out" 2> "$OUT/pairs.err"
echo "rc $? wall $((SECONDS - t0)) s"; tail -c 300 "$OUT/pairs.err"; echo
tail -1 "$OUT/pairs.out" | cut -c1-400; echo
