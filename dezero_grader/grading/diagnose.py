"""The diagnosis: which root causes explain the failing checks of one grading.

A pure function of finished check results (scorecard check records: id, status, evidence) and
of the step's fingerprints (`dezero_grader/grading/fingerprints.py`): what each catalogued fault, injected
alone into the reference, made fail — which checks, with which status, which failing sub-check
cases, which exception types and which function a gradient trajectory blamed. Nothing here
runs code or reads grader internals; the result is plain data recorded in the scorecard and
rendered by the report.

The match is greedy, a set cover: the candidate that explains most of the failing checks still
unexplained, at the least cost in contradictions (checks its fingerprint says fail that passed
here), becomes the next cause, and the checks it explains leave the pool. A fault whose
fingerprint covers the whole failing set therefore beats several faults that each explain a
part. Besides the faults there are the learner's own errors: the same exception, raised at the
same place of their code (or with the same message) in several checks, is one cause even when no
catalogued fault matches it, and names that the package does not provide (an empty
`__init__.py`, a class that is missing) are one cause too. Faults whose fingerprints cannot be
told apart on the evidence are named together, as one cause. What no candidate explains is
listed as "no catalogued fault matches".
"""
from __future__ import annotations

import re

from dezero_grader.records.status import FAILING, PASSED

# how much a check explained by a catalogued fault counts, at best; a cluster of the learner's
# own errors counts a little less per check, so that a fault whose fingerprint has the same
# checks, statuses and exception types wins (and shows the learner's error as its evidence)
CLUSTER_WEIGHT = 0.75
# a function whose own battery check shows it wrong: direct evidence, worth an explained check
FUNCTION_WEIGHT = 1.0
# a check the fingerprint says fails but that passed here costs more than an explained one earns
CONTRADICTION_COST = 1.5
# a check counts as explained by a fault only when its signature is this close to the fingerprint's
EXPLAINS_AT = 0.7
# at least this share of what a fault predicts (among the checks judged here) must have failed
# the way its fingerprint says
MIN_SUPPORT = 0.5


# -- signatures --------------------------------------------------------------------------------

def _failing_findings(check):
    return [f for f in check.get('evidence', {}).get('findings', ()) if f.get('status') in FAILING]


def signature(check) -> dict:
    """What a failing check record shows of its failure, in the fingerprint's terms."""
    findings = _failing_findings(check)
    exceptions, divergent, messages = set(), set(), set()
    for f in findings:
        ev = f.get('evidence') or {}
        err = _error_of(f)
        if err is not None:
            exceptions.add(err[0])
            messages.add(_DIGITS.sub('#', _short(err[1]))[:120])
        missing = ev.get('missing')
        if isinstance(missing, list):   # what an api check found missing tells faults apart
            messages.update('missing {}'.format(n) for n in missing if isinstance(n, str))
        node = ev.get('divergent_node')
        nodes = (ev.get('graph') or {}).get('nodes') if isinstance(ev.get('graph'), dict) else None
        if isinstance(node, int) and isinstance(nodes, list) and 0 <= node < len(nodes):
            kind = nodes[node].get('type') if isinstance(nodes[node], dict) else None
            if isinstance(kind, str):
                divergent.add(kind)
    return {'status': check['status'],
            'cases': sorted({f.get('case') or '' for f in findings}),
            'exceptions': sorted(exceptions),
            'messages': sorted(messages),
            'divergent': sorted(divergent)}


def _jaccard(a, b):
    a, b = set(a), set(b)
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def similarity(seen: dict, expected: dict) -> float:
    """How well a failing check's signature agrees with a fingerprint's for that check: 1.0 when
    status, failing cases, exception types and messages (names found missing among them) are
    the same; under `EXPLAINS_AT` when the failing cases have nothing in common, or the code
    raised another kind of exception or another message."""
    value = 0.5 + 0.1 * (seen['status'] == expected['status']) \
        + 0.4 * _jaccard(seen['cases'], expected['cases'])
    # the trajectory blames another function than the fault's, the code raised another kind of
    # exception, or with another message: evidence against, not merely a weaker match
    for key, factor in (('divergent', 0.5), ('exceptions', 0.5), ('messages', 0.6)):
        if seen.get(key) and expected.get(key) and not set(seen[key]) & set(expected[key]):
            value *= factor
    if bool(seen['exceptions']) != bool(expected['exceptions']):
        value *= 0.85   # one raised, the other answered wrong
    if FORWARD_CASE in seen['cases'] and FORWARD_CASE not in expected['cases']:
        value *= 0.5    # the forward is wrong here; the fault's forward was right
    return value


