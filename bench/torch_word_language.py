#!/usr/bin/env python3
"""The word-language example (resources/examples/word_language.myelin) in PyTorch.

Reads the same word lists the same way as Myelin's text-lines source (core/data/text_readers.cpp):
per file UTF-8, or ISO-8859-1 when the file is not UTF-8 ("auto"); lines stripped, empty ones
skipped; lower-cased; a word repeated within a list kept once and a word in several lists dropped
from all; then a seeded sample of max_per_class per list (the words with the smallest FNV-1a hash
of "<seed>\\n<word>", kept in file order). Splits: test_fraction held out, then
validation_fraction of the rest (torch.randperm, so not the very examples Myelin picks; the same
sizes). Characters -> vocabulary from the training split (count, then byte order; <pad> 0,
<unk> 1) -> ids padded / cut to max_length. The model is the project's graph, rebuilt in PyTorch
by build_model() with Myelin's module names (the node's name, else its position among the
layers in Myelin's topological order), so a Myelin checkpoint loads into it by name
(bench/word_language_parity.py): the MLP (word_language.myelin), the bidirectional LSTM
(word_language_lstm.myelin) and the Transformer encoder (word_language_transformer.myelin).
Trained with the project's optimizer (Adam or AdamW), gradient clipping, epochs and batch size,
and cross-entropy. Prints the accuracy per epoch and on the test split.

usage: python3 bench/torch_word_language.py [PROJECT] [--threads N] [--seed S] [--epochs N] [--lr X]
"""
import argparse
import json
import os
import time
from collections import Counter

import torch
from torch import nn

from word_language_graph import build_model, make_optimizer

HERE = os.path.dirname(os.path.abspath(__file__))


def fnv1a(seed, text):
    h = 14695981039346656037
    for b in f"{seed}\n{text}".encode("utf-8"):
        h ^= b
        h = (h * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def read_lines(path, encoding):
    raw = open(path, "rb").read()
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    latin1 = encoding == "latin-1"
    if encoding == "auto":
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            latin1 = True
    out = []
    for line in raw.split(b"\n"):
        line = line.strip(b" \t\r\n\f\v")
        if not line:
            continue
        if latin1:
            out.append(line.decode("latin-1"))
            continue
        try:
            out.append(line.decode("utf-8"))
        except UnicodeDecodeError:
            pass  # skipped, as Myelin does
    return out


def read_corpus(o):
    classes = [tuple(s.strip() for s in item.split("=", 1))
               for item in o["classes"].split(",") if item.strip()]
    per_class = []
    for name, path in classes:
        lines = read_lines(path, o.get("encoding", "utf-8"))
        if o.get("lowercase", False):
            lines = [l.lower() for l in lines]
        if o.get("duplicates", "drop") == "drop":
            seen, unique = set(), []
            for l in lines:
                if l not in seen:
                    seen.add(l)
                    unique.append(l)
            lines = unique
        per_class.append(lines)
    if o.get("duplicates", "drop") == "drop":
        count = Counter(l for lines in per_class for l in lines)
        per_class = [[l for l in lines if count[l] == 1] for lines in per_class]
    cap, seed = o.get("max_per_class", 0), o.get("sample_seed", 0)
    texts, labels = [], []
    for c, lines in enumerate(per_class):
        if cap and len(lines) > cap:
            order = sorted((fnv1a(seed, l), i) for i, l in enumerate(lines))[:cap]
            lines = [lines[i] for i in sorted(i for _, i in order)]
        texts += lines
        labels += [c] * len(lines)
    return [name for name, _ in classes], texts, labels


def held_out(n, fraction):
    return max(1, int(n * fraction + 0.5)) if fraction > 0 else 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("project", nargs="?",
                        default=os.path.join(HERE, "..", "resources", "examples",
                                             "word_language.myelin"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, help="override the project's epochs")
    parser.add_argument("--lr", type=float, help="override the optimizer's learning rate")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    project = json.load(open(args.project))
    o = project["data"]["source"]
    started = time.time()
    names, texts, labels = read_corpus(o)
    n = len(texts)
    perm = torch.randperm(n).tolist()
    n_test = held_out(n, o.get("test_fraction", 0.1))
    rest = n - n_test
    n_val = held_out(rest, project["data"].get("validation_fraction", 0.1))
    test, val, train = perm[:n_test], perm[n_test:n_test + n_val], perm[n_test + n_val:]

    # Vocabulary from the training split: count, then byte order.
    counts = Counter(ch for i in train for ch in texts[i])
    kept = sorted(((t, c) for t, c in counts.items() if c >= o.get("min_frequency", 1)),
                  key=lambda tc: (-tc[1], tc[0].encode("utf-8")))
    vocabulary = ["<pad>", "<unk>"] + [t for t, _ in kept]
    if o.get("max_vocabulary", 0):
        vocabulary = vocabulary[:o["max_vocabulary"]]
    index = {t: i for i, t in enumerate(vocabulary)}
    length = o.get("max_length", 32)

    def encode(ids):
        x = torch.zeros(len(ids), length, dtype=torch.int64)
        for row, i in enumerate(ids):
            for k, ch in enumerate(texts[i][:length]):
                x[row, k] = index.get(ch, 1)
        return x, torch.tensor([labels[i] for i in ids])

    xs = {name: encode(ids) for name, ids in (("train", train), ("val", val), ("test", test))}
    print(f"{len(names)} classes, {len(train)} training, {len(val)} validation, {len(test)} test "
          f"examples; vocabulary {len(vocabulary)}; read in {time.time() - started:.1f} s")

    model = build_model(project)
    training = project["training"]
    if args.lr:
        training["optimizer"]["lr"] = args.lr
    optimizer = make_optimizer(training["optimizer"], model.parameters())
    clip = training.get("clip_grad_norm")
    loss_fn = nn.CrossEntropyLoss()
    batch = project["data"].get("batch_size", 64)

    def accuracy(split):
        model.eval()
        x, y = xs[split]
        with torch.no_grad():
            return (model(x).argmax(1) == y).float().mean().item()

    x, y = xs["train"]
    for epoch in range(args.epochs or training.get("epochs", 10)):
        model.train()
        started = time.time()
        order = torch.randperm(len(y))
        for b in range(0, len(y), batch):
            idx = order[b:b + batch]
            optimizer.zero_grad()
            loss = loss_fn(model(x[idx]), y[idx])
            loss.backward()
            if clip:
                nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimizer.step()
        print(f"epoch {epoch + 1}: val_accuracy={accuracy('val'):.4f} "
              f"({time.time() - started:.1f} s)", flush=True)
    print(f"PyTorch {torch.__version__}: test accuracy={accuracy('test'):.4f}")


if __name__ == "__main__":
    main()
