"""Build `wordnet-synonyms.json.gz`, the slice of WordNet 3.0 that METEOR needs, offline.

METEOR's synonym stage asks WordNet for the synsets of a word (after morphological
reduction) and the lemma names of each. This keeps exactly that: the lemma index per part
of speech, the morphological exception lists, and each synset's single-word lemma names
(METEOR ignores multi-word names). Glosses, pointers and examples are dropped.

Source: Princeton WordNet 3.0 database files, e.g. Debian's `wordnet-base` package
(`apt-get install wordnet-base` puts them in /usr/share/wordnet). Run:

    python proctor/metrics/data/build_wordnet.py [/usr/share/wordnet]

WordNet's license (WORDNET_LICENSE beside this file) permits redistribution with it.
"""

from __future__ import annotations

import gzip
import json
import shutil
import sys
import tempfile
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


def reader_for(source: Path) -> WordNetCorpusReader:
    """NLTK's own WordNet reader over the given database, laid out as an NLTK data folder."""
    data_dir = Path(tempfile.mkdtemp())
    root = data_dir / "corpora" / "wordnet"
    root.mkdir(parents=True)
    for path in source.iterdir():
        if path.is_file():  # copies: NLTK refuses symlinks that leave its data folder
            shutil.copyfile(path, root / path.name)
    # Nor `index.sense`, which NLTK reads only to map other WordNet versions (unused here).
    (root / "index.sense").touch(exist_ok=True)
    (root / "lexnames").write_text("".join(f"{i:02d}\t{name}\t{i}\n" for i, name in enumerate(LEXNAMES)))
    nltk.data.path.insert(0, str(data_dir))
    from nltk.corpus import wordnet

    wordnet.ensure_loaded()
    return wordnet


def build(source: Path) -> dict:
    wordnet = reader_for(source)
    synset_ids: dict[str, int] = {}
    synsets: list[list[str]] = []
    index: dict[str, dict[str, list[int]]] = {pos: {} for pos in POS}
    for lemma, by_pos in wordnet._lemma_pos_offset_map.items():
        for pos in POS:
            for offset in by_pos.get(pos, []):
                synset = wordnet.synset_from_pos_and_offset(pos, offset)
                key = synset.name()
                if key not in synset_ids:
                    synset_ids[key] = len(synsets)
                    synsets.append([n for n in synset.lemma_names() if "_" not in n])
                index[pos].setdefault(lemma, []).append(synset_ids[key])
    exceptions = {pos: dict(wordnet._exception_map[pos]) for pos in POS}
    return {"wordnet": "3.0", "synsets": synsets, "index": index, "exceptions": exceptions}


def main() -> None:
    source = Path(sys.argv[1] if len(sys.argv) > 1 else "/usr/share/wordnet")
    data = build(source)
    with gzip.open(OUTPUT, "wt", encoding="utf-8", compresslevel=9) as handle:
        json.dump(data, handle, separators=(",", ":"))
    print(f"{OUTPUT}: {OUTPUT.stat().st_size / 1e6:.1f} MB, {len(data['synsets'])} synsets")


if __name__ == "__main__":
    main()
