"""Verdicts with their evidence: a step whose regression checks fail is a **rollback** only
where the earlier step's check passed at that step's own commit (`--deep` also grades every
check that passed at its own step again at the newest step's commit, and a failing one is a
rollback of the first step whose commit holds the commit that broke it); then the commits in
between are bisected with that check alone (`Options(only=...)`) for the first one that breaks
it, and the diff of the graded files between the last good and the first bad commit is kept. A
regression check that never passed at its own step "never worked": the later step is a reject,
not a rollback. A grading the grader itself failed on is evidence of nothing: bisection steps
around it (as `git bisect skip` does) and says how far that leaves the first bad commit open.
"""
from __future__ import annotations

from dezero_grader.batch.folder import SCORECARDS
from dezero_grader.catalogue import assignments
from dezero_grader.history.grading import Grader, Grading
from dezero_grader.intake import load
from dezero_grader.intake.gitrepo import Repo, RepoError
from dezero_grader.records.status import FAILING, PASSED


def _deciding(check, profile) -> bool:
    return check.tier == 'book' or profile == 'extension'


GRADER_FAILURES = frozenset({'grader-error', 'grader-crashed', 'grader-stuck'})
UNKNOWN = 'unknown'


def check_status(g: Grading, check_id: str) -> str | None:
    """The status of one check in a grading: passed/failed/...; 'invalid' when the commit's code
    could not be graded; 'unknown' when the grader failed on it (its own fault: no evidence
    about the code either way); None when the grading did not run it."""
    if g.problem is not None:
        return UNKNOWN if g.problem['code'] in GRADER_FAILURES else 'invalid'
    card = g.card
    if card is None:
        return UNKNOWN
    if card.is_invalid:
        return UNKNOWN if card.invalid and card.invalid.code in GRADER_FAILURES else 'invalid'
    check = card.check(check_id)
    return check.status if check is not None else None


def _probe(s) -> int | None:
    """The next commit of a search to grade: the midpoint of what is still open, or the commit
    nearest to it that the grader has not failed on; None when nothing is left to grade."""
    open_ = [i for i in range(s['lo'] + 1, s['hi']) if i not in s['unknown']]
    mid = (s['lo'] + s['hi']) // 2
    return min(open_, key=lambda i: (abs(i - mid), i)) if open_ else None


def _commit_info(repo: Repo, sha: str) -> dict:
    c = repo.commit(sha)
    return {'commit': c.sha, 'short': c.short, 'subject': c.subject[:200], 'date': c.date}


def _first_bad(grader: Grader, own: dict, searches) -> None:
    """Bisect, for each search, the commits between the earlier step's (good) commit and the
    later step's (bad) commit for the first one where the check fails; every round grades the
    midpoints of all open searches together, each with only its checks."""
    for s in searches:
        s['lo'], s['hi'], s['probes'], s['unknown'] = -1, 0, 0, set()
        try:
            s['commits'] = grader.repo.between(s['good'], s['bad'])
        except RepoError:
            s['commits'] = None      # the repository lacks some of them: nothing to bisect
        if not s['commits']:
            continue
        status = {len(s['commits']) - 1: False}
        # step commits in between already say whether the check passed there
        for n, g in own.items():
            if g.sha in s['commits']:
                st = check_status(g, s['check'])   # None: that step's grading did not run it
                if st not in (None, 'invalid', UNKNOWN):
                    status.setdefault(s['commits'].index(g.sha), st == PASSED)
        hi = min(i for i, ok in status.items() if not ok)
        lo = max([i for i, ok in status.items() if ok and i < hi], default=-1)
        s['lo'], s['hi'] = lo, hi
    while True:
        open_ = [(s, _probe(s)) for s in searches]
        open_ = [(s, mid) for s, mid in open_ if mid is not None]
        if not open_:
            break
        wanted = {}
        for s, mid in open_:
            wanted.setdefault((s['step'], s['commits'][mid]), set()).add(s['check'])
        gradings = {k: grader.prepare(k[0], k[1], only) for k, only in wanted.items()}
        grader.grade(list(gradings.values()))
        for s, mid in open_:
            status = check_status(gradings[(s['step'], s['commits'][mid])], s['check'])
            s['probes'] += 1
            if status == UNKNOWN:
                s['unknown'].add(mid)
            elif status == PASSED:
                s['lo'] = mid
            else:
                s['hi'] = mid


