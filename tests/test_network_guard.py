"""No test and no notebook may reach the network: outbound connections fail, loopback still works."""
import os
import socket
import subprocess
import sys

import pytest


def test_outbound_connection_is_blocked():
    with pytest.raises(OSError, match="network access blocked"):
        socket.create_connection(("93.184.215.14", 80), timeout=1)


def test_loopback_stays_open():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    client = socket.create_connection(server.getsockname(), timeout=1)
    client.close()
    server.close()


def test_child_python_processes_such_as_kernels_are_guarded_too():
    code = ("import socket\ntry:\n    socket.create_connection(('1.1.1.1', 53), timeout=1)\n"
            "except OSError as e:\n    print('blocked' if 'blocked' in str(e) else 'other: ' + str(e))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ.copy())
    assert result.stdout.strip() == "blocked"