# the sub-check of a function's own battery that compares its forward with the reference's
FORWARD_CASE = 'forward.value'


# -- the learner's own errors ------------------------------------------------------------------

_RAISED = re.compile(r'your code raised (?P<type>[\w.]+): (?P<message>.*)$', re.S)
_MISSING = (re.compile(r'the submission has no `([^`]+)`'),
            re.compile(r"cannot import name '([^']+)' from '(?:dezero)[\w.]*'"),
            re.compile(r"module '(?:dezero)[\w.]*' has no attribute '([^']+)'"))
# directories of a path (absolute or relative): what changes from one scratch copy to the next
_DIRS = re.compile(r"(?<![\w.-])/?(?:[\w.-]+/)+(?=[\w.-])")
_DIGITS = re.compile(r'\d+')
_NO_ATTRIBUTE = re.compile(r"'\w+' object has no attribute '(\w+)'")


def _error_of(finding):
    """(type, message, where) of an error a finding reports, or None."""
    ev = finding.get('evidence') or {}
    kind = ev.get('exception') or ev.get('raised')
    if not isinstance(kind, str) or not kind:
        return None
    where = ev.get('where') if isinstance(ev.get('where'), str) else ''
    message = ev.get('exception_message')
    if not isinstance(message, str):
        m = _RAISED.search(finding.get('message', ''))
        message = m.group('message') if m else finding.get('message', '')
        if where and message.endswith(' at ' + where):
            message = message[:-len(' at ' + where)]
    return kind, message.strip(), where


def _missing_names(finding):
    ev = finding.get('evidence') or {}
    names = []
    text = '{} {}'.format(finding.get('message', ''), ev.get('exception_message', ''))
    for pattern in _MISSING:
        names.extend(pattern.findall(text))
    return names


def _short(message):
    return _DIRS.sub('', message.splitlines()[0] if message else '')[:200]


# an array's repr in a message (`array([[1.5, 0.2], [...]])`, over several lines)
_ARRAY_REPR = re.compile(r'array\((?:[^()]|\([^()]*\))*\)')


def readable(message) -> str:
    """An error message as a root cause's title shows it: arrays it prints stand as `array(...)`,
    on one line, folders left out, at most 200 characters."""
    text = ' '.join(_ARRAY_REPR.sub('array(...)', message or '').split())
    return _DIRS.sub('', text)[:200]


# frames of a traceback in the submission's own files: `file:line in function`, relative paths
def _frames(finding):
    tb = (finding.get('evidence') or {}).get('traceback')
    if not isinstance(tb, list):
        return []
    return [f for f in tb if isinstance(f, str) and not f.startswith(('/', '<', ' ', 'File '))]


def _in_function(frame):
    """(file, function) of a `file:line in function` frame."""
    place, _, function = frame.partition(' in ')
    return place.rsplit(':', 1)[0], function


# a value that never arrived: what errors raised in many places say when one caller is wrong
_NONE = re.compile(r"NoneType|\bNone\b")
# inputs on two devices met in one operation
_DEVICE_MIX = re.compile(r"numpy\.ndarray|cupy|[Ii]mplicit conversion to a NumPy array")
# the most places one caller's errors are listed with
PLACES = 8


def _caller(where, frames):
    """For inputs of two devices met in a Function's forward: the frame of the learner's code that
    called the Function with them (past `__call__` and the function's own module, its wrapper),
    as far as the traceback shows; '' where it shows none."""
    calls = [n for n, f in enumerate(frames) if f.endswith(' in __call__')]
    if not calls or not where:
        return ''
    raised_in = _in_function(where)[0]
    for frame in reversed(frames[:calls[-1]]):
        if _in_function(frame)[0] != raised_in and not frame.endswith(' in __call__'):
            return frame
    return ''


