"""Two builds' sweeps side by side: for each group of runs (target, backend,
driver, sizes, batching; devices are not told apart) and queue count, every
table column's median and run-to-run range before and after, and the ratio
of the medians, marked "~" where the ranges overlap (within variation), as
``hrx-bench compare`` marks it.

    python3 bench/scripts/before_after.py BEFORE.jsonl AFTER.jsonl

Made by the before-after stage of bench/scripts/h200.sh; imports the
installed hrx.
"""
import dataclasses
import sys

from hrx.bench.compare import ratio_cell
from hrx.bench.lines import read_lines
from hrx.bench.table import COLUMNS, format_range, format_value, group_lines, markdown_table


def groups(path):
    """The file's groups, keyed without the device (lines recorded before
    runs named their device have none)."""
    lines, _ = read_lines([path])
    return {dataclasses.replace(g.key, device=None, concurrent_devices=None): g
            for g in group_lines(lines)}


def cell(row, column):
    return f"{format_value(column, row.median(column.key))} ({format_range(column, row)})"


def main(before_path, after_path):
    before, after = groups(before_path), groups(after_path)
    print(f"before: {before_path}\nafter: {after_path}\n"
          "each cell: median (min–max) over the runs; ratio: after ÷ before median, "
          "~ where the ranges overlap")
    for key in sorted(set(before) & set(after)):
        old, new = before[key], after[key]
        print(f"\n## {new.label}: {old.rows[0].runs if old.rows else 0} runs before, "
              f"{new.rows[0].runs if new.rows else 0} after, per queue count\n")
        header = ["Queues", "Column", "Before", "After", "Ratio"]
        rows = []
        for queues in sorted({r.queues for r in old.rows} & {r.queues for r in new.rows}):
            row_old = next(r for r in old.rows if r.queues == queues)
            row_new = next(r for r in new.rows if r.queues == queues)
            for column in COLUMNS:
                rows.append([str(queues), new.header(column, short=True),
                             cell(row_old, column), cell(row_new, column),
                             ratio_cell(new, old, queues, column.key)])
        print(markdown_table(header, rows))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
