#!/usr/bin/env python3
"""Extracts Kiln's bundled byte-level text corpus from Debian's `fortunes`.

Reads every fortune database installed by the Debian package `fortunes`
(the plain-text files in /usr/share/games/fortunes that have a `.dat` index
next to them; the `.u8` names are symlinks to the same files and are
skipped), in sorted file order, splits each file into its entries (entries
are separated by a line holding only "%"), and deals the entries out
deterministically: entry number i (counting over all files, from 0) goes to
valid.txt when i % 20 == 10, otherwise to train.txt -- a 95/5 split by whole
entries, spread over every file. Each entry is written followed by a "%"
line, as in the fortune format, so the model sees the same delimiters.

Rerun:
  apt-get install fortunes        # version 1:1.99.1-7.3 made the committed files
  python3 examples/data/text/extract_text.py
"""

import os
import sys

FORTUNE_DIR = "/usr/share/games/fortunes"
VALID_EVERY = 20
VALID_OFFSET = 10


def entries_of(path):
    with open(path, "rb") as f:
        text = f.read()
    text.decode("utf-8")  # every file is UTF-8 (mostly ASCII); fail if not
    # An entry is the text between lines that hold only "%".
    entries = []
    for entry in text.replace(b"\r\n", b"\n").split(b"\n%\n"):
        entry = entry.strip(b"\n")
        if entry and entry != b"%":
            entries.append(entry)
    return entries


def main():
    out_dir = os.path.dirname(os.path.abspath(__file__))
    names = sorted(
        name for name in os.listdir(FORTUNE_DIR)
        if os.path.isfile(os.path.join(FORTUNE_DIR, name + ".dat"))
        and not os.path.islink(os.path.join(FORTUNE_DIR, name)))
    if not names:
        sys.exit(f"no fortune files in {FORTUNE_DIR}: apt-get install fortunes")
    train, valid = [], []
    index = 0
    for name in names:
        for entry in entries_of(os.path.join(FORTUNE_DIR, name)):
            target = valid if index % VALID_EVERY == VALID_OFFSET else train
            target.append(entry + b"\n%\n")
            index += 1
    for file_name, parts in (("train.txt", train), ("valid.txt", valid)):
        data = b"".join(parts)
        with open(os.path.join(out_dir, file_name), "wb") as f:
            f.write(data)
        print(f"{file_name}: {len(parts)} entries, {len(data)} bytes")
    print(f"{len(names)} files: {' '.join(names)}")


if __name__ == "__main__":
    main()