def _through(groups, occurrences, frames):
    """Errors raised at three or more places of the code, all about a value that is None and all
    reached through one frame of the learner's code, are one cause: that frame (a
    `Variable.backward` that hands a Function no gradient makes every backward fail where it
    first uses it). A timeout inside the same function joins it. Returns the groups, merged."""
    by_frame = {}
    for key, ids in groups.items():
        if key[0] != 'where' or not all(_NONE.search(occurrences[i][1]) for i in ids):
            continue
        shared = {f for i in ids for f in frames.get(i, ()) if f != key[2]}
        for frame in shared:
            by_frame.setdefault(frame, []).append(key)
    if not by_frame:
        return groups
    frame, keys = max(by_frame.items(),
                      key=lambda kv: (len(kv[1]), sum(len(groups[k]) for k in kv[1])))
    if len(keys) < 3:
        return groups
    inside = _in_function(frame)
    keys += [k for k in groups if k[0] == 'where' and k not in keys
             and _in_function(k[2]) == inside]
    out = {k: v for k, v in groups.items() if k not in keys}
    out[('through', frame)] = [i for k in keys for i in groups[k]]
    return out


_NO_GRADIENT = re.compile(r'after backward, input (\d+) of (\S+) has no gradient')
_WRONG_FORWARD = re.compile(r'forward value of (\S+) differs from the reference')
_WRONG_GRADIENT = re.compile(r'gradient of (\S+) wrt input (\d+) differs from the reference')


def _function_evidence(check):
    """What a check's own findings say is wrong with one function: (function, part, input,
    pattern) — the forward's value, a gradient that is missing, or one that differs — or None."""
    findings = _failing_findings(check)
    for pattern, part in ((_WRONG_FORWARD, 'forward'), (_NO_GRADIENT, 'no gradient'),
                          (_WRONG_GRADIENT, 'backward')):
        for f in findings:
            m = pattern.search(f.get('message', ''))
            if m:
                fn = m.group(2) if part == 'no gradient' else m.group(1)
                i = m.group(1) if part == 'no gradient' else (
                    m.group(2) if part == 'backward' else None)
                return fn, part, i, (f.get('evidence') or {}).get('pattern') or ''
    return None


def _function_clusters(checks, claimed):
    """One cause per function whose own battery check shows it wrong (its forward's value, a
    missing or a wrong gradient), with the other failing checks whose findings name the function
    and raised nowhere in the learner's code (a higher derivative of it, a graph built from it):
    [(key, error, checks, direct checks)]. `claimed`: checks an error of the code explains."""
    direct = {}
    for c in checks:
        found = _function_evidence(c)
        if found is not None:
            direct.setdefault(found[:2], (found, []))[1].append(c['id'])
    out = []
    for (fn, part), (found, ids) in direct.items():
        bare = re.compile(r'(?<![\w.]){}\b'.format(re.escape(fn.split('.')[-1])))
        others = [c['id'] for c in checks if c['id'] not in ids and c['id'] not in claimed
                  and not c['id'].endswith('/api') and _function_evidence(c) is None
                  and any(bare.search(f.get('message', '')) for f in _failing_findings(c))]
        _, _, i, pattern = found
        error = {'type': {'forward': 'wrong forward', 'no gradient': 'no gradient',
                          'backward': 'wrong gradient'}[part],
                 'message': _function_message(fn, part, i, pattern), 'where': '',
                 'function': fn, 'part': part}
        hint = _function_hint(fn, part, i)
        if hint:
            error['hint'] = hint
        out.append((('function', fn, part), error, ids + others, ids))
    return out


def _function_message(fn, part, i, pattern):
    if part == 'forward':
        return 'the forward of {} computes other values than the reference'.format(fn)
    if part == 'no gradient':
        return 'the backward of {} gives no gradient (None) for input {}'.format(fn, i)
    return 'the backward of {} gives a wrong gradient for input {}{}'.format(
        fn, i, ' ({})'.format(pattern) if pattern else '')


def _function_hint(fn, part, i):
    from dezero_grader.checks import gradients
    if part == 'forward':
        return gradients.FORWARD_HINT.format(fn)
    if part == 'no gradient':
        return gradients.NO_GRADIENT_HINT.format(what=fn, i=i)
    return ''


