import os

from hypothesis import HealthCheck, settings

# Bounded example counts keep the whole suite under ~2 minutes on 2 cores; HYPOTHESIS_PROFILE=thorough
# runs more examples.
settings.register_profile("default", max_examples=25, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("thorough", max_examples=300, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
# The long fuzzing runs recorded in RELIABILITY.md.
settings.register_profile("long", max_examples=int(os.environ.get("HYPOTHESIS_MAX_EXAMPLES", "5000")), deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

# Every function the tests compile also runs DebugMode's checks (each node against its reference
# kernel and destroy_map, each rewrite against the values it replaced), as in the C++ suite.
import hypatia  # noqa: E402

hypatia.config.debug_checks = True

# HYPATIA_TEST_EMULATED_GPU=1 (with HYPATIA_FLAGS=device=cuda): the whole suite on the emulated
# GPU (testing/emulated_gpu.h), as the device check runs it on a real one: every function places
# its nodes on the stand-in device, with the transfers placement inserts. Tests that expect the
# CPU's graphs fail there by design; the run shows what device=cuda changes.
if os.environ.get("HYPATIA_TEST_EMULATED_GPU"):
    hypatia._core._install_emulated_gpu(as_default=True)


def pytest_collection_modifyitems(config, items):
    # Under device=cuda the tests that check the CPU backend's own graphs and memory (marked
    # host_graphs) are skipped, so that what fails there is what device=cuda gets wrong.
    import pytest

    if not str(hypatia.config.device).startswith(("cuda", "gpu")):
        return
    skip = pytest.mark.skip(reason="checks the CPU backend's graphs or memory; config.device is a GPU")
    for item in items:
        if "host_graphs" in item.keywords:
            item.add_marker(skip)
