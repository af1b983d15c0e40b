"""What every UI protocol shares (``agentmsg.ui._protocol``): the notes its codecs keep."""

from __future__ import annotations

import copy
import pickle
import tracemalloc

import pytest

from agentmsg import ui
from agentmsg.errors import Problem
from agentmsg.ui import _protocol

CODECS = [(name, side) for name in ui.names() for side in ("encoder", "decoder")]


@pytest.mark.parametrize(("name", "side"), CODECS, ids=[f"{n}-{s}" for n, s in CODECS])
def test_a_codec_keeps_max_notes_then_counts_the_rest_in_bounded_memory(
    name: str, side: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream of ever new events a codec cannot use (a hostile server's, for a decoder): each was a note, and its
    said-once key, held for the stream's life (50,000 such events: 12-18 MB). Now a codec keeps MAX_NOTES notes;
    one last note (rule max-problems) counts the rest, and a fifth of the events after the cap adds next to nothing."""
    monkeypatch.setattr(_protocol, "MAX_NOTES", 50)
    codec = ui.get(name).encoder() if side == "encoder" else ui.get(name).decoder()
    for k in range(200):
        codec.feed({"type": f"BOGUS_{k}", "n": k})
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for k in range(200, 1200):
            codec.feed({"type": f"BOGUS_{k}", "n": k})
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    if not codec.notes:  # (agentscope's: AgentEvents as they are, nothing to note)
        assert name == "agentscope"
        return
    assert len(codec.notes) == 51, len(codec.notes)
    assert (codec.notes[-1].rule, codec.notes[-1].message) == (
        "max-problems",
        "1,150 more notes were not kept (a stream keeps 50)",
    )
    assert grown < 20_000, grown  # (a note and its key held: ~300 bytes, 300 kB for these 1,000)


def test_capped_notes_pickle_and_copy_with_their_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """A list subclass is unpickled (and copied) by appending its items again: the count note was counted as one more
    note not kept, before the count itself was restored."""
    monkeypatch.setattr(_protocol, "MAX_NOTES", 3)
    notes = _protocol.Notes()
    for k in range(7):
        notes.append(Problem(f"/{k}", "ui-wrapped", "no AG-UI event"))
    for again in (pickle.loads(pickle.dumps(notes)), copy.copy(notes), copy.deepcopy(notes)):
        assert type(again) is _protocol.Notes and again == notes and again.omitted == 4
        again.append(Problem("/7", "ui-wrapped", "no AG-UI event"))
        assert len(again) == 4 and again[-1].message == "5 more notes were not kept (a stream keeps 3)"
