"""Block outbound network connections (loopback and Unix sockets stay open).

Loaded in the test session by the root ``conftest.py`` and, through ``PYTHONPATH``, in every notebook kernel the
session starts (kernels talk to pytest over loopback, so loopback must stay open). Active only when the
environment variable ``COURSE_BLOCK_NETWORK=1``.
"""
import ipaddress
import os
import socket


class NetworkBlocked(OSError):
    """Raised when code tries to reach a non-loopback address during the tests."""


def is_loopback(address) -> bool:
    host = address[0] if isinstance(address, tuple) else address
    if not isinstance(host, str):  # Unix sockets and friends
        return True
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:  # a host name: resolving it would already reach the network
        return False


def install() -> None:
    original_connect = socket.socket.connect
    original_connect_ex = socket.socket.connect_ex

    def guarded(original):
        def connect(self, address):
            if self.family != socket.AF_UNIX and not is_loopback(address):
                raise NetworkBlocked(f"network access blocked during the course tests: tried to reach {address!r}; "
                                     "the course must run offline — ship or generate the data locally")
            return original(self, address)
        return connect

    socket.socket.connect = guarded(original_connect)
    socket.socket.connect_ex = guarded(original_connect_ex)


if os.environ.get("COURSE_BLOCK_NETWORK") == "1":
    install()
