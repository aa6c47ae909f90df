#!/usr/bin/env python3
"""Writes the GPU kit's gpu-report.md (on stdout) from the logs `gpu-kit.sh run` left.

    python3 gpu_kit_report.py --logs DIR --store RUNS.sqlite --seconds N

DIR holds env.log, tests.log, sanitizer.log, train.log and bench.log; the store holds the
training runs, named cnn_cuda_float32, cnn_cpu, lstm_cuda_float16, ...
"""
import argparse
import json
import os
import re
import sqlite3


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def sections(text):
    """'===== NAME' ... '===== NAME exit RC' blocks: [(name, lines, rc or None)]."""
    out, name, lines = [], None, []
    for line in text.splitlines():
        m = re.match(r"===== (\S+) exit (\d+)", line)
        if m and m.group(1) == name:
            out.append((name, lines, int(m.group(2))))
            name, lines = None, []
        elif line.startswith("===== "):
            if name:
                out.append((name, lines, None))
            name, lines = line[6:].split()[0], []
        else:
            lines.append(line)
    if name:
        out.append((name, lines, None))
    return out


def cell(text):
    return text.replace("|", "\\|").strip()[:300]


def tests_table(text):
    rows = ["| test | result | device | totals | first failure |", "|---|---|---|---|---|"]
    passed = 0
    blocks = sections(text)
    for name, lines, rc in blocks:
        device = next((l.split("CUDA:", 1)[1] for l in lines if "CUDA:" in l and "QINFO" in l), "")
        totals = next((l.replace("Totals:", "").split(", 0 blacklisted")[0] for l in lines
                       if l.startswith("Totals:")), "")
        first = ""
        for i, l in enumerate(lines):
            if l.startswith("FAIL!"):
                loc = lines[i + 1].strip() if i + 1 < len(lines) else ""
                first = l + (" " + loc if loc.startswith("Loc:") else "")
                break
        if rc == 0:
            result = "passed"
            passed += 1
        elif rc == 124:
            result = "**timed out** (150 s)"
        elif rc == 125:
            result = "skipped (the kit's time budget was spent)"
        else:
            result = f"**failed** (exit {rc})"
            if not first:
                first = " / ".join(l for l in lines[-3:] if l.strip())
        rows.append(f"| {name} | {result} | {cell('CUDA:' + device) if device else ''} | "
                    f"{cell(totals)} | {cell(first)} |")
    return passed, len(blocks), "\n".join(rows)


def sanitizer_summary(text):
    if not text or text.splitlines()[0].startswith("compute-sanitizer:"):
        return "compute-sanitizer: not run (" + (text.strip() or "no log") + ")"
    summary = re.findall(r"ERROR SUMMARY: .*", text)
    exit_line = re.findall(r"===== exit (\d+)", text)
    first = next((l for l in text.splitlines()
                  if ("Invalid" in l or "Error" in l) and "SUMMARY" not in l), "")
    said = [l for l in text.splitlines() if l.strip() and not l.startswith("=====")]
    parts = [summary[-1] if summary else "no ERROR SUMMARY line; it said: `" +
             cell(said[-1] if said else "nothing") + "`"]
    if exit_line:
        parts.append(f"exit {exit_line[-1]}")
    if first:
        parts.append("first: `" + cell(first) + "`")
    return "compute-sanitizer memcheck on test_backend_ops: " + "; ".join(parts)


def runs(store):
    if not os.path.exists(store):
        return {}
    db = sqlite3.connect(store)
    found = {}
    for run_id, name, status, device, error in db.execute(
            "SELECT id, name, status, device, error FROM runs ORDER BY id"):
        losses = [v for (v,) in db.execute(
            "SELECT value FROM metrics WHERE run = ? AND key = 'loss' ORDER BY step", (run_id,))]
        last = db.execute("SELECT MAX(step) FROM metrics WHERE run = ? AND key LIKE 'val_%'",
                          (run_id,)).fetchone()[0]
        val = dict(db.execute("SELECT key, value FROM metrics WHERE run = ? AND step = ? AND "
                              "key LIKE 'val_%'", (run_id, last))) if last is not None else {}
        found[name] = {"status": status, "device": device, "error": error, "losses": losses,
                       "val": val, "steps": len(losses)}
    return found


def relative(a, b):
    return abs(a - b) / max(abs(b), 1e-30)


