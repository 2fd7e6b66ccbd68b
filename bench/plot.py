#!/usr/bin/env python3
"""Plot throughput by block size as an SVG line chart (no plotting library needed).

Reads lines "BLOCK plain_read lukskit_read plain_write lukskit_write" (MiB/s) on stdin and
writes the SVG to stdout. Used by bench/block.sh.
"""
import sys

rows = [line.split() for line in sys.stdin if line.strip()]
labels = [r[0] for r in rows]
series = [
    ("plain read", "#1f77b4", "", [float(r[1]) for r in rows]),
    ("lukskit read", "#1f77b4", "6,4", [float(r[2]) for r in rows]),
    ("plain write", "#d62728", "", [float(r[3]) for r in rows]),
    ("lukskit write", "#d62728", "6,4", [float(r[4]) for r in rows]),
]
W, H, L, R, T, B = 640, 400, 70, 160, 40, 50
top = max(max(s[3]) for s in series) * 1.1 or 1.0
px = lambda i: L + (W - L - R) * (i / max(1, len(labels) - 1))
py = lambda v: H - B - (H - T - B) * (v / top)
out = [
    f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
    'font-family="sans-serif" font-size="12">',
    f'<rect width="{W}" height="{H}" fill="white"/>',
    f'<text x="{W / 2 - 60}" y="20" font-size="14">Sequential throughput by block size</text>',
    f'<line x1="{L}" y1="{H - B}" x2="{W - R}" y2="{H - B}" stroke="black"/>',
    f'<line x1="{L}" y1="{T}" x2="{L}" y2="{H - B}" stroke="black"/>',
    f'<text x="10" y="{T - 10}">MiB/s</text>',
    f'<text x="{(W - R) / 2}" y="{H - 10}">block size</text>',
]
for k in range(6):
    v = top * k / 5
    out.append(f'<text x="{L - 8}" y="{py(v) + 4:.1f}" text-anchor="end">{v:.0f}</text>')
    out.append(
        f'<line x1="{L}" y1="{py(v):.1f}" x2="{W - R}" y2="{py(v):.1f}" stroke="#ddd"/>'
    )
for i, lab in enumerate(labels):
    out.append(f'<text x="{px(i):.1f}" y="{H - B + 18}" text-anchor="middle">{lab}</text>')
for n, (name, color, dash, vals) in enumerate(series):
    pts = " ".join(f"{px(i):.1f},{py(v):.1f}" for i, v in enumerate(vals))
    d = f' stroke-dasharray="{dash}"' if dash else ""
    out.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2"{d}/>')
    y = T + 20 * n
    out.append(
        f'<line x1="{W - R + 10}" y1="{y}" x2="{W - R + 40}" y2="{y}" stroke="{color}" '
        f'stroke-width="2"{d}/>'
    )
    out.append(f'<text x="{W - R + 46}" y="{y + 4}">{name}</text>')
out.append("</svg>")
print("\n".join(out))
