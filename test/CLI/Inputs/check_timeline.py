"""Checks a `kiln compile --memory-timeline` SVG against `--stats` figures:

  python3 check_timeline.py TIMELINE.svg STATS.json ENTRY

The SVG must be well-formed XML with the three transient bands and the
persistent base; the figures line must give --stats's peak_bytes, arena and
the entry's live lower bound; the peak label must give persistent bytes +
the entry's live lower bound; and where a budget line is drawn above the
peak, every band must lie below it (SVG y grows downwards). Prints each
violation and exits 1.
"""
import json
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"


def format_bytes(n):
    """kiln::formatByteSize."""
    if -1024 < n < 1024:
        return f"{n} B"
    value, units = n / 1024, ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
    unit = 0
    while unit + 1 < len(units) and abs(value) >= 1024:
        value /= 1024
        unit += 1
    return f"{value:.2f} {units[unit]}"


def main():
    svg_path, stats_path, entry = sys.argv[1:4]
    root = ET.parse(svg_path).getroot()
    stats = json.load(open(stats_path))
    errors = []

    def check(condition, message):
        if not condition:
            errors.append(message)

    def by_class(name):
        return [e for e in root.iter() if e.get("class") == name]

    def text_of(name):
        found = by_class(name)
        return "".join(found[0].itertext()) if found else ""

    for kind in ("activation", "gradient", "workspace"):
        check(len(by_class("band " + kind)) == 1, f"no single {kind} band")
    check(len(by_class("band persistent")) == 1, "no persistent band")

    peak, arena = stats["peak_bytes"], stats["arena_bytes"]
    bound = stats["entries"][entry]["live_lower_bound_bytes"]
    persistent = peak - arena
    figures = text_of("figures")
    for label, value in (("peak_bytes", peak), ("persistent", persistent),
                         ("arena", arena), ("live lower bound", bound)):
        check(f"{label} {format_bytes(value)}" in figures,
              f"figures '{figures}' lack {label} {format_bytes(value)}")
    check(f"@{entry}" in text_of("title"), f"title does not name @{entry}")
    peak_label = text_of("peak")
    check(f"peak: {format_bytes(persistent + bound)} live" in peak_label,
          f"peak label '{peak_label}' is not persistent + live lower bound")

    budget = by_class("budget")
    lines = [e for g in budget for e in g.iter(NS + "line")]
    if lines:
        budget_y = float(lines[0].get("y1"))
        for kind in ("activation", "gradient", "workspace"):
            for polygon in by_class("band " + kind):
                ys = [float(p.split(",")[1])
                      for p in polygon.get("points").split()]
                check(min(ys) > budget_y,
                      f"the {kind} band reaches above the budget line")
    for error in errors:
        print("error:", error)
    if errors:
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
