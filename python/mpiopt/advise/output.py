"""The advice as people and scripts read it. The report is a list of sections (a title, a table,
lines of text) rendered three ways from one description: rich tables on the terminal, Markdown,
and HTML with the plots; the JSON is the data the sections were made from."""
from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from pathlib import Path

from ..console import console as report_console


@dataclass
class Section:
    title: str
    headers: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)       # text after the table
    image: str | None = None                              # a PNG beside the report (HTML, Markdown)


def seconds(x: float | None) -> str:
    if x is None:
        return "-"
    if x >= 1:
        return f"{x:.3f} s"
    if x >= 1e-3:
        return f"{x * 1e3:.3g} ms"
    return f"{x * 1e6:.3g} µs"


def nbytes(x: float) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if x >= size:
            return f"{x / size:.3g} {unit}"
    return f"{x:.0f} B"


def print_terminal(sections: list[Section]) -> None:
    from rich.table import Table
    from rich.text import Text
    con = report_console()
    for s in sections:
        if s.rows:
            table = Table(title=s.title, title_justify="left")
            for i, h in enumerate(s.headers):
                table.add_column(h, justify="left" if i == 0 or h in ("verdict", "output", "why",
                                                                      "algorithms", "where",
                                                                      "function") else "right")
            for row in s.rows:
                # Text, not rich markup: a C++ site's "[clone .isra.0]" would be taken for a style
                table.add_row(*(Text(c) for c in row))
            con.print(table)
        elif s.lines:
            con.print(s.title, style="bold", markup=False)
        for line in s.lines:
            con.print(f"  {line}", markup=False, highlight=False)


def _md_cell(text: str) -> str:
    # `<` escaped: a C++ name's `std::vector<int>` would otherwise be read as an HTML tag and vanish
    return text.replace("|", "\\|").replace("<", "\\<").replace("\n", " ")


def markdown(title: str, sections: list[Section]) -> str:
    out = [f"# {title}", ""]
    for s in sections:
        out += [f"## {s.title}", ""]
        if s.rows:
            out.append("| " + " | ".join(_md_cell(h) for h in s.headers) + " |")
            out.append("|" + "|".join("---" for _ in s.headers) + "|")
            out += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in s.rows]
            out.append("")
        out += [f"- {line}" for line in s.lines]
        if s.lines:
            out.append("")
        if s.image:
            out += [f"![{s.title}]({s.image})", ""]
    return "\n".join(out)


def html_page(title: str, sections: list[Section]) -> str:
    e = html.escape
    body = [f"<h1>{e(title)}</h1>"]
    for s in sections:
        body.append(f"<h2>{e(s.title)}</h2>")
        if s.rows:
            body.append("<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in s.headers) + "</tr>")
            body += ["<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in s.rows]
            body.append("</table>")
        if s.lines:
            body.append("<ul>" + "".join(f"<li>{e(line)}</li>" for line in s.lines) + "</ul>")
        if s.image:
            body.append(f'<p><img src="{e(s.image)}" alt="{e(s.title)}"></p>')
    style = ("body{font-family:sans-serif;max-width:70em;margin:2em auto}table{border-collapse:"
             "collapse}td,th{border:1px solid #ccc;padding:.2em .6em}td{text-align:right}"
             "td:first-child{text-align:left}img{max-width:100%}")
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{e(title)}</title>"
            f"<style>{style}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def write_files(out_dir: Path, title: str, sections: list[Section], data: dict) -> dict:
    files = {"markdown": out_dir / "report.md", "html": out_dir / "report.html",
             "json": out_dir / "report.json"}
    files["markdown"].write_text(markdown(title, sections))
    files["html"].write_text(html_page(title, sections))
    files["json"].write_text(json.dumps(data, indent=1, default=str) + "\n")
    return {k: str(v) for k, v in files.items()}


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _save(fig, ax, path: Path) -> Path:
    import matplotlib.pyplot as plt
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_steps(path: Path, steps: list[dict]) -> Path | None:
    """Init..Finalize time and MPI time of each measured step: the median, the range as bars."""
    measured = [s for s in steps if s.get("wall")]
    if not measured:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.5))
    x = range(len(measured))
    for offset, key, label in ((-0.2, "wall", "Init..Finalize (slowest rank)"),
                               (0.2, "mpi", "MPI time (average rank)")):
        med = [s[key]["median"] if s.get(key) else 0 for s in measured]
        err = [[m - s[key]["min"] if s.get(key) else 0 for m, s in zip(med, measured)],
               [s[key]["max"] - m if s.get(key) else 0 for m, s in zip(med, measured)]]
        ax.bar([i + offset for i in x], med, 0.4, yerr=err, capsize=3, label=label)
    ax.set_xticks(list(x), [s["title"] for s in measured])
    ax.set_ylabel("seconds (median, min-max)")
    return _save(fig, ax, path)


def plot_calls(path: Path, before: dict, after: dict, after_title: str) -> Path | None:
    """MPI time per call kind, the baseline against the last step."""
    names = sorted(set(before) | set(after), key=lambda n: -max(before.get(n, 0), after.get(n, 0)))[:10]
    if not names:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(names) + 1.2))
    y = range(len(names))
    ax.barh([i - 0.2 for i in y], [before.get(n, 0) for n in names], 0.4, label="baseline")
    ax.barh([i + 0.2 for i in y], [after.get(n, 0) for n in names], 0.4, label=after_title)
    ax.set_yticks(list(y), names)
    ax.invert_yaxis()
    ax.set_xlabel("seconds a rank (average over ranks)")
    return _save(fig, ax, path)


def plot_ranks(path: Path, per_rank: dict[str, dict]) -> Path | None:
    """Compute and MPI time of every rank, for the baseline and the last step side by side."""
    if not per_rank:
        return None
    plt = _pyplot()
    from matplotlib.ticker import MaxNLocator
    fig, axes = plt.subplots(1, len(per_rank), figsize=(4 * len(per_rank), 3.2), sharey=True,
                             squeeze=False)
    for ax, (title, values) in zip(axes[0], per_rank.items()):
        ranks = range(len(values["mpi_time"]))
        ax.bar(ranks, values["compute_time"], label="compute")
        ax.bar(ranks, values["mpi_time"], bottom=values["compute_time"], label="MPI")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("rank")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0][0].set_ylabel("seconds (Init..Finalize)")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