def _deep_searches(grader: Grader, mapped, own: dict, profile: str) -> list:
    """`--deep`: every check that passed at its own step's commit, graded again at the newest
    step's commit (one grading per earlier step, its passed checks only); each that fails there
    is a search for the commit that first broke it. Package steps only (step files are separate
    files, each graded at its own step)."""
    last = max(mapped, key=lambda m: m.step)
    tip = own[last.step]
    if last.step < load.FIRST_PACKAGE_STEP or tip.doc is None:
        return []
    covered = {c.id for c in tip.card.checks}
    wanted = {}
    for m in mapped:
        g = own[m.step]
        if m.step >= last.step or m.step < load.FIRST_PACKAGE_STEP or g.doc is None:
            continue
        if g.sha == tip.sha or not grader.repo.is_ancestor(g.sha, tip.sha):
            continue
        passed = [c.id for c in g.card.checks if not c.regression and
                  c.status == PASSED and _deciding(c, profile) and c.id not in covered]
        if passed:
            wanted[m.step] = grader.prepare(m.step, tip.sha, passed)
    grader.grade(list(wanted.values()))
    searches = []
    for step, probe in sorted(wanted.items()):
        for check in probe.only:
            status = check_status(probe, check)
            if status not in FAILING and status != 'invalid':
                continue
            card = probe.card
            found = card.check(check) if card is not None else None
            reg = {'check': check, 'step': step, 'status': 'broken', 'passed_at': own[step].sha,
                   'message': (found.message if found else 'not gradable at {}'.format(
                       tip.sha[:10]))[:500], 'deep': True}
            searches.append({'row': None, 'reg': reg, 'step': step, 'check': check,
                             'good': own[step].sha, 'bad': tip.sha, 'paths': set(probe.paths)})
    return searches


