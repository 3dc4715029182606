"""Server-side encryption of secrets the gateway must read back (webhook signing
secrets): Fernet (AES-128-CBC + HMAC-SHA256) under a key kept outside the database."""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken


class SecretBoxError(RuntimeError):
    pass


class SecretBox:
    def __init__(self, key: bytes) -> None:
        self._fernet = Fernet(key)

    @classmethod
    def from_file(cls, path: Path) -> SecretBox:
        """The key in `path`, created with mode 0600 when absent."""
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as file:
                file.write(Fernet.generate_key())
        if path.stat().st_mode & 0o077:
            raise SecretBoxError(f"{path} is readable by other users; chmod 600 it")
        return cls(path.read_bytes().strip())

    def seal(self, plaintext: str) -> str:
        return self._fernet.encrypt(plaintext.encode()).decode()

    def open(self, sealed: str) -> str:
        try:
            return self._fernet.decrypt(sealed.encode()).decode()
        except InvalidToken as exc:
            raise SecretBoxError("a sealed secret does not open with this key") from exc
