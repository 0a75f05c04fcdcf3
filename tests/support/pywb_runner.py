"""Serve one pywb directory on a loopback port the kernel picks; run by the tools venv's python.

    python pywb_runner.py DIR

DIR holds `config.yaml` and `collections/`; pywb reads `./config.yaml`, so DIR becomes the
working directory. The listening socket is bound here (127.0.0.1, port 0) and handed to
gevent, so there is no window in which another process can take the port. The first line on
stdout is the port, written once pywb is ready to answer; everything else goes to stderr.
SIGTERM stops the server and exits 0.
"""

import os
import sys

# This directory holds tests/support/pywb.py, which would shadow the real pywb package.
# (PywbReplay runs this with `python -I`, which already leaves it out.)
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]

from gevent import monkey  # noqa: E402

# pywb's front end calls its own warcserver over HTTP from inside a request: without
# patching, that blocking call would stall the only event loop.
monkey.patch_all()

import logging  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402

import gevent  # noqa: E402
from gevent.pywsgi import WSGIServer  # noqa: E402
from pywb.apps.frontendapp import FrontEndApp  # noqa: E402
from pywb.utils.geventserver import RequestURIWSGIHandler  # noqa: E402


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not os.path.isfile(os.path.join(argv[1], "config.yaml")):
        print(f"usage: {argv[0]} DIR  (DIR must contain config.yaml)", file=sys.stderr)
        return 2
    os.chdir(argv[1])
    os.environ.pop("PYWB_CONFIG_FILE", None)  # would replace ./config.yaml
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s"
    )

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    port = listener.getsockname()[1]

    app = FrontEndApp(config_file="./config.yaml")
    server = WSGIServer(
        listener, app, handler_class=RequestURIWSGIHandler, log=sys.stderr, error_log=sys.stderr
    )
    server.init_socket()
    gevent.signal_handler(signal.SIGTERM, server.stop)

    os.write(1, f"{port}\n".encode())
    os.dup2(2, 1)  # pywb print()s: keep them off the pipe the parent stopped reading
    logging.info("pywb serving %s on http://127.0.0.1:%d/", os.getcwd(), port)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
