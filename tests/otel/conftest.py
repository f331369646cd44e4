"""pytest set-up for the OTLP suite (issue #49): the shared harness, the conformance
suite's origins and real-SDK clients (its conftest, loaded as a module so its fixtures
serve here too), the frameworks suite's agent stack, and OTLP receivers. `flakestorm` is
this suite's own `flakestorm serve`, exporting to the gRPC receiver."""

import importlib.util
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
for d in ("pyharness", "conformance", "frameworks"):
    if str(TESTS / d) not in sys.path:
        sys.path.insert(0, str(TESTS / d))

_spec = importlib.util.spec_from_file_location("conformance_conftest", TESTS / "conformance" / "conftest.py")
conformance = importlib.util.module_from_spec(_spec)
sys.modules["conformance_conftest"] = conformance  # its dataclasses look their module up
_spec.loader.exec_module(conformance)

# The conformance fixtures this suite uses (`proxy_env` takes this suite's `flakestorm`).
_origins = conformance._origins
origins = conformance.origins
proxy_env = conformance.proxy_env
openai_client = conformance.openai_client
anthropic_client = conformance.anthropic_client
genai_client = conformance.genai_client

from flakestorm_harness import clean_env  # noqa: E402
from otlp_receiver import GrpcReceiver, HttpReceiver, telemetry_config  # noqa: E402


@pytest.fixture(scope="session")
def grpc_receiver():
    r = GrpcReceiver()
    yield r
    r.close()


@pytest.fixture(scope="session")
def http_receiver():
    r = HttpReceiver()
    yield r
    r.close()


@pytest.fixture(scope="session")
def flakestorm(tmp_path_factory, grpc_receiver):
    fs = conformance.Flakestorm.start(
        tmp_path_factory.mktemp("flakestorm-otel"), env=clean_env(),
        extra_config="advanced:\n  seed: 7\n" + telemetry_config(grpc_receiver))
    yield fs
    fs.control("DELETE", "/v1/chaos")
    fs.stop()


@pytest.fixture
def chaos(flakestorm):
    """`chaos(rule, ...)` installs `{"llm_faults": [rules]}`; cleared after the test."""

    def put(*rules: dict) -> None:
        status, resp = flakestorm.control("PUT", "/v1/chaos", {"llm_faults": list(rules)})
        assert status == 200, resp

    yield put
    flakestorm.control("DELETE", "/v1/chaos")
