"""Build `wordnet-synonyms.json.gz`, the slice of WordNet 3.0 that METEOR needs, offline.

METEOR's synonym stage asks WordNet for the synsets of a word (after morphological
reduction) and the lemma names of each. This keeps exactly that: the lemma index per part
of speech, the morphological exception lists, and each synset's single-word lemma names
(METEOR ignores names with "_"). Glosses, pointers and examples are dropped; synsets with
the same names are stored once, and index entries that lead only to synsets without a
single-word name are left out, since they add no synonym. `proctor.metrics.wordnet` serves
the table to NLTK's METEOR, and tests/metrics/test_nlp.py checks its scores against NLTK's
own reader on the full database.

Source: Princeton WordNet 3.0 database files, e.g. Debian's `wordnet-base` package
(`apt-get install wordnet-base` puts them in /usr/share/wordnet). Needs only NLTK. Run:

    python proctor/metrics/lexical/data/build_wordnet.py [/usr/share/wordnet]

The output is byte-for-byte reproducible (gzip without a timestamp). WordNet's license
(WORDNET_LICENSE beside this file) permits redistribution with it.
"""

from __future__ import annotations

import gzip
import json
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

import nltk
from nltk.corpus.reader.wordnet import WordNetCorpusReader

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "wordnet-synonyms.json.gz"
POS = ("n", "v", "a", "r")
# NLTK's reader opens `lexnames`; Debian does not ship it. Names only feed Synset.lexname().
LEXNAMES = [
    "adj.all",
    "adj.pert",
    "adv.all",
    "noun.Tops",
    "noun.act",
    "noun.animal",
    "noun.artifact",
    "noun.attribute",
    "noun.body",
    "noun.cognition",
    "noun.communication",
    "noun.event",
    "noun.feeling",
    "noun.food",
    "noun.group",
    "noun.location",
    "noun.motive",
    "noun.object",
    "noun.person",
    "noun.phenomenon",
    "noun.plant",
    "noun.possession",
    "noun.process",
    "noun.quantity",
    "noun.relation",
    "noun.shape",
    "noun.state",
    "noun.substance",
    "noun.time",
    "verb.body",
    "verb.change",
    "verb.cognition",
    "verb.communication",
    "verb.competition",
    "verb.consumption",
    "verb.contact",
    "verb.creation",
    "verb.emotion",
    "verb.motion",
    "verb.perception",
    "verb.possession",
    "verb.social",
    "verb.stative",
    "verb.weather",
    "adj.ppl",
]


class _WordNet30Reader(WordNetCorpusReader):
    """NLTK's reader, minus the mapping of Open Multilingual WordNet offsets onto this database.

    NLTK builds that mapping whenever the database's version ("3.0") differs from the
    string "wordnet", i.e. always, and for it loads the downloaded `corpora/wordnet`, which
    is what this script does without. Only multilingual lookups read the mapping.
    """

    def map_wn(self, version: str = "wordnet") -> None:
        return None


def reader_for(source: Path) -> WordNetCorpusReader:
    """NLTK's own WordNet reader over the database in `source` (Debian's layout).

    Reads a temporary copy that adds the two files Debian leaves out. NLTK opens files only
    under its data path, so the copy joins `nltk.data.path`; it is the WordNet folder
    itself, not a `corpora/wordnet` inside one, so `nltk.corpus.wordnet` still finds nothing.
    """
    root = Path(tempfile.mkdtemp(prefix="wordnet-"))
    for path in source.iterdir():
        if path.is_file():
            shutil.copyfile(path, root / path.name)
    # `index.sense` is read only to map other WordNet versions (unused here).
    (root / "index.sense").touch(exist_ok=True)
    (root / "lexnames").write_text("".join(f"{i:02d}\t{name}\t{i}\n" for i, name in enumerate(LEXNAMES)))
    nltk.data.path.append(str(root))
    with warnings.catch_warnings():  # that multilingual lookups are unavailable: known, unused
        warnings.simplefilter("ignore", UserWarning)
        return _WordNet30Reader(str(root), None)


def build(source: Path) -> dict:
    wordnet = reader_for(source)
    ids: dict[tuple[str, ...], int] = {}
    synsets: list[list[str]] = []
    index: dict[str, dict[str, list[int]]] = {pos: {} for pos in POS}
    for lemma, by_pos in sorted(wordnet._lemma_pos_offset_map.items()):
        for pos in POS:
            for offset in by_pos.get(pos, []):
                synset = wordnet.synset_from_pos_and_offset(pos, offset)
                names = tuple(name for name in synset.lemma_names() if "_" not in name)
                if not names:
                    continue
                if names not in ids:
                    ids[names] = len(synsets)
                    synsets.append(list(names))
                entries = index[pos].setdefault(lemma, [])
                if ids[names] not in entries:
                    entries.append(ids[names])
    exceptions = {pos: dict(sorted(wordnet._exception_map[pos].items())) for pos in POS}
    return {"wordnet": "3.0", "synsets": synsets, "index": index, "exceptions": exceptions}


def main() -> None:
    source = Path(sys.argv[1] if len(sys.argv) > 1 else "/usr/share/wordnet")
    data = build(source)
    with (
        open(OUTPUT, "wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as packed,
    ):
        packed.write(json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode())
    print(f"{OUTPUT}: {OUTPUT.stat().st_size / 1e6:.2f} MB, {len(data['synsets'])} synsets")


if __name__ == "__main__":
    main()
