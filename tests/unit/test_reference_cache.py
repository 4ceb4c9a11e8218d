"""The reference's cached answers are kept per device mode: a worker with the simulated device
installed and one without it are different environments, so an answer one of them gave is never
served for the other."""
from grader import assignments, run
from grader.observe import observe_reference
from grader.sandbox import Limits


def test_an_answer_cached_in_one_device_mode_is_not_served_in_another(tmp_path, monkeypatch):
    monkeypatch.setenv('DEZERO_GRADER_CACHE', str(tmp_path))
    probes = list(run.plan(assignments.load(9), seed=11).reference_probes[:1])
    assert probes
    first = observe_reference(probes, limits=Limits(), device_mode='sim')
    assert not first.setup.get('cached')
    assert observe_reference(probes, limits=Limits(), device_mode='sim').setup.get('cached')
    other = observe_reference(probes, limits=Limits(), device_mode='cpu')
    assert not other.setup.get('cached')
    assert observe_reference(probes, limits=Limits(), device_mode='cpu').setup.get('cached')
