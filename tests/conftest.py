"""Suite-wide test settings: offline switches, no progress bars, fixture notebooks not collected, no network."""
import ipaddress
import os
import socket

import pytest

for _var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY"):
    os.environ[_var] = "1"
os.environ["ICLR26_PROGRESS"] = "0"
os.environ.setdefault("MPLBACKEND", "Agg")

# The runner's fixture notebooks are inputs of tests, not tests themselves (one fails on purpose).
collect_ignore_glob = ["fixtures/*"]

_real_connect = socket.socket.connect


def _is_local(address) -> bool:
    if not isinstance(address, tuple):  # AF_UNIX path
        return True
    host = address[0]
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _guarded_connect(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_local(address):
        raise OSError(f"tests may not reach the network (tried {address!r})")
    return _real_connect(self, address)


@pytest.fixture(autouse=True)
def _no_network(monkeypatch):
    """Any attempt of a test to connect beyond loopback fails loudly."""
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)
    yield


@pytest.fixture(scope="module")
def one_thread():
    """One BLAS/OpenMP/torch thread for a test module of tiny models: as fast, and immune to thread barriers when
    the test workers share the two cores. Use with ``pytestmark = pytest.mark.usefixtures("one_thread")``."""
    from lib.common import limit_threads

    with limit_threads(1):
        yield