def _clusters(checks):
    """The learner's own errors shared by failing checks: [(key, error, checks)]. Checks raising
    the same exception at the same place of the code are one cluster; an error reported without
    its place joins the cluster of the same exception and message; names the package lacks make
    one cluster of their own."""
    occurrences = {}      # check id -> (type, message, where) of its first error
    frames = {}           # check id -> the learner's frames of its first error
    missing = {}          # check id -> names
    listed = []           # names an api check lists as missing
    for c in checks:
        for f in _failing_findings(c) if c['id'].endswith('/api') else ():
            found = (f.get('evidence') or {}).get('missing')
            if isinstance(found, list):
                listed.extend(n for n in found if isinstance(n, str))
    missing_at = ''
    for c in checks:
        for f in _failing_findings(c):
            names = _missing_names(f)
            attribute = _NO_ATTRIBUTE.search(f.get('message', '') + ' ' + str(
                (f.get('evidence') or {}).get('exception_message', '')))
            if not names and attribute:   # a method the api check found missing, called
                names = [n for n in listed if n.endswith('.' + attribute.group(1))][:1]
            if not names and c['id'].endswith('/api'):
                found = (f.get('evidence') or {}).get('missing')
                names = [n for n in found if isinstance(n, str)] if isinstance(found, list) else []
            elif names and not missing_at:
                missing_at = (f.get('evidence') or {}).get('where') or ''
            if names:
                missing.setdefault(c['id'], [])
                missing[c['id']].extend(n for n in names if n not in missing[c['id']])
                continue
            err = _error_of(f)
            if err is not None and c['id'] not in occurrences:
                occurrences[c['id']] = err
                frames[c['id']] = _frames(f)
    placed = {}           # (type, message) -> the place it was first seen raised
    for kind, message, where in occurrences.values():
        if where:
            placed.setdefault((kind, _short(message)), where)
    groups = {}
    for check_id, (kind, message, where) in occurrences.items():
        if check_id in missing:
            continue
        where = where or placed.get((kind, _short(message)), '')
        key = ('where', kind, where) if where else ('message', kind, _short(message))
        groups.setdefault(key, []).append(check_id)
    groups = _through(groups, occurrences, frames)
    out = []
    for key, ids in groups.items():
        kind, message, _ = occurrences[ids[0]]
        if key[0] == 'through':
            places = []
            for i in ids:
                if occurrences[i][2] and occurrences[i][2] not in places:
                    places.append(occurrences[i][2])
            kinds = sorted({occurrences[i][0] for i in ids})
            out.append((key, {'type': ', '.join(kinds), 'where': key[1], 'places': places[:PLACES],
                              'count': len(places),
                              'message': 'errors about a value that is None in {} places, every '
                                         'one reached through {}'.format(len(places), key[1])},
                        ids))
            continue
        where = key[2] if key[0] == 'where' else ''
        error = {'type': kind, 'message': readable(message), 'where': where}
        if _DEVICE_MIX.search(message):
            caller = next((c for c in (_caller(where, frames.get(i, ())) for i in ids) if c), '')
            if caller:
                error['caller'] = caller
        out.append((key, error, ids))
    beyond_api = [i for i in missing if not i.endswith('/api')]
    if beyond_api:   # an api check alone that lists missing names is its own, plain, failure
        names = []
        for i in missing:
            names.extend(n for n in missing[i] if n not in names and n not in listed)
        # then what the api check lists, less the members of a class that is missing altogether
        names += [n for n in listed if n not in names and n.split('.')[0] not in names
                  and n.rsplit('.', 1)[0] not in names]
        out.append((('missing',), {'type': 'missing names', 'names': names[:20], 'message': '',
                                   'where': missing_at}, list(missing)))
    return out


# -- the diagnosis -----------------------------------------------------------------------------

