# Shared by the end-to-end cells (tests/e2e/cells): failing loudly, reading
# agent-sim's report, fresh node directories, waiting on events (a log line,
# a container's exit) instead of polling, and recording each cell's result
# for README's compatibility table (scripts/compat-table).
# Expects: cell_id, work, results (directory), ENGINE_* (tests/e2e/engines.sh).

fail() {
  echo "FAIL ($cell_id): $*" >&2
  exit 1
}

check() {  # description, command...
  local what=$1
  shift
  "$@" || fail "$what"
}

# A field of the agent's one-line JSON report: json FIELD REPORT
json() { sed -n "s/.*\"$1\":\(\"[^\"]*\"\|[^,}]*\).*/\1/p" <<<"$2" | tr -d '"'; }
report() { grep '^{"generation"' <<<"$1" | tail -1; }

# SKIPPED, with the reason. Under CI=true a skip fails the run, unless the
# reason is a kernel feature this machine lacks that README lists
# (`kernel-feature` as the second argument).
skip() {  # reason [kernel-feature]
  echo "SKIPPED ($cell_id): $1" >&2
  cell_skipped=$1
  if [ "${CI:-}" = true ] && [ "${2:-}" != kernel-feature ]; then
    echo "FAIL ($cell_id): CI=true does not accept this skip" >&2
    exit 1
  fi
  exit 77
}

# What this cell shows, for README's table: cell SET-UP METHOD PROVES.
# With `describing` set it only prints them (the case runs in a subshell).
cell() {
  if [ -n "${describing:-}" ]; then
    printf '%s\t%s\t%s\n' "$1" "$2" "$3"
    exit 0
  fi
  cell_setup=$1
  cell_method=$2
  cell_proves=$3
}

# Written on exit: one row per cell (rank, runtime, set-up, method, what it
# proves, result, test name), tab-separated.
record_cell() {
  local rc=$1 result
  case $rc in
    0) result=passed ;;
    77) result="SKIPPED: ${cell_skipped:-see the log}" ;;
    *) result=FAILED ;;
  esac
  [ -n "${cell_setup:-}" ] || return 0
  mkdir -p "$results"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$ENGINE_RANK.$cell_rank" "$ENGINE_LABEL" "$cell_setup" "$cell_method" \
    "$cell_proves" "$result" "$cell_id" >"$results/$cell_id.tsv"
}

# A fresh node directory for a volume, as the engine's containers can use it.
hostpath() {
  local dir=$work/$1
  mkdir -p "$dir"
  engine_own "$dir"
  echo "$dir"
}

# Waits until a line of COMMAND's output matches REGEX, at most TIMEOUT
# seconds between lines; the command (`logs -f`, say) is stopped then.
wait_log() {  # timeout regex command...
  local timeout=$1 regex=$2
  shift 2
  local fifo=$work/log.$BASHPID.$RANDOM line fd pid found=1
  mkfifo "$fifo"
  "$@" >"$fifo" 2>&1 &
  pid=$!
  exec {fd}<"$fifo"
  while IFS= read -r -t "$timeout" -u "$fd" line; do
    if [[ $line =~ $regex ]]; then
      found=0
      break
    fi
  done
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  exec {fd}<&-
  rm -f "$fifo"
  return $found
}
