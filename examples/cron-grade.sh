#!/usr/bin/env bash
# Grade a class from cron: new and changed submissions only (the batch resumes), then refresh
# the exports. A run that overlaps the previous one steps aside. See docs/instructor-guide.md,
# "Grading from cron". Example crontab line (every 20 minutes, logging to a file):
#
#   */20 * * * *  STEP=52 /opt/course/cron-grade.sh >> /var/log/dezero-grade-step52.log 2>&1
#
# Settings (environment variables):
#   STEP         the step to grade (required)
#   SUBMISSIONS  folder with one sub-folder or .zip per learner
#   OUT          where scorecards, summary and exports go (kept between runs: that is the resume)
#   ROSTER       roster CSV (optional; needed for the Canvas export)
#   LTI          1: also write the LTI scores (the roster then needs an lti_user_id column; an
#                export that can place no score fails the run instead of posting nothing)
#   JOBS         submissions graded at once (default: the number of CPUs)
#   TIMEOUT      seconds one test of a submission may take (default 30)
set -euo pipefail

: "${STEP:?set STEP to the step to grade}"
COURSE="${COURSE:-$HOME/course}"
SUBMISSIONS="${SUBMISSIONS:-$COURSE/submissions/step$STEP}"
OUT="${OUT:-$COURSE/graded/step$STEP}"
ROSTER="${ROSTER:-$COURSE/roster.csv}"
JOBS="${JOBS:-$(getconf _NPROCESSORS_ONLN)}"
TIMEOUT="${TIMEOUT:-30}"
GRADE="${GRADE:-dezero-grade}"

mkdir -p "$(dirname "$OUT")"
# The batch refuses a second writer on the same folder anyway; this just keeps the log quiet.
exec 9>"$OUT.cron.lock"
if ! flock -n 9; then
    echo "$(date -u +%FT%TZ) step $STEP: the previous run is still grading; skipped"
    exit 0
fi

echo "$(date -u +%FT%TZ) step $STEP: grading $SUBMISSIONS into $OUT"
roster=()
[ -f "$ROSTER" ] && roster=(--roster "$ROSTER")
status=0
# nice: the machine stays usable; the batch pins BLAS threads to one per process itself
nice -n 10 "$GRADE" batch "$SUBMISSIONS" --step "$STEP" --out "$OUT" --jobs "$JOBS" \
    --timeout "$TIMEOUT" ${roster[@]+"${roster[@]}"} || status=$?
# status 1: some submission has no scorecard (a grader error, or two entries with one id): the
# summary lists them; the exports below still cover everyone else. Status 2: a usage error.
if [ "$status" -le 1 ] && [ -f "$OUT/summary.json" ]; then
    "$GRADE" export "$OUT" --format junit
    if [ "${LTI:-0}" = 1 ]; then
        "$GRADE" export "$OUT" --format lti
    fi
    if [ -f "$OUT/roster.json" ]; then
        "$GRADE" export "$OUT" --format canvas
    fi
fi
echo "$(date -u +%FT%TZ) step $STEP: done (batch exit status $status)"
exit "$status"