def diagnose(checks, fingerprints=None, catalogue=None, counted=None) -> dict:
    """The root causes of the failing checks among `checks` (scorecard check records).

    `fingerprints`: {fault id: {check id: signature}} measured for the graded step (None or {}
    when the step has none); `catalogue`: {fault id: {'title', 'hint', 'step'}}; `counted`: the
    ids of the checks that decide the verdict (None: all of them).

    The causes of the failing checks that count are found first and ranked first, among
    themselves: a check that does not count (advice, e.g. the extension tier under the book
    profile) never outranks what decided the verdict. The causes of advice come after, marked
    `advice`; an advice check that a counted cause's fault explains joins that cause instead."""
    fingerprints = fingerprints or {}
    catalogue = catalogue or {}
    failing = {c['id']: c for c in checks if c['status'] in FAILING}
    passed = {c['id'] for c in checks if c['status'] == PASSED}
    seen = {i: signature(c) for i, c in failing.items()}

    def cover(remaining):
        found = []
        while remaining:
            best = _best(remaining, seen, passed, fingerprints, catalogue,
                         [failing[i] for i in remaining])
            if best is None:
                break
            found.append(best)
            done = set(best['checks'])
            remaining = [i for i in remaining if i not in done]
        return found, remaining

    counts = (lambda i: True) if counted is None else (lambda i: i in counted)
    causes, unexplained = cover([i for i in failing if counts(i)])          # scorecard order
    advice, advice_unexplained = cover([i for i in failing if not counts(i)])
    for cause in causes:
        cause['advice'] = False
    for cause in advice:
        same = next((c for c in causes if _identity(c) & _identity(cause)), None)
        if same is not None:   # the bug that decided the verdict makes advice fail too
            same['checks'] += cause['checks']
            continue
        cause['advice'] = True
        causes.append(cause)
    for n, cause in enumerate(causes, 1):
        cause['rank'] = n
        cause['summary'] = _summary(cause)
    return {'causes': causes, 'unexplained': unexplained,
            'unexplained_advice': advice_unexplained, 'fingerprints': bool(fingerprints)}


def _identity(cause) -> set:
    """What makes two causes one where they share any of it: a fault they name (a cause may name
    several that the evidence cannot tell apart), or the same error at the same place."""
    if cause['kind'] == 'fault':
        return {('fault', f['id']) for f in cause['faults']}
    error = cause['error']
    if error.get('names'):   # names the package lacks: one cause, whichever checks needed them
        return {('missing',)}
    return {('error', error['type'], error.get('where') or error['message'])}


def counted_ids(checks, profile) -> set:
    """The ids of the checks (scorecard check records) that decide the verdict under `profile`."""
    from dezero_grader.scoring.score import counts
    return {c['id'] for c in checks if counts(c['tier'], profile)}


def _fault_candidates(remaining, seen, passed, fingerprints):
    out = []
    for fault_id, prints in fingerprints.items():
        sims = {c: similarity(seen[c], prints[c]) for c in prints if c in seen}
        explained = [c for c in remaining if sims.get(c, 0.0) >= EXPLAINS_AT]
        if not explained:
            continue
        contradicted = sorted(c for c in prints if c in passed)
        # support: of the checks the fingerprint names that were judged here, the share that
        # failed the way it says (whether or not an earlier cause explains them already)
        judged = len(contradicted) + len(sims)
        if sum(1 for v in sims.values() if v >= EXPLAINS_AT) / judged < MIN_SUPPORT:
            continue
        score = sum(sims[c] for c in explained) - CONTRADICTION_COST * len(contradicted)
        if score <= 0:
            continue
        out.append({'score': score, 'fault': fault_id, 'checks': explained,
                    'contradicted': contradicted, 'predicted': len(prints),
                    'exact': judged == len(prints) == len(sims)
                    and all(v == 1.0 for v in sims.values())})
    return out


