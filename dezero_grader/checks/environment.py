"""`env.no_cupy`: the submission imports and runs on a machine without CuPy, as the book's
readers have it before step 52 (and most after: the book's `dezero.cuda` makes the GPU
optional).

The learner's code is first imported with no CuPy at all (`dezero_grader.grading.worker_session`: `import cupy`
raises ModuleNotFoundError there, as it does on such a machine), and the checks that run on the
host run in that worker; only the device checks run where the (simulated) CuPy is. This check
judges the import itself: its pseudo-probe (`NO_CUPY`) is answered by `dezero_grader.grading.worker_session` from that
first import, never by a worker's scenario. A package that imports only where CuPy is (an
unguarded `import cupy`, a `cp.ndarray` annotation evaluated at import) fails it, and is graded
with the device for everything else so that its other checks still say what they find. From
step 52 on (`gpu_module`), `dezero.cuda.gpu_enable` must be False there.

Every grading has this check (`uses_for`), of the step's own, with no points: it decides the
verdict (a package a reader cannot import is not accepted) and never regresses.
"""
from dezero_grader.checks import Plan, register
from dezero_grader.records.dataflow import CheckUse, Fault, Finding, Probe

NO_CUPY = 'env.no_cupy'
CHECK_ID = 'no_cupy'
FIRST_GPU_STEP = 52

HINT_IMPORT = ('import CuPy the way the book\'s dezero/cuda.py does: try: import cupy / except '
               'ImportError: gpu_enable = False, and use cupy only where gpu_enable is True (no '
               'cupy.ndarray in annotations or isinstance checks outside that guard)')
HINT_FLAG = 'gpu_enable is True only when `import cupy` succeeded'


def _plan(params, seed):
    return Plan(learner=(Probe(NO_CUPY, {}, 0),))


def _judge(inp):
    obs = inp.learner[inp.plan.learner[0]]
    if not obs.ok:
        err = obs.error
        return [Finding('failed', 'your code cannot be imported on a machine without CuPy, as the '
                        'book\'s readers run it{}: {}'.format(
                            ' before step {}'.format(FIRST_GPU_STEP)
                            if not inp.params.get('gpu_module') else '', err.message),
                        evidence={'import_failure': err.message},
                        hint=HINT_IMPORT)]
    flag = obs.value.get('gpu_flag') if isinstance(obs.value, dict) else 'missing'
    if inp.params.get('gpu_module') and flag is not None and flag is not False:
        return [Finding('failed', 'dezero.cuda.gpu_enable is {!r} on a machine without CuPy; it '
                        'must be False there'.format(flag), evidence={'gpu_enable': flag},
                        hint=HINT_FLAG)]
    return [Finding('passed', 'imports and runs its host checks on a machine without CuPy'
                    + (', where gpu_enable is False' if flag is False else ''),
                    evidence={'gpu_enable': flag})]


def report_problem(value) -> str:
    """'' when `value` has the form `dezero_grader.grading.worker_session` answers the pseudo-probe with (the first
    setup's raw `gpu_flag`: a bool, None, or a type's name), else what does not fit."""
    if not isinstance(value, dict) or set(value) != {'gpu_flag'}:
        return 'the report is not {\'gpu_flag\': ...}'
    flag = value['gpu_flag']
    return '' if flag is None or isinstance(flag, (bool, str)) else 'gpu_flag is not a flag'


register(NO_CUPY, summary='the code imports and runs on a machine without CuPy (the book\'s, '
                          'before step 52); from step 52, gpu_enable is False there',
         params={'gpu_module': {'type': 'boolean'}}, plan=_plan, judge=_judge)


def uses_for(assignment) -> tuple:
    """The environment checks every grading of `assignment` has, as its own checks."""
    step = assignment.step
    return (CheckUse(id='step{:02d}/{}'.format(step, CHECK_ID), check=NO_CUPY, step=step,
                     title='imports and runs on a machine without CuPy, as the book\'s readers do',
                     tier='book', category='api', points=0.0,
                     params={'gpu_module': step >= FIRST_GPU_STEP}, tolerance={}),)


def faults_for(assignment) -> tuple:
    """The faults that prove the environment checks of `assignment` can fail (selftest injects
    them at every step, as every grading has the checks): an unguarded `import cupy`."""
    (use,) = uses_for(assignment)
    return (Fault(id='cupy-needed-at-import', step=assignment.step,
                  title='an unguarded `import cupy`: the package does not import without CuPy',
                  tier='book', hint=HINT_IMPORT, caught_by=(use.id,),
                  patch='cupy_needed_at_import'),)


def is_environment_check(use) -> bool:
    return use.check == NO_CUPY
