"""FAULT INJECTION ONLY: a loopback TCP forwarder that can be cut, so a test
can take a real server away from pilar mid-batch (as a stopped service looks
to its clients) and bring it back, without stopping the shared test node."""

from __future__ import annotations

import socket
import threading


class CuttableProxy:
    """Forwards ``127.0.0.1:port`` to ``target`` (host, port) until :meth:`cut`;
    while cut, new connections are refused (``refused`` is set at the first)
    and open ones are closed."""

    def __init__(self, target: tuple[str, int]):
        self.target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        self._cut = False
        self.refused = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def cut(self) -> None:
        with self._lock:
            self._cut = True
            for s in self._open:
                # shutdown first: a forked process (pilar's parse workers) may
                # hold a copy of the descriptor, and close() alone would leave
                # the connection open, so a pooled client connection would hang
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
            self._open.clear()

    def restore(self) -> None:
        with self._lock:
            self._cut = False

    def close(self) -> None:
        self.cut()
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                if self._cut:
                    client.close()
                    self.refused.set()
                    continue
                upstream = socket.create_connection(self.target)
                self._open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.close()
                except OSError:
                    pass
