"""Start-up limits of a sandboxed Python: no outbound network, bounded memory.

Python imports ``sitecustomize`` at start-up when its folder is on ``PYTHONPATH``; the classroom kit puts this folder
there for the Jupyter kernels that execute the course's own notebooks (the teacher edition) and for the course's
own test run, with these environment variables (the grading host calls :func:`block_network` itself, and caps the
memory of each process it forks):

* ``COURSE_BLOCK_NETWORK=1``: connections to anything but loopback and Unix sockets raise ``NetworkBlocked``
  (kernels talk to their client over loopback, so loopback stays open);
* ``COURSE_MEMORY_LIMIT_BYTES=N``: the process's address space is capped at N bytes (soft and hard limit, so the
  notebook cannot raise it); a bigger allocation raises ``MemoryError``.

Both are guards against accidents and casual attempts, not a security boundary (a subprocess or ``ctypes`` goes
around the first): see TEACHING.md and SECURITY.md (the container recipe and the threat model) for what they do not
stop.
"""
import ipaddress
import os
import socket


class NetworkBlocked(OSError):
    """Raised when code tries to reach a non-loopback address."""


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


def block_network() -> None:
    original_connect = socket.socket.connect
    original_connect_ex = socket.socket.connect_ex

    def guarded(original):
        def connect(self, address):
            if self.family != socket.AF_UNIX and not is_loopback(address):
                raise NetworkBlocked(f"network access blocked: tried to reach {address!r}; "
                                     "the course runs offline — use the data that ships with it")
            return original(self, address)
        return connect

    socket.socket.connect = guarded(original_connect)
    socket.socket.connect_ex = guarded(original_connect_ex)


def limit_memory(limit_bytes: int) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))


if os.environ.get("COURSE_BLOCK_NETWORK") == "1":
    block_network()
if os.environ.get("COURSE_MEMORY_LIMIT_BYTES"):
    limit_memory(int(os.environ["COURSE_MEMORY_LIMIT_BYTES"]))
