"""A file's processing time is its own: waiting for the shared converter is stored apart."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from proctor import files
from proctor.files import process_file
from proctor.models.holodeck import FileInput


def test_waiting_for_the_shared_converter_is_not_the_files_own_time(tmp_path: Path) -> None:
    (tmp_path / "prices.csv").write_text("item,price\ncoffee,3.50\n")
    files._markitdown()  # started once, as an earlier file of the run would have
    busy = threading.Event()

    def another_file_converting() -> None:
        with files._convert_lock:
            busy.set()
            time.sleep(0.6)

    other = threading.Thread(target=another_file_converting)
    other.start()
    busy.wait()
    processed = process_file(FileInput(path="prices.csv", type="csv"), tmp_path)
    other.join()
    assert processed.error is None and "coffee" in processed.markdown_content
    assert processed.metadata["wait_ms"] >= 400  # it did wait for the other conversion...
    assert processed.processing_time_ms < 400  # ...but a 30-byte CSV's own time is short
