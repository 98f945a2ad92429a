"""The demo job: reads the sales CSV from its read-only volume, writes a
Markdown report and a PNG bar chart into /workspace (the artifact), and
returns a summary.  Standard library only, as a job on a bare image would."""
import csv
import json
import struct
import sys
import zlib
from collections import defaultdict

totals = defaultdict(int)
with open("/mnt/inputs/sales.csv", newline="") as f:
    for row in csv.DictReader(f):
        totals[row["region"]] += int(row["revenue"])

regions = sorted(totals)
best = max(regions, key=totals.get)
with open("report.md", "w") as f:
    f.write("# Revenue by region, Q3 2026\n\n| region | revenue |\n|---|---:|\n")
    for r in regions:
        f.write(f"| {r} | {totals[r]:,} |\n")
    f.write(f"\nBest region: **{best}**.\n")


def png(width, height, pixel):
    """A truecolour PNG from pixel(x, y) -> (r, g, b)."""
    raw = b"".join(b"\0" + b"".join(bytes(pixel(x, y)) for x in range(width)) for y in range(height))
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


W, H, bar = 240, 160, 60
top = max(totals.values())
colours = [(66, 133, 244), (219, 68, 55), (15, 157, 88)]
def pixel(x, y):
    i = x // (W // len(regions))
    inside = x % (W // len(regions)) in range(10, 10 + bar)
    height = int(totals[regions[i]] / top * (H - 20)) if i < len(regions) else 0
    return colours[i % 3] if inside and y >= H - height else (255, 255, 255)

with open("chart.png", "wb") as f:
    f.write(png(W, H, pixel))

print(f"analyzed {sum(totals.values()):,} of revenue in {len(regions)} regions; best: {best}")
print(json.dumps({"best_region": best, "totals": totals}), file=sys.stderr)
