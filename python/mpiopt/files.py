"""Files a command writes appear whole or not at all: a reader (a launcher reading a hints file,
`mpiopt scaling table` reading results, an MPI job reading a tuning file) sees the old file or the
complete new one, and a failed run leaves nothing behind."""
from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


@contextmanager
def atomic_output(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary path beside `path` to write to; when the block ends without an error it
    replaces `path` in one step, otherwise it is removed. The directory must exist (OSError
    otherwise): a mistyped directory is the user's to see, not to have made."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_atomically(path: str | os.PathLike, text: str) -> None:
    with atomic_output(path) as tmp:
        tmp.write_text(text)
