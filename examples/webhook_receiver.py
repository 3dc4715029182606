"""A tiny webhook receiver (standard library only) that verifies Rigway deliveries.

    export RIGWAY_WEBHOOK_SECRET=whsec_…   # shown once by `rigway webhooks create URL`
    python examples/webhook_receiver.py --port 8000

Each delivery's signature and timestamp are checked with `rigway.webhooks.verify`
before anything else; a failed check answers 400 and the body is ignored. Deliveries
are retried by the gateway, so the same delivery id can arrive twice: it is answered
again but handled once. Webhook URLs must be public https, so put this behind a TLS
proxy or tunnel (or run the gateway with RIGWAY_WEBHOOK_ALLOW_PRIVATE_TARGETS for tests).
"""

from __future__ import annotations

import argparse
import os
from collections import OrderedDict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from rigway.webhooks import WebhookVerificationError, verify

# A bound on remembered delivery ids keeps memory flat; retries come within minutes.
MAX_REMEMBERED_DELIVERIES = 10_000
MAX_BODY_BYTES = 1 << 20


class DeliveryLog:
    """What the receiver does with verified events: here, print them once each."""

    def __init__(self) -> None:
        self._seen: OrderedDict[str, None] = OrderedDict()

    def is_new(self, delivery_id: str) -> bool:
        if delivery_id in self._seen:
            return False
        self._seen[delivery_id] = None
        if len(self._seen) > MAX_REMEMBERED_DELIVERIES:
            self._seen.popitem(last=False)
        return True

    def handle(self, event: dict[str, Any]) -> None:
        if not self.is_new(str(event.get("id"))):
            return
        data = event.get("data") or {}
        print(f"{event.get('type')}: session {data.get('session_id')} on rig {data.get('rig_id')}")


def make_handler(secret: str, log: DeliveryLog) -> type[BaseHTTPRequestHandler]:
    """A request handler class bound to `secret` and `log`."""

    class WebhookHandler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                self.send_error(413, "body too large")
                return
            # The raw bytes, exactly as received: re-serialised JSON would not verify.
            body = self.rfile.read(length)
            try:
                event = verify(body, dict(self.headers.items()), secret)
            except WebhookVerificationError as exc:
                self.send_error(400, str(exc))
                return
            log.handle(event)
            self.send_response(204)
            self.end_headers()

    return WebhookHandler


def make_server(host: str, port: int, secret: str, log: DeliveryLog) -> ThreadingHTTPServer:
    """The receiver, bound and ready for `serve_forever()` (port 0 picks a free one)."""
    return ThreadingHTTPServer((host, port), make_handler(secret, log))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    secret = os.environ.get("RIGWAY_WEBHOOK_SECRET")
    if not secret:
        parser.error("set RIGWAY_WEBHOOK_SECRET to the webhook's whsec_… secret")
    server = make_server(args.host, args.port, secret, DeliveryLog())
    print(f"listening on http://{args.host}:{server.server_address[1]}/")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
