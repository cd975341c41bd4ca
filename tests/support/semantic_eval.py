"""The evaluation set of `kaja search --semantic` over the demo store (seed 1):
questions as a user remembers a conversation, sharing no word with it
(stop words aside: `shared_words` checks), and the session each should find.

`recall` runs each question through word search, semantic search and their
fusion (reciprocal rank fusion of the two message rankings, k = 60) in one
process, and counts the questions whose session is among the first 5
sessions of the answer. `bench/eval_semantic.py` prints it;
tests/cli/test_semantic.py holds semantic search to a floor and above word search.
"""

from __future__ import annotations

import re
from pathlib import Path

# (question, the title of the session it should find)
QUESTIONS = [
    ("my vegetables look unwell in sweltering weather", "Tomato leaves curling in the heat"),
    ("my crops droop when it is scorching outside", "Tomato leaves curling in the heat"),
    ("automatic daily copies of my paperwork to a storage box", "Nightly backup with rsync"),
    ("scheduled safeguarding of my data onto network storage", "Nightly backup with rsync"),
    ("pending code reviews on the repository and an image capture",
     "Open PRs and a screenshot of the list"),
    ("how hot should a steam bath be for a newcomer", "Sauna temperature"),
    ("does the household subscription cover the chat app", "Pricing question from the website"),
    ("can I test it free before buying", "Pricing question from the website"),
    ("sweet custardy dessert with a flamed sugary shell for guests", "Crème brûlée for eight"),
    ("dividing a giant code routine that reads bills", "Refactor the invoice parser"),
    ("failing unit check about rounding money sums", "Refactor the invoice parser"),
    ("how much did detergent cost on my shopping slip", "Photo of a receipt"),
    ("rail trip between Swiss cities with scenery", "Train from Zürich to Genève"),
    ("reviewing our money and expenditure this autumn", "Quarterly budget review"),
    ("what share of our earnings is stashed away", "Quarterly budget review"),
    ("appointment with the tooth doctor", "Recordatorio: cita con el dentista"),
    ("groceries for a vegetarian couple", "Lista de la compra para la semana"),
    ("training schedule to get ready for a 21k competition", "Running plan for the Göteborgsvarvet"),
]  # fmt: skip

STOP = set(
    "a an the my our of to for in on at with and or is it i can does do how much what this"
    " that be should each before about we put".split()
)
TOP = 5  # the session must be among the answer's first 5 sessions
_RRF_K = 60


def words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def shared_words(question: str, session_text: str) -> set[str]:
    """The question's words (stop words aside) the session holds."""
    return (words(question) - STOP) & words(session_text)


def sessions_in_order(hits) -> list[str]:
    """The sessions of ranked hits, each once, best first."""
    return list(dict.fromkeys(h.session_title for h in hits))


def fuse(*rankings: list) -> list:
    """Reciprocal rank fusion of rankings of hits (by message id), best first."""
    score: dict[str, float] = {}
    first = {}
    for ranking in rankings:
        for rank, h in enumerate(ranking):
            score[h.message_id] = score.get(h.message_id, 0.0) + 1.0 / (_RRF_K + rank + 1)
            first.setdefault(h.message_id, h)
    return [first[m] for m in sorted(score, key=lambda m: -score[m])]


def recall(state_dir: Path) -> dict[str, int]:
    """How many QUESTIONS find their session in the top TOP, per mode."""
    from kaja_cli.core.conversations import search, semantic
    from kaja_cli.core.store import Store
    from kaja_cli.core.store.paths import Overrides

    store = Store.locate(Overrides(state_dir=state_dir), {"HOME": str(state_dir)})
    out = {"word": 0, "semantic": 0, "hybrid": 0}
    for question, title in QUESTIONS:
        word = search.search(store, question, all_owners=True, limit=100).hits
        meaning = semantic.search(store, question, all_owners=True, limit=100).hits
        for mode, hits in (("word", word), ("semantic", meaning),
                           ("hybrid", fuse(word, meaning))):  # fmt: skip
            out[mode] += title in sessions_in_order(hits)[:TOP]
    return out
