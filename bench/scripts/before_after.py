"""Two builds' sweeps side by side: for each queue count, the median and the
run-to-run range (min-max) of each figure before and after, the ratio of the
medians, and whether the ranges overlap (within variation).

    python3 bench/scripts/before_after.py BEFORE.jsonl AFTER.jsonl

Lines are grouped by (queues, driver, batching); error lines are left out.
Made by the before-after stage of bench/scripts/h200.sh.
"""
import json
import statistics
import sys

FIGURES = [  # (field, label)
    ("small_commands_per_second", "one thread, M/s"),
    ("threaded_commands_per_second", "16 threads, M/s"),
    ("idle_latency_p95_us", "idle p95, us"),
    ("loaded_latency_p95_us", "loaded p95, us"),
]


def runs(path):
    groups = {}
    with open(path) as lines:
        for text in lines:
            if not text.strip():
                continue
            line = json.loads(text)
            if "error" in line or "queues" not in line:
                continue
            key = (line["queues"], line.get("driver"), line.get("batching"))
            groups.setdefault(key, []).append(line)
    return groups


def scale(field, value):
    return value / 1e6 if field.endswith("per_second") else value


def main(before_path, after_path):
    before, after = runs(before_path), runs(after_path)
    print(f"# before: {before_path}\n# after:  {after_path}")
    print("# median (min-max) over the runs; ratio = after / before median; "
          "~ = the ranges overlap")
    for key in sorted(set(before) & set(after)):
        queues, driver, batching = key
        print(f"\n{queues} queues, {driver}, batching {'on' if batching else 'off'}: "
              f"{len(before[key])} runs before, {len(after[key])} after")
        for field, label in FIGURES:
            b = [scale(field, line[field]) for line in before[key] if field in line]
            a = [scale(field, line[field]) for line in after[key] if field in line]
            if not a or not b:
                continue
            overlap = min(a) <= max(b) and min(b) <= max(a)
            print(f"  {label:18} {statistics.median(b):9.3f} ({min(b):.3f}-{max(b):.3f})"
                  f"  {statistics.median(a):9.3f} ({min(a):.3f}-{max(a):.3f})"
                  f"  {statistics.median(a) / statistics.median(b):5.2f}"
                  f" {'~' if overlap else ''}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