def training_table(store, train_log):
    r = runs(store)
    seconds = {}
    logged = {name: lines for name, lines, _ in sections(train_log)}
    for line in train_log.splitlines():
        m = re.match(r"===== (\S+) exit (\d+) after (\d+) s", line)
        if m:
            seconds[m.group(1)] = (int(m.group(2)), int(m.group(3)))
        m = re.match(r"===== (\S+) skipped: (.*)", line)
        if m:
            seconds[m.group(1)] = (None, m.group(2))
    rows = ["| run | status | steps | s | final val_loss | final val_accuracy | "
            "first 10 losses vs CPU (max rel.) | val_accuracy vs CPU |", "|---|---|---|---|---|---|---|---|"]
    verdicts = []
    for model in ("cnn", "lstm"):
        cpu = r.get(f"{model}_cpu")
        for label in (f"{model}_cuda_float32", f"{model}_cuda_float16", f"{model}_cpu"):
            run = r.get(label)
            rc, s = seconds.get(label, (None, ""))
            if not run:
                said = [l for l in logged.get(label, []) if l.strip()]
                why = cell(said[-1]) if said else ""
                rows.append(f"| {label} | not recorded (exit {rc}; {s}) {why} | | | | | | |")
                verdicts.append(f"{label}: not recorded")
                continue
            acc = run["val"].get("val_accuracy")
            vloss = run["val"].get("val_loss")
            cmp_loss = cmp_acc = ""
            if cpu and label != f"{model}_cpu" and run["losses"] and cpu["losses"]:
                n = min(10, len(run["losses"]), len(cpu["losses"]))
                worst = max(relative(run["losses"][i], cpu["losses"][i]) for i in range(n)
                            if run["losses"][i] is not None and cpu["losses"][i] is not None)
                cmp_loss = f"{worst:.2e}"
                limit = 1e-3 if label.endswith("float32") else 5e-2
                ok = worst <= limit
                verdicts.append(f"{label}: first {n} losses within {limit:g} of the CPU's: "
                                f"{'yes' if ok else 'NO'} ({worst:.2e})")
                cpu_acc = cpu["val"].get("val_accuracy")
                if acc is not None and cpu_acc is not None:
                    cmp_acc = f"{(acc - cpu_acc) * 100:+.2f} points"
                    verdicts.append(f"{label}: final val_accuracy within 2 points of the CPU's: "
                                    f"{'yes' if abs(acc - cpu_acc) <= 0.02 else 'NO'} "
                                    f"({acc:.4f} vs {cpu_acc:.4f})")
            status = run["status"] + (f": {cell(run['error'])}" if run["error"] else "")
            rows.append(f"| {label} | {status} | {run['steps']} | {s} | "
                        f"{'' if vloss is None else f'{vloss:.4f}'} | "
                        f"{'' if acc is None else f'{acc:.4f}'} | {cmp_loss} | {cmp_acc} |")
    return "\n".join(rows), verdicts


def bench_tables(text):
    ours, theirs, other = {}, {}, []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            if line.startswith("GPU:"):
                other.append(line)
            continue
        try:
            j = json.loads(line)
        except ValueError:
            continue
        if "framework" in j:
            theirs[(j["model"], j["batch"], j["precision"])] = j["samples_per_s"]
        elif str(j.get("workload", "")).startswith("gpu_train_step_") and "batch" in j:
            model = j["workload"].rsplit("_", 1)[1]
            ours[(model, j["batch"], "float32")] = j.get("cuda")
            ours[(model, j["batch"], "float16")] = j.get("cuda_float16")
            if "cpu" in j:
                other.append(f"{j['workload']} batch {j['batch']}: CPU {j['cpu']} samples/s "
                             f"({j.get('threads')} threads), cuda/CPU {j.get('cuda_over_cpu')}")
        else:
            other.append(json.dumps(j))
    rows = ["| model | batch | precision | Myelin samples/s | PyTorch samples/s | Myelin / PyTorch |",
            "|---|---|---|---|---|---|"]
    for key in sorted(set(ours) | set(theirs)):
        a, b = ours.get(key), theirs.get(key)
        ratio = f"{a / b:.2f}x" if a and b else ""
        rows.append(f"| {key[0]} | {key[1]} | {key[2]} | {a or ''} | {b or ''} | {ratio} |")
    return "\n".join(rows), other


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logs", required=True)
    ap.add_argument("--store", required=True)
    ap.add_argument("--seconds", default="?")
    a = ap.parse_args()
    env = read(os.path.join(a.logs, "env.log"))
    manifest = dict(l.split("=", 1) for l in env.split("## machine")[0].splitlines() if "=" in l)
    gpu = re.search(r"cuda:0\s+(.*)", env)
    date = re.search(r"## machine\n(.*)", env)
    passed, total, tests = tests_table(read(os.path.join(a.logs, "tests.log")))
    training, verdicts = training_table(a.store, read(os.path.join(a.logs, "train.log")))
    bench, other = bench_tables(read(os.path.join(a.logs, "bench.log")))
    print(f"# GPU kit report\n")
    print(f"- run: {date.group(1) if date else '?'}, {a.seconds} s")
    print(f"- kit: {manifest.get('commit', '?')}, built {manifest.get('built', '?')}")
    print(f"- device: {gpu.group(1) if gpu else 'no usable CUDA device (env.log says why)'}")
    print(f"- tests: {passed} of {total} passed\n")
    print("## Test legs\n")
    print(tests + "\n")
    print("## compute-sanitizer\n")
    print(sanitizer_summary(read(os.path.join(a.logs, "sanitizer.log"))) + "\n")
    print("## Training on cuda:0 against the CPU\n")
    print("fashion_cnn: 2 epochs; word_language_lstm: 200 steps. float16 is autocast with loss "
          "scaling. The first losses are compared step by step (float32 summation order differs "
          "between devices, so later steps drift); the final validation accuracy within 2 points.\n")
    print(training + "\n")
    for v in verdicts:
        print(f"- {v}")
    print("\n## Bench: Myelin's trainer against PyTorch's plain loop on the same GPU\n")
    print("Myelin: `myelin_bench_gpu` (the product's trainer, data from its loader, the loss read "
          "each step); PyTorch: `bench/torch_gpu_step.py` (data on the device, no loss read). "
          "samples/s over up to one epoch's full batches after 5 warm-up steps; TF32 off in both.\n")
    print(bench + "\n")
    for o in other:
        print(f"- `{o}`")


if __name__ == "__main__":
    main()
