"""Token files with one sentence a line, for trying `bert.blocks.sentence_separator` on a run's data (issue 34).

A run's token files (results/<run>/tokens/<size>/<lang>.txt) hold one document a line, so the separator would mark
documents only. This re-cuts each document's pieces at the sentence boundaries of the run's corpus
(results/<run>/corpus/<size>/<lang>.txt: one sentence a line, a blank line between documents), counting words as
a piece and its "##" continuations. The pieces and their order are unchanged: without the separator the new files
pack into the same blocks. Not a test: a helper for benchmarks/xnli_collapse.py's trials.

    python benchmarks/sentence_tokens.py --run results/demo --size 12000 --out /tmp/sentences
"""

from __future__ import annotations

import argparse
from pathlib import Path


def documents(corpus_path: Path) -> list[list[int]]:
    """Words per sentence of each document of a corpus file."""
    docs, current = [], []
    for line in corpus_path.read_text(encoding="utf-8").split("\n"):
        if line.strip():
            current.append(len(line.split()))
        elif current:
            docs.append(current)
            current = []
    if current:
        docs.append(current)
    return docs


def split_document(pieces: list[str], sentence_words: list[int], where: str) -> list[str]:
    """A document's pieces as one line per sentence."""
    words: list[list[str]] = []
    for piece in pieces:
        if piece.startswith("##") and words:
            words[-1].append(piece)
        else:
            words.append([piece])
    if len(words) != sum(sentence_words):
        raise ValueError(f"{where}: {len(words)} words in the tokens, {sum(sentence_words)} in the corpus")
    lines, start = [], 0
    for n in sentence_words:
        lines.append(" ".join(p for word in words[start : start + n] for p in word))
        start += n
    return lines


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", required=True, help="the run's results folder (results/<run>)")
    p.add_argument("--size", required=True, help="a corpus size of the run")
    p.add_argument("--out", required=True, help="the folder to write <lang>.txt to")
    p.add_argument("--langs", nargs="+", default=["en", "xa", "xb", "xc"])
    args = p.parse_args()
    run, out = Path(args.run), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for lang in args.langs:
        tokens_path = run / "tokens" / args.size / f"{lang}.txt"
        corpus_path = run / "corpus" / args.size / f"{lang}.txt"
        lines = [line for line in tokens_path.read_text(encoding="utf-8").split("\n") if line]
        docs = documents(corpus_path)
        if len(lines) != len(docs):
            raise SystemExit(f"{tokens_path}: {len(lines)} documents, {corpus_path}: {len(docs)}")
        sentences = [
            s
            for i, (line, words) in enumerate(zip(lines, docs, strict=True), 1)
            for s in split_document(line.split(" "), words, f"{tokens_path}:{i}")
        ]
        (out / f"{lang}.txt").write_text("\n".join(sentences) + "\n", encoding="utf-8")
        print(f"{lang}: {len(lines)} documents, {len(sentences)} sentences")


if __name__ == "__main__":
    main()
