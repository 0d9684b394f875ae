#!/usr/bin/env python3
"""Parses SVG files with xml.etree (so a malformed file fails here) and
prints what the doc tests check, one line each:

    FILE: svg <width> x <height>, <n> elements
    polyline class=<c> run=<r> points=<n>     (utils/plot_loss.py's curves)
    nonfinite run=<r>                         (its non-finite loss markers)
    legend <text>
    node <texts> fill=<colour>                (Graphviz's nodes, with --nodes)

    svg_summary.py [--nodes] FILE.svg...
"""
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"


def main():
    args = sys.argv[1:]
    nodes = "--nodes" in args
    files = [a for a in args if a != "--nodes"]
    if not files:
        sys.exit("usage: svg_summary.py [--nodes] FILE.svg...")
    for path in files:
        root = ET.parse(path).getroot()
        if root.tag != NS + "svg":
            sys.exit(f"{path}: root element {root.tag}, not svg")
        print(f"{path}: svg {root.get('width')} x {root.get('height')}, "
              f"{sum(1 for _ in root.iter())} elements")
        for e in root.iter(NS + "polyline"):
            if e.get("class") is None:
                continue
            print(f"polyline class={e.get('class')} run={e.get('data-run')} "
                  f"points={len(e.get('points').split())}")
        for e in root.iter(NS + "path"):
            if e.get("class") == "nonfinite":
                print(f"nonfinite run={e.get('data-run')}")
        for e in root.iter(NS + "text"):
            if e.get("class") == "legend":
                print(f"legend {e.text}")
        if nodes:
            for g in root.iter(NS + "g"):
                if g.get("class") != "node":
                    continue
                texts = " ".join(t.text or "" for t in g.iter(NS + "text"))
                shape = next(e for e in g.iter() if e.tag in (
                    NS + "polygon", NS + "ellipse", NS + "path"))
                fill = shape.get("fill")
                print(f"node {texts} fill={fill}")


if __name__ == "__main__":
    main()
