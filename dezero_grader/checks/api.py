"""`api.present`: the public names a step introduces exist in the submission."""
from dezero_grader.checks import Plan, learner_error_finding, register
from dezero_grader.records.dataflow import Finding, Probe


def _plan(params, seed):
    return Plan(learner=(Probe('api.names', {'names': list(params['names'])}, seed),))


def _judge(inp):
    obs = inp.learner[inp.plan.learner[0]]
    if not obs.ok:
        return [learner_error_finding(obs, 'looking up public names')]
    missing = [n for n, kind in obs.value.items() if kind is None or str(kind).startswith('error')]
    if missing:
        errors = {n: obs.value[n] for n in missing if obs.value[n]}
        return [Finding('failed', 'missing public names: {}'.format(', '.join(missing)),
                        evidence={'missing': missing, 'errors': errors,
                                  'found': sorted(n for n in obs.value if n not in missing)},
                        hint='the book\'s API names these; define them with exactly these names')]
    return [Finding('passed', 'all {} names present'.format(len(obs.value)))]


register('api.present', summary='the public names the step introduces exist',
         params={'names': {'type': 'array', 'items': {'type': 'string'}, 'minItems': 1}},
         required=('names',), plan=_plan, judge=_judge)