def judge(grader: Grader, mapped, own: dict, profile: str, deep: bool = False) -> list:
    """One timeline row per mapped step, with its verdict and evidence."""
    rows, searches = [], []
    for sc in mapped:
        g = own[sc.step]
        row = {'step': sc.step, 'title': assignments.load(sc.step).title, 'how': sc.how,
               'evidence': sc.detail, **_commit_info(grader.repo, sc.sha),
               'graded_files': list(g.paths), 'content_hash': g.content_hash or None,
               'cached': g.cached, 'engine_verdict': None, 'score': None, 'seed': None,
               'own_failed': [], 'regressions': [], 'scorecard': None}
        rows.append(row)
        if g.problem is not None:
            row.update(verdict='invalid', reason='{}: {}'.format(g.problem['code'],
                                                                 g.problem['message']))
            continue
        card = g.card
        row.update(engine_verdict=card.verdict, seed=card.seed,
                   score={'earned': card.score.earned, 'possible': card.score.possible},
                   scorecard='{}/step{:02d}.json'.format(SCORECARDS, sc.step))
        if card.is_invalid:
            row.update(verdict='invalid', reason=card.reason)
            continue
        failing = [c for c in card.failing if _deciding(c, profile)]
        row['own_failed'] = [c.id for c in failing if not c.regression]
        for c in failing:
            if not c.regression:
                continue
            earlier = own.get(c.step)
            reg = {'check': c.id, 'step': c.step, 'message': c.message[:500]}
            at_own = check_status(earlier, c.id) if earlier is not None else None
            ref_step = c.step
            if earlier is not None and earlier.entry is not None and g.entry is not None and (
                    earlier.entry.kind != g.entry.kind or at_own is None):
                # a step file's check graded on the package (the regression packs of stage 5):
                # what passed in stepNN.py is other code; the package must have passed it at
                # an earlier step's commit (as one of that step's regression checks)
                kind = g.entry.kind
                passed = [m.step for m in mapped if m.step < sc.step and own[m.step].entry is not None
                          and own[m.step].entry.kind == kind
                          and check_status(own[m.step], c.id) == PASSED]
                if not passed:
                    if at_own is None:
                        there = ('step {}\'s own grading does not run it (a regression pack '
                                 'names it), and'.format(c.step))
                    elif at_own == PASSED:
                        there = 'it passed at step {}\'s own commit {} in {}, but'.format(
                            c.step, earlier.sha[:10], earlier.entry.path)
                    else:
                        there = 'it did not pass at step {}\'s own commit {} in {} ({}), and'.format(
                            c.step, earlier.sha[:10], earlier.entry.path, at_own)
                    reg.update(status='never-worked', passed_at=None,
                               why='{} the package has not passed it at any earlier step\'s '
                                   'commit: it never worked there'.format(there))
                    row['regressions'].append(reg)
                    continue
                ref_step = max(passed)
                earlier, at_own = own[ref_step], PASSED
            if earlier is None:
                reg.update(status='never-worked', why='step {} has no commit in the history: '
                           'nothing shows that this check ever passed'.format(c.step))
            elif at_own == UNKNOWN:
                reg.update(status=UNKNOWN, passed_at=None,
                           why='the grader failed on step {}\'s own commit {} (its bug, not the '
                               'code\'s): whether the check passed there is not known; grade the '
                               'history again'.format(c.step, earlier.sha[:10]))
            elif at_own != PASSED:
                reg.update(status='never-worked', passed_at=None,
                           why='it did not pass at step {}\'s own commit {} ({}): step {} is '
                               'a reject'.format(c.step, earlier.sha[:10], at_own, c.step))
            elif earlier.sha == sc.sha:
                reg.update(status='broken', passed_at=earlier.sha, first_bad=None,
                           why='it passed at step {} and fails at step {} on the same commit {}: '
                               'it depends on the seed (reproduce both with check '
                               '--seed)'.format(c.step, sc.step, sc.sha[:10]))
            elif not grader.repo.is_ancestor(earlier.sha, sc.sha):
                reg.update(status='broken', passed_at=earlier.sha, first_bad=None,
                           why='it passed at step {}\'s commit {}, which is not an earlier '
                               'commit of this one: the commit that broke it cannot be '
                               'searched'.format(c.step, earlier.sha[:10]))
            else:
                reg.update(status='broken', passed_at=earlier.sha)
                searches.append({'row': row, 'reg': reg, 'step': sc.step, 'check': c.id,
                                 'good': earlier.sha, 'bad': sc.sha, 'paths': set(g.paths),
                                 'good_step': ref_step})
            row['regressions'].append(reg)
    deep_searches = _deep_searches(grader, mapped, own, profile) if deep and mapped else []
    searches += deep_searches
    _first_bad(grader, own, searches)
    by_step = {r['step']: r for r in rows}
    for s in deep_searches:
        # the rollback belongs to the first step whose commit contains the first bad commit
        if not s['commits']:
            continue
        bad = s['commits'][s['hi']]
        owner = next((m.step for m in sorted(mapped, key=lambda m: m.step)
                      if m.step > s['step'] and grader.repo.is_ancestor(bad, m.sha)), None)
        if owner is not None and s['check'] not in {r['check'] for r in by_step[owner]['regressions']}:
            s['row'] = by_step[owner]
            by_step[owner]['regressions'].append(s['reg'])
    for s in searches:
        commits, reg = s['commits'], s['reg']
        if not commits:
            reg.update(first_bad=None, why='it passed at step {}\'s commit {}, and the commits '
                       'since cannot all be read (the repository lacks some): the commit that '
                       'broke it cannot be searched'.format(s.get('good_step', reg['step']),
                                                            s['good'][:10]))
            continue
        bad = commits[s['hi']]
        good = commits[s['lo']] if s['lo'] >= 0 else s['good']
        reg['first_bad'] = _commit_info(grader.repo, bad)
        reg['last_good'] = _commit_info(grader.repo, good)
        reg['searched'] = {'commits': len(commits), 'graded': s['probes']}
        skipped = sorted(i for i in s['unknown'] if s['lo'] < i < s['hi'])
        if skipped:
            reg['searched']['ungradable'] = len(skipped)
        paths = set(s['paths'])
        for sha in (good, bad):
            gr = grader.prepare(s['step'], sha)
            paths.update(gr.paths)
        reg['diff'] = grader.repo.diff(good, bad, sorted(paths)) if paths else \
            {'files': [], 'text': '', 'truncated': False}
        reg['why'] = ('it passed at step {}\'s commit {}{} and first fails at {} ("{}"){}'.format(
            s.get('good_step', reg['step']), s['good'][:10],
            '' if s.get('good_step', reg['step']) == reg['step'] else ' (as a regression check)',
            bad[:10], reg['first_bad']['subject'][:80],
            '; found by --deep, still failing at the newest step\'s commit' if reg.get('deep') else ''))
        if skipped:
            reg['why'] += ('; the grader failed on {} commit(s) just before it ({}), so the first '
                           'bad commit may be one of those'.format(
                               len(skipped), ', '.join(commits[i][:10] for i in skipped[:5])))
    for row in rows:
        if 'verdict' in row:
            continue
        broken = [r for r in row['regressions'] if r['status'] == 'broken']
        never = [r for r in row['regressions'] if r['status'] == 'never-worked']
        unknown = [r for r in row['regressions'] if r['status'] == UNKNOWN]
        if broken:
            named = sorted({r['first_bad']['short'] for r in broken if r.get('first_bad')})
            row['verdict'] = 'rollback'
            row['reason'] = '{} check(s) of earlier steps that passed at their own step now fail{}'.format(
                len(broken), ' (first broken by {})'.format(', '.join(named)) if named else '')
        elif row['own_failed'] or never:
            row['verdict'] = 'reject'
            parts = []
            if row['own_failed']:
                parts.append('{} of this step\'s checks fail (first: {})'.format(
                    len(row['own_failed']), row['own_failed'][0]))
            if never:
                parts.append('{} check(s) of earlier steps never worked (step{} {})'.format(
                    len(never), 's' if len({r['step'] for r in never}) > 1 else '',
                    ', '.join(str(s) for s in sorted({r['step'] for r in never}))))
            row['reason'] = '; '.join(parts)
        elif unknown:
            row['verdict'] = row['engine_verdict']
            row['reason'] = ('{} check(s) of earlier steps fail here, and whether they passed at '
                             'their own step is not known (the grader failed there): grade the '
                             'history again'.format(len(unknown)))
        else:
            row['verdict'] = g_verdict = row['engine_verdict']
            row['reason'] = own[row['step']].card.reason if g_verdict else ''
    return rows
