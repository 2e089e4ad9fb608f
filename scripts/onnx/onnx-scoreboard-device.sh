#!/usr/bin/env bash
# Runs the ONNX scoreboard on a machine with an OpenCL driver but no
# compiler: the cases `tcc onnx-test --prepare=DIR --target=T` compiled,
# each test data set through tcc-run, its outputs checked with tcc-compare
# at the tolerance the scoreboard computed for it (MANIFEST: NAME SET
# FUNCTION NUM_INPUTS TOLERANCE..., a tolerance per output: `exact` or
# ABS:REL).
#
#   scripts/onnx/onnx-scoreboard-device.sh DIR BIN [--device=N|NAME]
#
# BIN holds tcc-run and tcc-compare. Prints a PASS/FAIL line per case, the
# failures' logs, and `N passed, N failed`; writes DIR/RESULTS in the
# expectation-list format (`NAME pass` or `NAME fail: FIRST LINE`), which
# `scripts/onnx/onnx-scoreboard-check.py` holds against test/onnx/expectations.txt
# together with DIR/OUTCOMES (the cases that ended before running). The
# kernel form follows TCC_KERNEL_FORMAT as with tcc-run.
set -uo pipefail
dir=${1:?usage: onnx-scoreboard-device.sh DIR BIN [--device=N|NAME]}
bin=${2:?usage: onnx-scoreboard-device.sh DIR BIN [--device=N|NAME]}
shift 2
device=("$@")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin/tcc-run" --list-devices "${device[@]}" || exit 1
declare -A failed_case=()
declare -a order=()
while read -r name set function num_inputs tolerances; do
  [[ -n ${failed_case[$name]+x} ]] || { order+=("$name"); failed_case[$name]=""; }
  [[ -z ${failed_case[$name]} ]] || continue
  case_dir="$dir/$name"
  read -r -a tolerance <<< "$tolerances"
  inputs=(); outputs=()
  for ((i = 0; i < num_inputs; i++)); do inputs+=("--input=@$case_dir/$set.input$i.npy"); done
  for ((i = 0; i < ${#tolerance[@]}; i++)); do outputs+=("--output=@$work/got$i.npy"); done
  log="$work/$name.log"
  if ! "$bin/tcc-run" "$case_dir/model.so" --function="$function" "${device[@]}" "${inputs[@]}" "${outputs[@]}" > "$log" 2>&1; then
    failed_case[$name]="$set: $(grep -m1 'error' "$log" || head -1 "$log")"
    continue
  fi
  for ((i = 0; i < ${#tolerance[@]}; i++)); do
    if [[ ${tolerance[$i]} == exact ]]; then
      flags=(--exact)
    else
      flags=("--abs=${tolerance[$i]%%:*}" "--rel=${tolerance[$i]##*:}")
    fi
    if ! "$bin/tcc-compare" "${flags[@]}" "$work/got$i.npy" "$case_dir/$set.expected$i.npy" >> "$log" 2>&1; then
      failed_case[$name]="$set: $(grep -m1 '^FAIL' "$log" | sed "s|$work/||; s|$case_dir/||")"
      break
    fi
  done
done < "$dir/MANIFEST"
passed=0; failed=0
: > "$dir/RESULTS"
for name in "${order[@]}"; do
  if [[ -z ${failed_case[$name]} ]]; then
    echo "PASS $name"; echo "$name pass" >> "$dir/RESULTS"; passed=$((passed + 1))
  else
    echo "FAIL $name: ${failed_case[$name]}"
    echo "$name fail: ${failed_case[$name]}" >> "$dir/RESULTS"; failed=$((failed + 1))
  fi
done
echo "$passed passed, $failed failed (of $((passed + failed)) cases run; $(grep -c -v '^#' "$dir/OUTCOMES" || true) ended before running, see OUTCOMES)"
((failed == 0))
