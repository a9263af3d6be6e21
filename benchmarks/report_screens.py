"""How the report reads in a browser: its length in screens, sideways scrolling, and how far figures are shrunk.

Issue 22's budget for the demo report: at most 25 screens of 1280 x 900, no table wider than the page, figure text
at least 10 px at 100 % zoom. Opens the report in headless Chromium (`apt-get install chromium`), with a probe
script appended to a temporary copy, and prints:
- the page height in screens, and the height of each section (id, heading, screens);
- every table wrapper or figure that scrolls sideways or overflows (its section and width);
- every figure's rendered / natural width and the smallest figure text in px that implies (the figures' smallest
  font is 8 pt at xling.report.figures.DPI dots per inch).
Optionally saves screenshots of the first screens (`--screens N`, to read before calling a report change done).
Not a test: a script that prints figures.

    python benchmarks/report_screens.py results/demo/report.html --screens 3 --out /tmp/screens
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from xling.report.figures import DPI  # noqa: E402

SMALLEST_FONT_PT = 8  # the smallest fontsize the figure code sets (legend, chance notes)
PROBE = """<script>
window.addEventListener('load', () => {
  const out = {height: document.documentElement.scrollHeight, width: document.documentElement.scrollWidth,
               sections: [], wide: [], images: []};
  const sectionOf = el => { const s = el.closest('section'); return s ? (s.id || '?') : '-'; };
  document.querySelectorAll('section[id]').forEach(s => {
    const h = s.querySelector('h2, h3');
    out.sections.push({id: s.id, title: h ? h.textContent.trim() : '', top: s.offsetTop, height: s.offsetHeight});
  });
  document.querySelectorAll('.table-wrap, table, figure, img, pre').forEach(el => {
    if (el.scrollWidth > el.clientWidth + 1 || el.getBoundingClientRect().right > window.innerWidth + 1)
      out.wide.push({tag: el.tagName, section: sectionOf(el), width: el.scrollWidth, shown: el.clientWidth});
  });
  document.querySelectorAll('img').forEach(img => out.images.push(
    {section: sectionOf(img), alt: img.alt, natural: img.naturalWidth, shown: img.clientWidth}));
  const pre = document.createElement('pre');
  pre.id = 'report-probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    sys.exit("no Chromium on PATH: apt-get install chromium")


def browse(html: Path, width: int, height: int, *args: str) -> str:
    return subprocess.run(
        [
            chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--window-size={width},{height}",
            "--virtual-time-budget=5000",
            *args,
            html.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    ).stdout


def measure(report: Path, width: int, height: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "report.html"
        probe.write_text(report.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
        dom = browse(probe, width, height, "--dump-dom")
    found = re.search(r'<pre id="report-probe">(.*?)</pre>', dom, re.S)
    if not found:
        sys.exit(f"{report}: the probe did not run (is it an HTML page with a </body>?)")
    return json.loads(found[1].replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("report", type=Path)
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=900)
    parser.add_argument("--screens", type=int, default=0, help="screenshots of this many first screens")
    parser.add_argument("--out", type=Path, default=Path("report-screens"))
    args = parser.parse_args(argv)
    found = measure(args.report, args.width, args.height)
    screens = found["height"] / args.height
    print(
        f"{args.report}: {found['height']} px high = {screens:.1f} screens of {args.width} x {args.height}; "
        f"page width {found['width']} px"
    )
    for section in found["sections"]:
        print(
            f"  {section['id']:<28} {section['height'] / args.height:5.1f} screens  "
            f"from screen {section['top'] / args.height + 1:5.1f}  {section['title'][:60]}"
        )
    print(f"sideways: {len(found['wide'])} element(s)")
    for el in found["wide"]:
        print(f"  {el['tag']:<6} in {el['section']:<24} {el['width']} px in {el['shown']} px")
    smallest = SMALLEST_FONT_PT * DPI / 72
    print(f"figures: {len(found['images'])} (smallest text {smallest:.1f} px at full size)")
    for img in found["images"]:
        scale = img["shown"] / img["natural"] if img["natural"] else float("nan")
        mark = "  < 10 px" if smallest * scale < 10 else ""
        print(
            f"  {img['section']:<24} {img['natural']:>5} -> {img['shown']:>5} px  x{scale:.2f}  "
            f"text {smallest * scale:4.1f} px{mark}  {img['alt'][:50]}"
        )
    if args.screens:
        args.out.mkdir(parents=True, exist_ok=True)
        shot = args.out / "report-top.png"
        browse(args.report, args.width, args.height * args.screens, f"--screenshot={shot}")
        print(f"screenshot of the first {args.screens} screen(s): {shot}")


if __name__ == "__main__":
    main()