def _best(remaining, seen, passed, fingerprints, catalogue, remaining_checks):
    candidates = _fault_candidates(remaining, seen, passed, fingerprints)
    clusters = _clusters(remaining_checks)
    best_fault = max(candidates, key=lambda c: (c['score'], -len(c['contradicted'])), default=None)
    # one check's error is a cause of its own where it was raised in the code (a place to look)
    eligible = [(CLUSTER_WEIGHT * len(k[2]), k) for k in clusters
                if len(k[2]) > 1 or k[0] == ('missing',) or k[1].get('where')]
    # a function whose own check shows it wrong is a cause, unless the best catalogued fault
    # explains that check too (the fault names the bug, with its hint)
    # (a check whose error was raised at a place of the learner's code belongs to that place)
    claimed = {i for k in clusters if k[0][0] != 'message' for i in k[2]}
    explained = set(best_fault['checks']) if best_fault else set()
    for key, error, ids, direct in _function_clusters(remaining_checks, claimed):
        if not set(direct) <= explained:
            eligible.append((FUNCTION_WEIGHT * len(ids), (key, error, ids)))
    best = max(eligible, key=lambda e: e[0], default=None)
    cluster_score, best_cluster = best if best else (0.0, None)
    if best_fault is not None and best_fault['score'] >= cluster_score - 1e-9:
        tied = [c for c in candidates if abs(c['score'] - best_fault['score']) < 1e-9
                and c['checks'] == best_fault['checks']]
        tied.sort(key=lambda c: (len(c['contradicted']), c['predicted'],
                                 catalogue.get(c['fault'], {}).get('step', 0), c['fault']))
        faults = [dict(id=c['fault'], title=catalogue.get(c['fault'], {}).get('title', c['fault']),
                       hint=catalogue.get(c['fault'], {}).get('hint', ''))
                  for c in tied]
        top = tied[0]
        cause = {'kind': 'fault', 'faults': faults, 'checks': list(top['checks']),
                 'contradicted': list(top['contradicted']), 'exact': bool(top['exact'])}
        shared = [k for k in clusters if set(k[2]) & set(top['checks'])]
        if shared:   # the learner's own error, where the fault shows one
            cause['error'] = max(shared, key=lambda k: len(set(k[2]) & set(top['checks'])))[1]
        return cause
    if cluster_score > 0:
        key, error, ids = best_cluster
        return {'kind': 'error', 'faults': [], 'checks': [i for i in remaining if i in ids],
                'contradicted': [], 'exact': False, 'error': error}
    return None


def _plural(n, word):
    return '{} {}{}'.format(n, word, '' if n == 1 else 's')


def _summary(cause) -> str:
    n = len(cause['checks'])
    because = '{} fail{} because of it'.format(_plural(n, 'check'), 's' if n == 1 else '')
    if cause['kind'] == 'fault':
        titles = [f['title'] for f in cause['faults']]
        head = titles[0] if len(titles) == 1 else 'one of: ' + '; or '.join(titles)
        return '{}: {}'.format(head, because)
    error = cause['error']
    if error.get('names'):
        at = ' (first needed at {})'.format(error['where']) if error.get('where') else ''
        one = len(error['names']) == 1
        return ('your package does not provide {}{}: define {} under the book\'s name{} and import '
                '{} where the book does (dezero/__init__.py): {}'.format(
                    ', '.join('`{}`'.format(n) for n in error['names'][:8])
                    + (', ...' if len(error['names']) > 8 else ''), at,
                    'it' if one else 'them', '' if one else 's', 'it' if one else 'them', because))
    if error.get('function'):
        return '{} (no catalogued fault matches): {}'.format(error['message'], because)
    if error.get('places'):
        return ('your code fails in {} places on a value that is None ({}), every one reached '
                'through {}: look there first (no catalogued fault matches): {}'.format(
                    error.get('count', len(error['places'])), error['type'], error['where'],
                    because))
    at = ' at {}'.format(error['where']) if error.get('where') else ''
    if error.get('caller'):
        at += ', on arrays of two devices passed from {}'.format(error['caller'])
    return 'your code raises {}: {}{} (no catalogued fault matches): {}'.format(
        error['type'], error['message'], at, because)


summary = _summary   # a cause's one line, recounted where a reader sees only some of its checks


def counted_causes(diagnosis) -> list:
    """The causes of the checks that decide the verdict, most likely first."""
    return [c for c in (diagnosis or {}).get('causes', ()) if not c.get('advice')]


def advice_causes(diagnosis) -> list:
    """The causes of advice alone (checks that do not count), after the counted ones."""
    return [c for c in (diagnosis or {}).get('causes', ()) if c.get('advice')]


def cause_of(diagnosis, check_id):
    """The cause (a diagnosis entry) that explains a check, or None."""
    for cause in (diagnosis or {}).get('causes', ()):
        if check_id in cause['checks']:
            return cause
    return None


def top_faults(diagnosis) -> list:
    """The fault ids of the first cause (several where they cannot be told apart), or []."""
    causes = (diagnosis or {}).get('causes') or []
    if not causes or causes[0]['kind'] != 'fault':
        return []
    return [f['id'] for f in causes[0]['faults']]
